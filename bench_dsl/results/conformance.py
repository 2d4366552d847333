"""A result document checked against schema/result-v1.json, as far as its readers rely on it
(bench_dsl/results/read.py says why by hand): every required field there with its type, the figures
of each step, interval, transaction and the summary, and every number in the document finite (NaN
and 1e400 are not figures), counts, rates, durations and latencies not negative, and no value nested
deeper than MAX_DEPTH. The first problem found is returned with its JSON path
(`steps[2].latency_ms.p95`): a person can find it in the file.
"""

from __future__ import annotations

import json
import math
import sys
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import resources
from typing import Any

from bench_dsl.core.figures import Figure, Figures
from bench_dsl.language.metric_decls import CORE_TABLE
from bench_dsl.measure import arrivals
from bench_dsl.measure.figures import client_figures
from bench_dsl.server.figures import SECONDS, TPM

MAX_DEPTH = 64
# JSON's integers have no bound and Python reads them whole: one past a float's range is no figure
# either (it fails every float() that meets it, with OverflowError), as 1e400 is not
FLOAT_MAX = sys.float_info.max

# The enums and the latency keys as the schema has them (read once, not copied here)
SCHEMA: dict[str, Any] = json.loads(resources.files("bench_dsl.results.schema").joinpath("result-v1.json")
                                    .read_text(encoding="utf-8"))
STATUSES: tuple[str, ...] = tuple(SCHEMA["properties"]["status"]["enum"])
PHASES: tuple[str, ...] = tuple(SCHEMA["$defs"]["interval"]["properties"]["phase"]["enum"])
LATENCIES: tuple[str, ...] = tuple(SCHEMA["$defs"]["latency"]["required"])
# What any run's rows may hold, by the owners' declarations; a result adds its workload's own
# (its "figures", which the run wrote from the same declarations)
CORE_FIGURES = Figures([*client_figures(CORE_TABLE), *arrivals.FIGURES, SECONDS, *TPM.figures()])
_NAMES = {str: "a string", int: "an integer", float: "a number", bool: "true or false", dict: "an object",
          list: "a list", type(None): "null"}


@dataclass(frozen=True, slots=True)
class Problem:
    where: str  # the JSON path of the field
    what: str


class _Bad(Exception):
    def __init__(self, where: str, what: str) -> None:
        super().__init__(what)
        self.where, self.what = where, what


def check_result(doc: dict[str, Any]) -> Problem | None:
    """The first problem of a document that names itself a result of format version 1, or None."""
    try:
        _walk(doc)
        _document(doc)
    except _Bad as bad:
        return Problem(bad.where, bad.what)
    return None


def check_numbers(doc: Any) -> Problem | None:
    """The first number of `doc` that is no figure (NaN, infinite, beyond a float), or a value nested
    too deep; None."""
    try:
        _walk(doc)
    except _Bad as bad:
        return Problem(bad.where, bad.what)
    return None


def check_row(kind: str, row: dict[str, Any]) -> Problem | None:
    """The first problem of a step's or an interval's row (an event stream's line), or None."""
    try:
        _walk(row)
        (_step if kind == "step" else _interval)(row, kind, CORE_FIGURES)
    except _Bad as bad:
        return Problem(bad.where, bad.what)
    return None


def _walk(doc: Any) -> None:
    """Every number finite, and nothing nested too deep: one pass without recursion, breadth first
    (the first problem said is the one nearest the top and the start of the file)."""
    queue: deque[tuple[Any, int, str]] = deque([(doc, 0, "")])
    while queue:
        node, depth, where = queue.popleft()
        if depth > MAX_DEPTH:
            raise _Bad(where, f"nested deeper than {MAX_DEPTH} levels: not a result")
        items = node.items() if isinstance(node, dict) else enumerate(node)
        for k, v in items:
            if isinstance(v, float) and not math.isfinite(v):
                raise _Bad(_at(where, k), f"{_show(v)} is not a figure: a result holds finite numbers only")
            if isinstance(v, int) and not -FLOAT_MAX <= v <= FLOAT_MAX:  # exact: an int is not made a float to compare
                raise _Bad(_at(where, k), f"a number of {len(str(abs(v))):,} digits is not a figure: a result holds "
                                          "numbers a float can hold only (up to about 1.8e308)")
            if isinstance(v, dict | list):
                queue.append((v, depth + 1, _at(where, k)))


def _at(where: str, key: str | int) -> str:
    return f"{where}[{key}]" if isinstance(key, int) else (f"{where}.{key}" if where else str(key))


def _show(v: Any) -> str:
    return str(v) if isinstance(v, float) else repr(v)[:60]


def _is(v: Any, kind: str) -> bool:
    if kind == "integer":
        return isinstance(v, int) and not isinstance(v, bool)
    if kind == "number":
        return isinstance(v, int | float) and not isinstance(v, bool)
    return isinstance(v, {"string": str, "boolean": bool, "object": dict, "array": list, "null": type(None)}[kind])


def _field(obj: dict[str, Any], key: str, where: str, *kinds: str, required: bool = True,
           minimum: float | None = None) -> Any:
    """obj[key], which must be of one of `kinds` (and at least `minimum` when a number)."""
    at = _at(where, key)
    if key not in obj:
        if required:
            raise _Bad(at, "missing")
        return None
    v = obj[key]
    if not any(_is(v, k) for k in kinds):
        raise _Bad(at, f"should be {' or '.join(kinds)}, not {_NAMES.get(type(v), type(v).__name__)} ({_show(v)})")
    if minimum is not None and _is(v, "number") and v < minimum:
        raise _Bad(at, f"{v} is below {minimum:g}: this figure cannot be" + (" negative" if minimum == 0 else ""))
    return v


def _document(doc: dict[str, Any]) -> None:
    _field(doc, "tool", "", "object")
    if _field(doc, "status", "", "string") not in STATUSES:
        raise _Bad("status", f"{doc['status']!r} is not a status of a run ({', '.join(STATUSES)})")
    # null only while the run goes on: a finished run has its exit status
    _field(doc, "exit_code", "", *(("integer", "null") if doc["status"] == "running" else ("integer",)))
    _field(doc, "started_at", "", "string")
    _field(doc, "finished_at", "", "string", "null", required=False)
    _field(doc, "elapsed_s", "", "number", required=False, minimum=0)
    _field(doc, "workers", "", "integer", "null", required=False, minimum=0)
    sc = _field(doc, "scenario", "", "object")
    for key, kinds in (("name", ("string",)), ("workload", ("object", "null")), ("stop", ("array",)),
                       ("plan", ("object",))):
        _field(sc, key, "scenario", *kinds)
    for i, text in enumerate(sc["stop"]):
        if not isinstance(text, str):
            raise _Bad(f"scenario.stop[{i}]", "should be a string (a stop condition as the file wrote it)")
    workload = sc["workload"]
    if workload is not None:
        _field(workload, "workload", "scenario.workload", "string", required=False)
        for i, name in enumerate(_field(workload, "transactions", "scenario.workload", "array", required=False) or []):
            if not isinstance(name, str):
                raise _Bad(f"scenario.workload.transactions[{i}]", "should be a string (a transaction's name)")
    plan = sc["plan"]
    _field(plan, "steps", "scenario.plan", "integer", "null", minimum=0)
    for i, phase in enumerate(_field(plan, "phases", "scenario.plan", "array")):
        at = f"scenario.plan.phases[{i}]"
        _object(phase, at)
        _field(phase, "kind", at, "string")
        _field(phase, "step", at, "integer", "null", minimum=0)
        for key in ("users", "users_end"):
            _field(phase, key, at, "integer", "null", required=key == "users", minimum=0)
        _field(phase, "seconds", at, "number", "null", minimum=0)
    _configuration(doc)
    machine = _field(doc, "machine", "", "object")
    _field(machine, "cpu_count", "machine", "integer", "null", minimum=1)
    server = _field(doc, "server", "", "object", "null")
    if server is not None:
        for key in ("target", "version"):
            _field(server, key, "server", "string", "null", required=key == "target")
        _field(server, "settings", "server", "array")
    _field(doc, "prepare", "", "object", "null", required=False)
    # the figures the run declared it measures (a workload's own among them), beside the core's
    figures = CORE_FIGURES + Figures.from_json(_field(doc, "figures", "", "object", required=False))
    for i, row in enumerate(_field(doc, "steps", "", "array")):
        _step(row, f"steps[{i}]", figures)
        if (server := row.get("server")) is not None:
            _declared(_object(server, f"steps[{i}].server"), f"steps[{i}].server", figures.at("server"))
    for i, row in enumerate(_field(doc, "intervals", "", "array")):
        _interval(row, f"intervals[{i}]", figures)
    stop = _field(doc, "stop", "", "object", "null")
    if stop is not None:
        _field(stop, "reason", "stop", "string")
        _field(stop, "at_s", "stop", "number", "null", required=False, minimum=0)
        for key in ("step", "users"):
            _field(stop, key, "stop", "integer", "null", required=False, minimum=0)
        if stop["reason"] == "stop_condition":
            _verdict(stop, "stop")
    sat = _field(doc, "saturation", "", "object", "null")
    if sat is not None:
        _field(sat, "users", "saturation", "integer", "null", minimum=0)
        _field(sat, "saturated", "saturation", "boolean")
        _field(sat, "condition", "saturation", "string", "null")
    for i, e in enumerate(_field(doc, "expect", "", "array")):
        _object(e, f"expect[{i}]")
    summary = _field(doc, "summary", "", "object", "null")
    if summary is not None:
        _figures(summary, "summary", figures, nullable=("users",))
    for i, e in enumerate(_field(doc, "errors", "", "array")):
        _object(e, f"errors[{i}]")
        _field(e, "code", f"errors[{i}]", "integer")
        _field(e, "count", f"errors[{i}]", "integer", minimum=0)
    for i, w in enumerate(_field(doc, "warnings", "", "array")):
        if not isinstance(w, str):
            raise _Bad(f"warnings[{i}]", "should be a string")
    _field(doc, "workload_report", "", "object", "null", required=False)


def _object(v: Any, where: str) -> dict[str, Any]:
    if not isinstance(v, dict):
        raise _Bad(where, f"should be an object, not {_NAMES.get(type(v), type(v).__name__)}")
    return v


def _configuration(doc: dict[str, Any]) -> None:
    conf = _field(doc, "configuration", "", "object", "null", required=False)
    if conf is None:
        return
    for key in ("id", "label", "study"):
        _field(conf, key, "configuration", "string")
    values = _field(conf, "values", "configuration", "object")
    for k, v in values.items():
        if not isinstance(v, str):
            raise _Bad(f"configuration.values.{k}", "should be a string (the value as the file wrote it)")
    _field(conf, "repeat", "configuration", "integer", minimum=1)
    _field(conf, "repeats", "configuration", "integer", minimum=1)
    _field(conf, "study_id", "configuration", "string", required=False)


def _tx(row: Any, where: str, figures: Figures) -> None:
    _object(row, where)
    _declared(row, where, figures.at("tx"))
    lat = _field(row, "latency_ms", where, "object")
    for key in LATENCIES:
        _field(lat, key, f"{where}.latency_ms", "number", "null", minimum=0)
    _field(row, "errors_by_code", where, "object")


def _declared(row: dict[str, Any], where: str, figures: Iterable[Figure], nullable: tuple[str, ...] = ()) -> None:
    """Each figure declared for this place (core.figures): of its type, never below 0 unless signed."""
    for f in figures:
        kinds = (*f.json_types, "null") if f.name in nullable else f.json_types
        _field(row, f.name, where, *kinds, required=f.required, minimum=None if f.signed else 0)


def _figures(row: Any, where: str, figures: Figures, nullable: tuple[str, ...] = ()) -> None:
    _tx(row, where, figures)
    _declared(row, where, figures.at("figures"), nullable)  # the summary of a run that measured nothing: users null
    cpu = _field(row, "cpu", where, "object")
    for key in cpu:
        _field(cpu, key, f"{where}.cpu", "number", "null", minimum=0)
    for name, tx in _field(row, "transactions", where, "object").items():
        _tx(tx, f"{where}.transactions.{name}", figures)


def _step(row: Any, where: str, figures: Figures) -> None:
    _figures(row, where, figures)
    _field(row, "step", where, "integer", minimum=0)
    _field(row, "complete", where, "boolean")
    _field(row, "incomplete_reason", where, "string", required=False)
    _field(row, "start_s", where, "number", minimum=0)
    for i, v in enumerate(_field(row, "conditions", where, "array")):
        _verdict(_object(v, f"{where}.conditions[{i}]"), f"{where}.conditions[{i}]")
    _field(row, "histograms", where, "object", required=False)


def _verdict(v: dict[str, Any], where: str) -> None:
    """A stop condition's verdict (a step's, or the one that stopped the run): what a replay reads."""
    for key in ("condition", "kind", "metric"):
        _field(v, key, where, "string")
    _field(v, "fired", where, "boolean")
    _field(v, "limit", where, "number")
    for key in ("value", "previous"):  # a plateau's gain may be below 0: not bounded
        _field(v, key, where, "number", "null", required=key == "value")
    _field(v, "unit", where, "string", "null")
    _field(v, "window_s", where, "number", "null", minimum=0)
    _field(v, "resolved", where, "string", required=False)


def _interval(row: Any, where: str, figures: Figures) -> None:
    _figures(row, where, figures)
    _field(row, "t", where, "number", minimum=0)
    _field(row, "start_s", where, "number", minimum=0)
    if _field(row, "phase", where, "string") not in PHASES:
        raise _Bad(f"{where}.phase", f"{row['phase']!r} is not a phase ({', '.join(PHASES)})")
    _field(row, "step", where, "integer", "null", minimum=0)
    _field(row, "measured", where, "boolean")
