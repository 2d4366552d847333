"""The floors of the code hold. Two views: the import graph, checked by import-linter against the
contracts in pyproject.toml ([tool.importlinter]: each floor imports only the floors below it, and
what must never reach a driver or the screen); and what a command really loads, seen from a fresh
interpreter (a lazy import the graph cannot tell from an eager one)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import ROOT

LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"
PACKAGES = sorted(p.parent.relative_to(ROOT / "bench_dsl").as_posix() for p in (ROOT / "bench_dsl").glob("*/__init__.py"))


def lint_imports(cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(LINT_IMPORTS), "--no-cache"], cwd=cwd, capture_output=True, text=True, timeout=120)


def test_the_floors_hold() -> None:
    r = lint_imports(ROOT)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "0 broken" in r.stdout


def test_every_package_is_a_floor_of_the_contract() -> None:
    """A package added without a place in the layers would be checked by nothing."""
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    layers = next(c for c in config["contracts"] if c["type"] == "layers")["layers"]
    named = {name.strip().removeprefix("bench_dsl.") for layer in layers for name in layer.split("|")}
    assert set(PACKAGES) - {"grammar"} == named, "pyproject.toml's layers and bench_dsl/'s packages differ"


def test_an_upward_import_breaks_the_contract(tmp_path: Path) -> None:
    """The check can fail: the engine made to import the live screen is refused, with the line."""
    shutil.copytree(ROOT / "bench_dsl", tmp_path / "bench_dsl", symlinks=False,
                    ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    judge = tmp_path / "bench_dsl" / "engine" / "judge.py"
    judge.write_text(judge.read_text() + "\nfrom bench_dsl.tui import state  # noqa\n")
    r = lint_imports(tmp_path)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "bench_dsl.engine is not allowed to import bench_dsl.tui" in r.stdout
    assert "bench_dsl.engine.judge -> bench_dsl.tui.state" in r.stdout


def loaded_by(args: list[str], cwd: Path = ROOT, env: dict[str, str] | None = None) -> tuple[set[str], int]:
    """The top-level packages a `bench` command has imported by the time it exits, and its status."""
    probe = ("import atexit, runpy, sys\n"
             "out = sys.argv.pop(1)\n"
             "atexit.register(lambda: open(out, 'w').write('\\n'.join(sorted(sys.modules))))\n"
             "sys.argv[0] = 'bench'\n"
             "runpy.run_module('bench_dsl.cli', run_name='__main__')\n")
    listing = cwd / f".modules-{os.getpid()}"  # this process's: another may run the next parameter at once
    r = subprocess.run([sys.executable, "-c", probe, str(listing), *args], cwd=cwd, capture_output=True, text=True,
                       timeout=300, env=env)
    try:
        return {m.split(".")[0] for m in listing.read_text().split()}, r.returncode
    finally:
        listing.unlink(missing_ok=True)


HEAVY = {"asyncmy", "textual", "altair", "vl_convert"}


@pytest.mark.parametrize("args", [
    ["check", "examples/quickstart.bench"],
    ["check", "--plan", "examples/io-capacity-sweep.bench"],
    ["check", "--plan", "scenarios/tpcc-quick.bench"],
    ["--help"],
], ids=" ".join)
def test_checking_a_scenario_loads_no_driver_no_screen_no_plotting(args: list[str]) -> None:
    loaded, code = loaded_by(args)
    assert code == 0
    assert not loaded & HEAVY, sorted(loaded & HEAVY)


@pytest.mark.slow
def test_a_headless_run_loads_no_screen(tmp_path: Path, dsn_url: str) -> None:
    import os

    scenario = tmp_path / "s.bench"
    scenario.write_text('scenario "s" {\n  target env("BENCH_DSN")\n'
                        '  workload custom { transaction t { query "SELECT 1" } }\n  users 2\n  duration 1s\n}\n')
    loaded, code = loaded_by(["run", str(scenario), "--headless", "--json", str(tmp_path / "r.json")],
                             cwd=tmp_path, env={**os.environ, "BENCH_DSN": dsn_url})
    assert code == 0
    assert "asyncmy" in loaded and "textual" not in loaded and "altair" not in loaded


def test_only_the_judge_judges() -> None:
    """Conditions are judged in one place: no other module calls Condition.holds or Aggregate.value."""
    for f in sorted((ROOT / "bench_dsl").rglob("*.py")) + sorted((ROOT / "tui").glob("*.py")):
        if f.name in ("judge.py", "model.py", "metrics.py"):
            continue
        text = f.read_text()
        assert ".holds(" not in text and ".value(c.metric)" not in text, f.relative_to(ROOT)


def test_the_live_screen_and_the_sinks_take_only_events_from_the_engine() -> None:
    """They read what the engine says (bench_dsl.engine.events), never its workings."""
    import ast

    for f in [*sorted((ROOT / "tui").glob("*.py")), *sorted((ROOT / "bench_dsl" / "results").glob("sinks.py")),
              ROOT / "bench_dsl" / "results" / "document.py"]:
        for node in ast.walk(ast.parse(f.read_text())):
            names = ([node.module] if isinstance(node, ast.ImportFrom) and node.module else
                     [a.name for a in node.names] if isinstance(node, ast.Import) else [])
            for name in names:
                if name.startswith("bench_dsl.engine"):
                    assert name == "bench_dsl.engine.events" or (name == "bench_dsl.engine" and all(
                        a.name == "events" for a in node.names)), f"{f.relative_to(ROOT)} imports {name}"  # type: ignore[union-attr]
