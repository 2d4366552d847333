"""Scenario -> the phases the run will go through. Pure: no clock, no database."""

from __future__ import annotations

import math
from dataclasses import dataclass

from bench_dsl.language import model as m
@dataclass(frozen=True, slots=True)
class Phase:
    kind: str  # warmup | settle | hold | ramp
    step: int | None  # 1-based step number; None for warmup
    users: int  # users at the start of the phase
    users_end: int  # users at its end (differs only for a linear ramp)
    seconds: float
    # when this phase's conditions without `for D` are judged: "step" at the end of its hold (a
    # constant or step ramp), "interval" at each report interval (a linear ramp, which has no steps
    # to compare), None: not judged (warmup, settle). `for D` conditions are judged at every
    # measured tick whatever this says.
    judge: str | None = None

    @property
    def measured(self) -> bool:
        return self.kind in ("hold", "ramp")


@dataclass(frozen=True, slots=True)
class Plan:
    phases: tuple[Phase, ...]
    steps: int

    @property
    def seconds(self) -> float:
        return sum(p.seconds for p in self.phases)

    @property
    def judged_per_interval(self) -> bool:
        return any(p.judge == "interval" for p in self.phases)

    @property
    def max_users(self) -> int:
        return max(max(p.users, p.users_end) for p in self.phases)


def _whole(seconds: float, scale: float) -> float:
    """Phases last whole seconds (the engine's tick); scaled runs keep at least one."""
    if seconds <= 0:
        return 0.0
    return float(max(1, math.ceil(seconds * scale - 1e-9)))


def plan(sc: m.Scenario, time_scale: float = 1.0, max_steps: int | None = None) -> Plan:
    """The phases of a run. time_scale shrinks every duration (a smoke run); max_steps caps a ramp."""
    r = sc.ramp
    phases: list[Phase] = []
    first = r.users if isinstance(r, m.ConstantRamp) else r.start
    if sc.warmup > 0:
        phases.append(Phase("warmup", None, first, first, _whole(sc.warmup, time_scale), None))
    match r:
        case m.ConstantRamp():
            phases.append(Phase("hold", 1, r.users, r.users, _whole(r.duration, time_scale), "step"))
            steps = 1
        case m.StepRamp():
            counts = r.user_counts()
            if max_steps is not None:
                counts = counts[:max_steps]
            settle, hold = _whole(r.settle, time_scale), _whole(r.hold, time_scale)
            for i, users in enumerate(counts, start=1):
                if i > 1 and r.settle > 0:
                    phases.append(Phase("settle", i, users, users, settle, None))
                phases.append(Phase("hold", i, users, users, hold, "step"))
            steps = len(counts)
        case m.LinearRamp():
            over = _whole(r.over, time_scale)
            phases.append(Phase("ramp", 1, r.start, r.end, over, "interval"))
            rest = _whole(r.duration, time_scale) - over
            if rest > 0:
                phases.append(Phase("hold", 1, r.end, r.end, rest, "interval"))
            steps = 1
    return Plan(tuple(phases), steps)


def planned_seconds(sc: m.Scenario, time_scale: float = 1.0, max_steps: int | None = None) -> float:
    """plan(sc, time_scale, max_steps).seconds, without building a phase per step: what a study's
    --plan adds up over a thousand configurations of a ramp of 10,000 steps."""
    r = sc.ramp
    total = _whole(sc.warmup, time_scale) if sc.warmup > 0 else 0.0
    match r:
        case m.ConstantRamp():
            return total + _whole(r.duration, time_scale)
        case m.StepRamp():
            n = r.step_count() if max_steps is None else min(r.step_count(), max_steps)
            settles = (n - 1) * _whole(r.settle, time_scale) if r.settle > 0 else 0.0
            return total + settles + n * _whole(r.hold, time_scale)
        case m.LinearRamp():
            return total + max(_whole(r.over, time_scale), _whole(r.duration, time_scale))
    raise AssertionError(r)
