"""The data flows one way: the engine says what happens in events, sinks and the live screen read
them. Read from the source with `ast` (not by importing, which would pass whenever a module happens
to be loaded already)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ENGINE = ("runner", "scheduler", "judge", "stage", "counters", "watch", "fleet", "worker", "users", "metrics",
          "planner", "results", "server", "workloads")
SINKS = ("sinks", "document")


def imports(path: Path) -> set[str]:
    """The bench_dsl modules a file imports (`from bench_dsl import x` counts as bench_dsl.x)."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "bench_dsl":
                out |= {f"bench_dsl.{a.name}" for a in node.names}
            elif node.module.startswith("bench_dsl"):
                out.add(node.module)
        elif isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.startswith("bench_dsl")}
    return out


def module_files(*names: str) -> list[Path]:
    files = []
    for n in names:
        p = ROOT / "bench_dsl" / n
        files += sorted(p.rglob("*.py")) if p.is_dir() else [p.with_suffix(".py")]
    return files


def test_the_engine_imports_no_user_interface() -> None:
    for f in module_files(*ENGINE):
        bad = {i for i in imports(f) if i.startswith(("bench_dsl.tui", "bench_dsl.sinks", "bench_dsl.document"))}
        assert not bad, f"{f.relative_to(ROOT)} imports {bad}"


def test_sinks_read_events_only() -> None:
    for f in module_files(*SINKS):
        allowed = {"bench_dsl.events", "bench_dsl.document", "bench_dsl.stalls"}  # stalls: the stall worth showing
        assert imports(f) <= allowed, f"{f.relative_to(ROOT)} imports {imports(f) - allowed}"


def test_the_live_screen_reads_events_only() -> None:
    for f in sorted((ROOT / "tui").glob("*.py")):
        engine = {i for i in imports(f) if i.startswith("bench_dsl.") and not i.startswith("bench_dsl.tui")}
        # dsn: the target's redaction, once more, before anything is drawn; mysql_errors: a table of
        # names for error codes, no state of a run; printable: control characters escaped, likewise
        assert engine <= {"bench_dsl.events", "bench_dsl.dsn", "bench_dsl.sinks", "bench_dsl.mysql_errors",
                          "bench_dsl.printable"}, \
            (f.name, engine)


def test_only_the_judge_judges() -> None:
    """Conditions are judged in one place: no other module calls Condition.holds or Aggregate.value."""
    for f in sorted((ROOT / "bench_dsl").rglob("*.py")) + sorted((ROOT / "tui").glob("*.py")):
        if f.name in ("judge.py", "model.py", "metrics.py"):
            continue
        text = f.read_text()
        assert ".holds(" not in text and ".value(c.metric)" not in text, f.relative_to(ROOT)
