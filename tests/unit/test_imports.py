"""No module grows past what a person reads in one sitting. (Who may import whom is the contracts'
of pyproject.toml, checked in test_architecture.py.)"""

from __future__ import annotations

from ..conftest import ROOT

MAX_LINES = 450
OVER_THE_LIMIT = {  # file -> why it may be longer
    "bench_dsl/native/_native.c": "the C executor: one extension module, one translation unit",
}


def test_no_module_is_over_the_limit() -> None:
    files = [*(ROOT / "bench_dsl").glob("**/*.py"), *(ROOT / "bench_dsl").glob("**/*.c"), *(ROOT / "tui").glob("*.py"),
             *(ROOT / "grammar").glob("*.py")]
    sizes = {p.relative_to(ROOT).as_posix(): len(p.read_text().splitlines()) for p in files
             if not p.relative_to(ROOT).as_posix().startswith(("bench_dsl/tui/", "bench_dsl/grammar/"))}
    over = {name: n for name, n in sizes.items() if n > MAX_LINES and name not in OVER_THE_LIMIT}
    assert not over, f"over {MAX_LINES} lines: {over}"
    assert set(OVER_THE_LIMIT) <= set(sizes), "an exception for a file that is gone: remove it"
