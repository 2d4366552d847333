"""What the engine says of a run beyond its measurements: the scenario as asked, the machine, the
plan, the exit status a run's end calls for, and where its results go. (The result document itself
is built from events by bench_dsl.results.document.)"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import json
import platform
import re
import socket
from collections.abc import Callable
from typing import Any

import psutil

from bench_dsl.core.errors import ExitCode
from bench_dsl.core.figures import Figure, Figures
from bench_dsl.engine.expectation import Expectation
from bench_dsl.engine.machine import Machine
from bench_dsl.engine.phases import Plan, PlannedRun
from bench_dsl.engine.profiles.registry import profile_of
from bench_dsl.engine.scenario_info import ScenarioInfo
from bench_dsl.engine.stopping import StopReason
from bench_dsl.language import model as m
from bench_dsl.measure.figures import table_figures
from bench_dsl.workloads.registry import METRICS


def this_machine() -> Machine:
    cpu_model = platform.processor()
    try:
        with open("/proc/cpuinfo") as f:
            cpu_model = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), cpu_model)
    except OSError:
        pass
    return Machine(socket.gethostname(), platform.platform(), platform.python_version(), cpu_model,
                   psutil.cpu_count(), psutil.virtual_memory().total)


def now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


def scenario_info(sc: m.Scenario, workload: dict[str, object], names: tuple[str, ...] | list[str], plan: Plan,
                  time_scale: float, max_steps: int | None, scrub: Callable[[str], str]) -> ScenarioInfo:
    """The result document's "scenario": what was asked, passwords removed by `scrub`."""
    return ScenarioInfo(sc.name, sc.file, scrub(sc.text),
                        {k: scrub(str(v)) if isinstance(v, str) else v for k, v in sc.parameters.items()},
                        sc.seed, dict(workload), tuple(names), workload_digest(sc),
                        tuple(c.text for c in sc.stop), tuple(c.text for c in sc.expect),
                        PlannedRun(plan, time_scale, max_steps),
                        # what its load is measured in (bench_dsl.core.axis), and what it asked beyond the phases
                        profile_of(sc.ramp).axis.name, profile_of(sc.ramp).asked(sc.ramp))


def figures(sc: m.Scenario, server: tuple[Figure, ...]) -> Figures:
    """Every figure the run measures, by its owners' declarations: the client's counts, each
    throughput (a workload kind's own as the workload's), what its load profile adds, and what the
    server counts over a step (`server`: bench_dsl.server.counters, a workload's counters among them)."""
    return Figures([*table_figures(METRICS, () if sc.power else ("power",)), *profile_of(sc.ramp).figures, *server])


def workload_digest(sc: m.Scenario) -> str:
    """What the workload and its data are, as a short hash of their validated form (SQL, generators,
    options, setup; not where in a file they were written): two results compare only when theirs
    are the same, whatever their names say."""
    def plain(v: Any) -> Any:
        if dataclasses.is_dataclass(v) and not isinstance(v, type):
            return {f.name: plain(getattr(v, f.name)) for f in dataclasses.fields(v) if f.name != "span"}
        if isinstance(v, (list, tuple)):
            return [plain(x) for x in v]
        if isinstance(v, dict):
            return {str(k): plain(x) for k, x in v.items()}
        return v if isinstance(v, (str, int, float, bool)) or v is None else repr(v)
    text = json.dumps({"workload": plain(sc.workload), "setup": plain(sc.setup)}, sort_keys=True, default=repr)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def exit_code(status: str, stop_reason: StopReason | None, expect_results: list[Expectation]) -> ExitCode | None:
    """The exit status the run's end calls for; None: keep the one already set (0, or 1 after a failure).
    A status that is a reason's is given that reason's code (StopReason.exit_code: one mapping), the
    run's own reason when it gave the status (an interruption's signal picks its code)."""
    if status in ("interrupted", "target_failed", "scenario_error"):
        reason = stop_reason if stop_reason is not None and stop_reason.status == status else StopReason(status)
        return reason.exit_code
    if status in ("completed", "prepared") and any(not e.passed for e in expect_results):
        return ExitCode.EXPECT_FAILED
    return None


def safe_name(text: str) -> str:
    """`text` as one path component: never empty, `.` or `..` (a scenario named `..` must not make
    `{scenario}` climb out of its folder), nor hidden (a leading dot)."""
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-.") or "scenario"


def expand_output(template: str, sc: m.Scenario, when: dt.datetime | None = None) -> str:
    when = when or dt.datetime.now()
    return template.format(scenario=safe_name(sc.name), time=when.strftime("%Y%m%d-%H%M%S"), seed=sc.seed)

