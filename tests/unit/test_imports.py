"""No module grows past what a person reads in one sitting. (Who may import whom is the contracts'
of pyproject.toml, checked in test_architecture.py.)"""

from __future__ import annotations

from ..conftest import ROOT

MAX_LINES = 450


def test_no_module_is_over_the_limit() -> None:
    """The C executor's units and headers (bench_dsl/native/src) count as modules do."""
    files = [*(ROOT / "bench_dsl").glob("**/*.py"), *(ROOT / "bench_dsl").glob("**/*.[ch]"),
             *(ROOT / "tui").glob("*.py"), *(ROOT / "grammar").glob("*.py")]
    sizes = {p.relative_to(ROOT).as_posix(): len(p.read_text().splitlines()) for p in files
             if not p.relative_to(ROOT).as_posix().startswith(("bench_dsl/tui/", "bench_dsl/grammar/"))}
    assert "bench_dsl/native/src/module.c" in sizes  # the C executor's units are counted
    over = {name: n for name, n in sizes.items() if n > MAX_LINES}
    assert not over, f"over {MAX_LINES} lines: {over}"
