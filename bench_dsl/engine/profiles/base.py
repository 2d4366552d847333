"""What a load profile is: the part of a scenario that says how much load, when (its ramp in the
model, bench_dsl.language.model), turned into phases, words and a scheduler.

The language checks the syntax of a ramp and builds its model; a profile takes it from there:
- `plan`: its phases (bench_dsl.engine.phases), `seconds` their length without building them;
- `describe`: one line for `bench check --plan`; `load`, `step_words` and `judged`: its words in
  the plan's timeline and stop conditions, and in the run's log;
- `scheduler`: the class that sets the fleet's load as its phases go (bench_dsl.engine.scheduler).
A new profile is a module with a subclass of LoadProfile, and one line in registry.py."""

from __future__ import annotations

from typing import Any, ClassVar

from bench_dsl.core.axis import LoadAxis
from bench_dsl.core.figures import Figure
from bench_dsl.core.numbers import num
from bench_dsl.engine.phases import Phase, Plan, whole
from bench_dsl.engine.scheduler import Scheduler
from bench_dsl.language.loads import LoadKind
from bench_dsl.measure.metrics import Aggregate


class LoadProfile:
    kind: ClassVar[str]  # the model's ramp kind this profile plans
    scheduler: ClassVar[type[Scheduler]]
    axis: ClassVar[LoadAxis]  # what its load is measured in: its saturation point's, every reader's x
    figures: ClassVar[tuple[Figure, ...]] = ()  # what its load adds to each row (core.figures)
    # a profile of its own syntax (`load NAME { }`): how the language reads it; None for bench-dsl's
    # own, which the grammar writes (users, ramp, rate)
    syntax: ClassVar[LoadKind | None] = None

    def point(self, ph: Phase, interval: Aggregate | None = None) -> float | None:
        """Where on its axis a phase was measured: at a step's end (`interval` None), or over one
        interval of a phase whose load moves (a linear ramp's)."""
        raise NotImplementedError

    def row_point(self, ph: Phase) -> dict[str, float]:
        """What a step's row holds of its point beside its users: the point under its axis' key
        (nothing where that key is the row's users)."""
        p = self.point(ph)
        return {} if p is None or self.axis.key == "users" else {self.axis.key: p}

    def asked(self, ramp: Any) -> dict[str, Any]:
        """What the load asked, for the result's "scenario" beside the plan's phases ({} : nothing
        the phases do not say)."""
        return {}

    def plan(self, ramp: Any, warmup: float, time_scale: float, max_steps: int | None) -> Plan:
        """The phases of a run (time_scale shrinks every duration; max_steps caps the steps)."""
        raise NotImplementedError

    def seconds(self, ramp: Any, warmup: float, time_scale: float, max_steps: int | None) -> float:
        """plan(...).seconds; a profile of many steps says it without building them."""
        return self.plan(ramp, warmup, time_scale, max_steps).seconds

    def bound(self, ramp: Any) -> LoadProfile:
        """This profile with its words bound to `ramp` where they say more than its phases hold (a
        rate asked in a workload's own unit); itself when they do not."""
        return self

    def describe(self, ramp: Any) -> str:
        """The load in one line (`bench check --plan`'s "load:")."""
        raise NotImplementedError

    def load(self, ph: Phase) -> str:
        """A phase's load in words: "8 users", "1 -> 20 users"."""
        return f"{ph.users} users" if ph.users == ph.users_end else f"{ph.users} -> {ph.users_end} users"

    def step_words(self, ramp: Any, plan: Plan, step: int) -> str:
        """What one step does, for the steps --plan does not list one by one."""
        phases = [ph for ph in plan.phases if ph.step == step]
        return ", ".join(f"a {num(ph.seconds)}s {ph.kind} ({'measured' if ph.measured else 'not measured'})"
                         for ph in phases)

    def judged(self, ramp: Any, plan: Plan) -> str:
        """When a threshold without `for D` is judged, in --plan's words."""
        return ("at each step's end" if plan.steps > 1 else
                "at each report interval" if plan.judged_per_interval else "at the end")


def warmup_phase(users: int, warmup: float, time_scale: float) -> list[Phase]:
    """The warmup before the first measured phase, at its load (none when `warmup` is 0)."""
    return [Phase("warmup", None, users, users, whole(warmup, time_scale), None)] if warmup > 0 else []
