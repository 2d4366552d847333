"""The result document: what a run writes (schema bench_dsl/schema/result-v1.json), built from
the run's state. The run decides; this module only says how it is written down."""

from __future__ import annotations

import datetime as dt
import platform
import re
import socket
from collections.abc import Callable
from typing import Any

import psutil

from bench_dsl import __version__
from bench_dsl import model as m
from bench_dsl.conditions import show, show_limit
from bench_dsl.errors import ExitCode
from bench_dsl.metrics import Aggregate
from bench_dsl.planner import Plan

RESULT_SCHEMA = "https://bench-dsl.dev/schema/result-v1.json"


def machine_info() -> dict[str, object]:
    cpu_model = platform.processor()
    try:
        with open("/proc/cpuinfo") as f:
            cpu_model = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), cpu_model)
    except OSError:
        pass
    return {
        "hostname": socket.gethostname(), "platform": platform.platform(), "python": platform.python_version(),
        "cpu_model": cpu_model, "cpu_count": psutil.cpu_count(), "memory_bytes": psutil.virtual_memory().total,
    }



def now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def plan_json(plan: Plan, time_scale: float, max_steps: int | None) -> dict[str, Any]:
    return {"steps": plan.steps, "seconds": plan.seconds,
            "phases": [{"kind": p.kind, "step": p.step, "users": p.users, "users_end": p.users_end,
                        "seconds": p.seconds} for p in plan.phases],
            "time_scale": time_scale, "max_steps": max_steps}


def new_document(sc: m.Scenario, workload: dict[str, object], names: tuple[str, ...] | list[str], plan: Plan,
                 time_scale: float, max_steps: int | None, started: str, scrub: Callable[[str], str]) -> dict[str, Any]:
    """The document as it stands before anything is measured; `scrub` removes passwords."""
    return {
        "$schema": RESULT_SCHEMA, "format": "bench-dsl-result", "format_version": 1,
        "tool": {"name": "bench-dsl", "version": __version__},
        "status": "running", "exit_code": None, "started_at": started, "finished_at": None,
        "elapsed_s": 0.0,
        "scenario": {"name": sc.name, "file": sc.file, "text": scrub(sc.text),
                     "parameters": {k: scrub(str(v)) if isinstance(v, str) else v
                                    for k, v in sc.parameters.items()},
                     "seed": sc.seed, "workload": workload | {"transactions": list(names)},
                     "stop": [c.text for c in sc.stop], "expect": [c.text for c in sc.expect],
                     "plan": plan_json(plan, time_scale, max_steps)},
        "machine": machine_info(), "server": None, "prepare": None, "workers": None, "executor": None,
        "steps": [], "intervals": [], "stop": None,
        "saturation": None, "expect": [], "summary": None, "errors": [], "warnings": [],
    }


def fill(d: dict[str, Any], *, status: str, elapsed_s: float, steps: list[dict[str, Any]],
         intervals: list[dict[str, Any]], stop_reason: dict[str, Any] | None, errors: dict[int, int],
         error_messages: dict[int, str], warnings: list[Any], run_agg: Aggregate,
         saturation_users: int | None, saturation_step: int | None, executor: str | None = None) -> None:
    """Bring the document up to the run's state (at every checkpoint, and at the end)."""
    d["status"] = status
    d["executor"] = executor
    d["elapsed_s"] = round(elapsed_s, 3)
    d["steps"] = steps
    d["intervals"] = intervals
    d["stop"] = stop_reason
    d["errors"] = [{"code": k, "count": v, "message": error_messages.get(k, "")} for k, v in sorted(errors.items())]
    d["warnings"] = warnings
    d["summary"] = run_agg.summary() | {"histograms": run_agg.histograms()} if run_agg.ticks else None
    complete = [s for s in steps if s["complete"]]
    # the server refusing more connections ends the climb as a fired condition does
    fired = bool(stop_reason and stop_reason.get("reason") in ("stop_condition", "connections_refused"))
    if fired and stop_reason["reason"] == "connections_refused":  # type: ignore[index]
        reason = (f"stopped by: the server refused connections at {stop_reason['users']} users, "  # type: ignore[index]
                  f"{stop_reason['connected']} connected: {stop_reason['message']}")  # type: ignore[index]
    elif fired:
        reason = f"stopped by: {stop_reason['condition']}"  # type: ignore[index]
    elif stop_reason:
        reason = f"run ended early ({stop_reason['reason']})"
    else:
        reason = "no stop condition fired up to the last step"
    d["saturation"] = {"users": saturation_users, "step": saturation_step, "saturated": fired,
                       "condition": stop_reason.get("condition") if fired else None,  # type: ignore[union-attr]
                       "reason": reason, "steps_completed": len(complete)}


def expectations(expect: tuple[m.Condition, ...] | list[m.Condition], saturation_users: int | None,
                 run_agg: Aggregate) -> list[dict[str, Any]]:
    """Each `expect` judged against the whole run's figures (or the saturation point)."""
    out = []
    for c in expect:
        if c.metric.name == "saturation":
            value: float | None = float(saturation_users) if saturation_users is not None else None
        else:
            value = run_agg.value(c.metric) if run_agg.ticks else None
        ok = value is not None and c.holds(value)
        out.append({"expect": c.text, "value": show(value, c) if c.metric.name != "saturation" else value,
                    "limit": show_limit(c), "unit": c.unit, "passed": ok})
    return out


def exit_code(status: str, stop_reason: dict[str, Any] | None, expect_results: list[dict[str, Any]]) -> ExitCode | None:
    """The exit status the run's end calls for; None: keep the one already set (0, or 1 after a failure)."""
    if status == "interrupted":
        sig = (stop_reason or {}).get("signal")
        return {"SIGTERM": ExitCode.TERMINATED, "SIGHUP": ExitCode.HANGUP}.get(sig, ExitCode.INTERRUPTED)
    if status == "target_failed":
        return ExitCode.TARGET_FAILED
    if status == "scenario_error":
        return ExitCode.BAD_SCENARIO
    if status in ("completed", "prepared") and any(not e["passed"] for e in expect_results):
        return ExitCode.EXPECT_FAILED
    return None


def light(summary: dict[str, Any] | None) -> dict[str, Any] | None:
    if summary is None:
        return None
    return {k: v for k, v in summary.items() if k != "histograms"}


def safe_name(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-") or "scenario"


def expand_output(template: str, sc: m.Scenario, when: dt.datetime | None = None) -> str:
    when = when or dt.datetime.now()
    return template.format(scenario=safe_name(sc.name), time=when.strftime("%Y%m%d-%H%M%S"), seed=sc.seed)

