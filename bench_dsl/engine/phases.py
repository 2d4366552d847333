"""The phases a run goes through, as a load profile (bench_dsl.engine.profiles) plans them. Pure
types: what judges a run (the judge, a replay) reads them without loading any profile."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


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
    # an open-loop rate's phase: arrivals per second at its start and its end (they differ for a
    # linear ramp); `users` is then the pool that serves them. None: closed-loop users.
    rate: float | None = None
    rate_end: float | None = None

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


@dataclass(frozen=True, slots=True)
class PlannedRun:
    """A run's plan as it was run: its phases, and the shrinking of them asked on the command line
    (--time-scale, --max-steps). Its JSON is the result's scenario "plan"; read back (a replay), each
    phase has what that JSON says of it (when it was judged and a rate's arrivals are the profile's)."""

    plan: Plan
    time_scale: float = 1.0
    max_steps: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {"steps": self.plan.steps, "seconds": self.plan.seconds,
                "phases": [{"kind": p.kind, "step": p.step, "users": p.users, "users_end": p.users_end,
                            "seconds": p.seconds} for p in self.plan.phases],
                "time_scale": self.time_scale, "max_steps": self.max_steps}

    @classmethod
    def from_json(cls, d: Mapping[str, Any] | None) -> PlannedRun:
        d = d or {}
        phases = tuple(Phase(str(p.get("kind")), p.get("step"), int(p.get("users") or 0),
                             int(p.get("users_end", p.get("users")) or 0), float(p.get("seconds") or 0.0))
                       for p in d.get("phases") or [] if isinstance(p, Mapping))
        return cls(Plan(phases, int(d.get("steps") or 0)), float(d.get("time_scale") or 1.0), d.get("max_steps"))


def whole(seconds: float, scale: float) -> float:
    """Phases last whole seconds (the engine's tick); scaled runs keep at least one."""
    if seconds <= 0:
        return 0.0
    return float(max(1, math.ceil(seconds * scale - 1e-9)))
