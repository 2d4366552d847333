"""A figure is declared once (bench_dsl.core.figures), by its owner, and the result's schema cannot
drift from the declarations: a declared figure the schema lacks fails, and so does a figure of the
schema that nothing declares; their types, descriptions and whether they are always there agree."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bench_dsl.core.figures import PLACES, Figure, Figures
from bench_dsl.engine import events as ev
from bench_dsl.measure import arrivals
from bench_dsl.measure.figures import client_figures, table_figures
from bench_dsl.results.conformance import CORE_FIGURES, check_result
from bench_dsl.workloads.registry import METRICS, PLUGINS

SCHEMA = json.loads((Path(__file__).resolve().parents[2] / "bench_dsl/results/schema/result-v1.json").read_text())


def every_figure() -> Figures:
    """The core's and every workload kind's (its throughputs, what its server counts)."""
    return CORE_FIGURES + client_figures(METRICS) + [f for p in PLUGINS.values() for c in p.counted for f in c.figures()]


def _place(place: str) -> dict[str, Any]:
    """The schema's object for a place: its properties and required list."""
    defs = SCHEMA["$defs"]
    if place == "server":
        return defs["step"]["properties"]["server"]
    return defs[place]


def _types(prop: dict[str, Any]) -> set[str]:
    t = prop.get("type", ())
    return {t} if isinstance(t, str) else set(t)


def _schema_figures(place: str) -> dict[str, dict[str, Any]]:
    """The schema's scalar figures of a place: numbers (objects and lists hold more than one figure)."""
    props = _place(place).get("properties", {})
    return {k: v for k, v in props.items() if _types(v) & {"number", "integer"}}


@pytest.mark.parametrize("place", [p for p in PLACES if p != "step"])
def test_the_schema_holds_every_declared_figure_and_nothing_else(place: str) -> None:
    declared = {f.name: f for f in every_figure().at(place)}  # type: ignore[arg-type]
    schema = _schema_figures(place)
    assert sorted(set(declared) - set(schema)) == [], f"declared, missing from the schema's {place}"
    assert sorted(set(schema) - set(declared)) == [], f"in the schema's {place}, declared by nothing"
    required = set(_place(place).get("required", ()))
    for name, f in declared.items():
        assert _types(schema[name]) == set(f.json_types), name
        assert schema[name].get("description") == f.description, name
        assert (name in required) == f.required, name


def test_a_figure_is_declared_once_per_place() -> None:
    seen: dict[tuple[str, str], Figure] = {}
    owners = [CORE_FIGURES, *(client_figures(METRICS),), *(c.figures() for p in PLUGINS.values() for c in p.counted)]
    for group in owners:
        for f in group:
            other = seen.setdefault((f.place, f.name), f)
            assert other == f, f"{f.place}.{f.name} declared twice, differently"


def test_a_metric_that_names_a_figure_of_the_rows_agrees_with_its_declaration() -> None:
    """A metric (the word a condition, compare and the summary use) and the figure it reads are
    declared apart (language/metric_decls.py, each figure's owner): where a metric's figure is one of
    the rows', they cannot drift. An open-loop share named the count beside it (dropped, busy)."""
    rows = {f.name: f for f in (*every_figure(), *table_figures(METRICS), *arrivals.FIGURES)
            if f.place in ("figures", "tx")}
    named = 0
    for d in METRICS:
        f = rows.get(d.figure_name)
        if d.open_loop and d.measures == "share":
            assert f is not None, f"{d.name}: its figure {d.figure_name} is not one of the rows'"
        if f is None:
            continue  # read from an object of the row (latency_ms, cpu, disk) or worked out by the fold
        named += 1
        assert f.unit == d.unit, (d.name, f.unit, d.unit)
        assert not f.title or f.title == d.heading, (d.name, f.title, d.heading)
    assert named >= 15


def test_the_catalog_travels_whole_through_a_result_and_an_event() -> None:
    figures = every_figure()
    back = Figures.from_json(json.loads(json.dumps(figures.to_json())))
    assert {(f.place, f.name): f for f in back} == {(f.place, f.name): f for f in figures}
    begin = ev.Begin("1", "2026-01-01T00:00:00+00:00", ev.ScenarioInfo(), ev.Machine.from_json({}), None, figures)
    assert ev.from_json(json.loads(json.dumps(begin.to_json()))) == begin


def test_a_figure_the_result_declares_is_checked_by_its_declaration() -> None:
    """A workload's own figure (nopm) is held to its declaration when the result declares it, and
    unknown to the checks otherwise (the JSON may gain fields)."""
    base = _minimal_result()
    base["steps"][0]["nopm"] = -5.0
    assert check_result(base) is None  # not declared: an extra field
    base["figures"] = Figures([f for f in every_figure() if f.name == "nopm"]).to_json()
    problem = check_result(base)
    assert problem is not None and problem.where == "steps[0].nopm" and "below 0" in problem.what


def _minimal_result() -> dict[str, Any]:
    tx = {"count": 1, "tps": 1.0, "tpm": 60.0, "qps": 1.0, "errors": 0, "errors_by_code": {}, "retries": 0,
          "latency_ms": dict.fromkeys(("min", "avg", "p50", "p90", "p95", "p99", "p99_9", "max"), 1.0)}
    row = {**tx, "seconds": 1.0, "users": 1, "cpu": {"server": None, "host": None, "client": None},
           "transactions": {"t": tx}}
    step = {**row, "type": "step", "step": 1, "complete": True, "start_s": 0.0, "conditions": [], "histograms": {},
            "server": None}
    return {"format": "bench-dsl-result", "format_version": 1, "tool": {"name": "bench-dsl"}, "status": "completed",
            "exit_code": 0, "started_at": "2026-01-01T00:00:00+00:00",
            "scenario": {"name": "s", "workload": None, "stop": [], "plan": {"steps": 1, "phases": []}},
            "machine": {"cpu_count": 2}, "server": None, "steps": [step], "intervals": [], "stop": None,
            "saturation": None, "expect": [], "summary": None, "errors": [], "warnings": []}


def test_a_workloads_own_figure_is_named_only_by_its_workload() -> None:
    """TPC-C's nopm is declared by its plugin (its throughput, what the server counts of it); the
    engine, the results and the screen know it from the declarations, never by its name."""
    root = Path(__file__).resolve().parents[2] / "bench_dsl"
    named = sorted(str(p.relative_to(root)) for floor in ("engine", "results", "tui") for p in (root / floor).rglob("*.py")
                   if "nopm" in p.read_text().lower())
    assert named == []
