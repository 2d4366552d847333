"""The floors of the code hold. Two views: the import graph, checked by import-linter against the
contracts in pyproject.toml ([tool.importlinter]: each floor imports only the floors below it, and
what must never reach a driver or the screen); and what a command really loads, seen from a fresh
interpreter (a lazy import the graph cannot tell from an eager one)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ..conftest import ROOT, loaded_by

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


HEAVY = {"asyncmy", "textual", "altair", "vl_convert", "ray"}


@pytest.mark.parametrize("args", [
    ["check", "examples/quickstart.bench"],
    ["check", "--plan", "examples/io-capacity-sweep.bench"],
    ["check", "--plan", "scenarios/tpcc-quick.bench"],
    ["check", "--plan", "examples/cluster.bench"],  # workers ray: checked without loading Ray
    ["--help"],
], ids=" ".join)
def test_checking_a_scenario_loads_no_driver_no_screen_no_plotting(args: list[str]) -> None:
    loaded, code = loaded_by(args)
    assert code == 0
    assert not loaded & HEAVY, sorted(loaded & HEAVY)


def test_only_the_judge_judges() -> None:
    """Conditions are judged in one place: no other module calls Condition.holds or Aggregate.value."""
    for f in sorted((ROOT / "bench_dsl").rglob("*.py")) + sorted((ROOT / "tui").glob("*.py")):
        if f.name in ("judge.py", "model.py", "metrics.py"):
            continue
        text = f.read_text()
        assert ".holds(" not in text and ".value(c.metric)" not in text, f.relative_to(ROOT)


def test_the_live_screen_and_the_sinks_take_only_events_from_the_engine() -> None:
    """They read what the engine says (bench_dsl.engine.events, and the stop reason, the saturation
    point and the plan its events carry: bench_dsl.engine.stopping, .saturation, .phases), and what the load profiles declare of their axes (their
    words: bench_dsl.engine.profiles.registry), never the engine's workings."""
    import ast

    for f in [*sorted((ROOT / "tui").glob("*.py")), *sorted((ROOT / "bench_dsl" / "results").glob("sinks.py")),
              ROOT / "bench_dsl" / "results" / "document.py"]:
        for node in ast.walk(ast.parse(f.read_text())):
            names = ([node.module] if isinstance(node, ast.ImportFrom) and node.module else
                     [a.name for a in node.names] if isinstance(node, ast.Import) else [])
            for name in names:
                if name.startswith("bench_dsl.engine"):
                    assert name in ("bench_dsl.engine.events", "bench_dsl.engine.stopping",
                                    "bench_dsl.engine.saturation", "bench_dsl.engine.phases",
                                    "bench_dsl.engine.profiles.registry") or (
                        name == "bench_dsl.engine" and all(
                        a.name == "events" for a in node.names)), f"{f.relative_to(ROOT)} imports {name}"  # type: ignore[union-attr]


def test_one_class_to_each_name() -> None:
    """Issue 40 §6: a name says one thing. A class or a type alias defined in two modules of the
    product makes a reader, and a `from x import Name`, take one for the other (two `Reading`
    classes, a power reading and a host reading, beside a counters pair of that name, once did; a
    `Span` was a place in a file and a stretch of time)."""
    defined: dict[str, list[str]] = {}
    alias = re.compile(r"^([A-Z]\w*) = (?:tuple|dict|list|set|frozenset|Callable|Literal|Union)\[", re.MULTILINE)
    for path in sorted([*(ROOT / "bench_dsl").rglob("*.py"), *(ROOT / "tui").rglob("*.py")]):
        text = path.read_text(encoding="utf-8")
        for name in [*re.findall(r"^class (\w+)\b", text, re.MULTILINE), *alias.findall(text)]:
            defined.setdefault(name, []).append(path.relative_to(ROOT).as_posix())
    twice = {name: where for name, where in defined.items() if len(where) > 1}
    assert not twice, twice
