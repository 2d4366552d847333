"""The shape of the code, read from its source (nothing is imported): workloads do not reach into
the executor, and no module grows past what a person reads in one sitting."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from .conftest import ROOT

PACKAGE = ROOT / "bench_dsl"
WORKLOADS = sorted((PACKAGE / "workloads").glob("*.py"))

# A workload describes its transactions (bench_dsl/statements.py); the executor builds what it runs
# from that. These are the executor's and the engine's, never a workload's.
NOT_FOR_WORKLOADS = ("bench_dsl.executor", "bench_dsl._native", "bench_dsl.native", "bench_dsl.users",
                     "bench_dsl.fleet")

MAX_LINES = 450
OVER_THE_LIMIT = {  # file -> why it may be longer
    "_native.c": "the C executor: one extension module, one translation unit",
}


def _imported(source: str) -> set[str]:
    """Every module a source imports, by its full name (`from bench_dsl import rawexec` names
    bench_dsl.rawexec as well as bench_dsl)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module is not None:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


@pytest.mark.parametrize("path", WORKLOADS, ids=lambda p: p.name)
def test_workloads_do_not_import_the_executor(path: Path) -> None:
    reached = {name for name in _imported(path.read_text()) for banned in NOT_FOR_WORKLOADS
               if name == banned or name.startswith(banned + ".")}
    assert not reached, f"{path.name} imports {sorted(reached)}"


def test_the_import_check_sees_every_way_of_importing() -> None:
    source = "import bench_dsl.rawexec\nfrom bench_dsl import blocking\nfrom bench_dsl.users import UserPool\n"
    assert {"bench_dsl.rawexec", "bench_dsl.blocking", "bench_dsl.users"} <= _imported(source)


def test_no_module_is_over_the_limit() -> None:
    sizes = {p.name if p.parent == PACKAGE else str(p.relative_to(ROOT)): len(p.read_text().splitlines())
             for p in [*PACKAGE.rglob("*.py"), *PACKAGE.rglob("*.c"), *(ROOT / "tui").glob("*.py"),
                       *(ROOT / "grammar").glob("*.py")]}
    over = {name: n for name, n in sizes.items() if n > MAX_LINES and name not in OVER_THE_LIMIT}
    assert not over, f"over {MAX_LINES} lines: {over}"
    assert set(OVER_THE_LIMIT) <= set(sizes), "an exception for a file that is gone: remove it"


def test_no_relative_imports_hide_from_the_check() -> None:
    relative = [p.name for p in WORKLOADS
                if any(isinstance(n, ast.ImportFrom) and n.level > 0 for n in ast.walk(ast.parse(p.read_text())))]
    assert not relative, f"relative imports (the check reads absolute names): {relative}"
