"""The closed-loop profiles: a number of virtual users per phase, each running transactions back
to back (`users N duration D`, `ramp step { }`, `ramp linear ... over D`), and their scheduler."""

from __future__ import annotations

from typing import Any

from bench_dsl.core.axis import LoadAxis
from bench_dsl.core.numbers import num
from bench_dsl.engine.phases import Phase, Plan, whole
from bench_dsl.engine.profiles.base import LoadProfile, warmup_phase
from bench_dsl.engine.scheduler import Scheduler
from bench_dsl.fleet.base import Fleet
from bench_dsl.language import model as m
from bench_dsl.measure.metrics import Aggregate

USERS = LoadAxis("users", "users", "users", "users (concurrent connections)", "users",
                 "closed-loop (users: how many users the server carries)", "users", whole=True,
                 point_meaning="the users of the last step that met every stop condition")


class OnUsers(LoadProfile):
    """A profile whose load is a number of users: its point is the users a phase ran."""

    axis = USERS

    def point(self, ph: Phase, interval: Aggregate | None = None) -> float | None:
        return ph.users if interval is None else interval.users_max


class UsersScheduler(Scheduler):
    """Each phase at its users; a linear ramp's users move with its clock, after each tick."""

    async def enter(self, fleet: Fleet, ph: Phase) -> None:
        await fleet.resize(ph.users)

    async def steer(self, fleet: Fleet, ph: Phase, done: float) -> None:
        if ph.kind == "ramp":
            await fleet.resize(round(ph.users + (ph.users_end - ph.users) * done), wait=False)


class ConstantUsers(OnUsers):
    kind = "constant"
    scheduler = UsersScheduler

    def plan(self, ramp: m.ConstantRamp, warmup: float, time_scale: float, max_steps: int | None) -> Plan:
        return Plan((*warmup_phase(ramp.users, warmup, time_scale),
                     Phase("hold", 1, ramp.users, ramp.users, whole(ramp.duration, time_scale), "step")), 1)

    def describe(self, ramp: m.ConstantRamp) -> str:
        return f"{ramp.users} users for {num(ramp.duration)}s (closed loop: each runs transactions back to back)"


class StepUsers(OnUsers):
    kind = "step"
    scheduler = UsersScheduler

    def plan(self, ramp: m.StepRamp, warmup: float, time_scale: float, max_steps: int | None) -> Plan:
        counts = ramp.user_counts()
        if max_steps is not None:
            counts = counts[:max_steps]
        phases = warmup_phase(ramp.start, warmup, time_scale)
        settle, hold = whole(ramp.settle, time_scale), whole(ramp.hold, time_scale)
        for i, users in enumerate(counts, start=1):
            if i > 1 and ramp.settle > 0:
                phases.append(Phase("settle", i, users, users, settle, None))
            phases.append(Phase("hold", i, users, users, hold, "step"))
        return Plan(tuple(phases), len(counts))

    def seconds(self, ramp: m.StepRamp, warmup: float, time_scale: float, max_steps: int | None) -> float:
        n = ramp.step_count() if max_steps is None else min(ramp.step_count(), max_steps)
        settles = (n - 1) * whole(ramp.settle, time_scale) if ramp.settle > 0 else 0.0
        return (whole(warmup, time_scale) if warmup > 0 else 0.0) + settles + n * whole(ramp.hold, time_scale)

    def describe(self, ramp: m.StepRamp) -> str:
        return (f"{ramp.start} users, then {_more(ramp)} a step up to {ramp.max} users "
                f"({ramp.step_count()} steps; closed loop: each runs transactions back to back)")

    def step_words(self, ramp: m.StepRamp, plan: Plan, step: int) -> str:
        return f"{_more(ramp)}, {super().step_words(ramp, plan, step)}"

    def judged(self, ramp: Any, plan: Plan) -> str:
        return "at each step's end"


class LinearUsers(OnUsers):
    kind = "linear"
    scheduler = UsersScheduler

    def plan(self, ramp: m.LinearRamp, warmup: float, time_scale: float, max_steps: int | None) -> Plan:
        over = whole(ramp.over, time_scale)
        phases = [*warmup_phase(ramp.start, warmup, time_scale),
                  Phase("ramp", 1, ramp.start, ramp.end, over, "interval")]
        rest = whole(ramp.duration, time_scale) - over
        if rest > 0:
            phases.append(Phase("hold", 1, ramp.end, ramp.end, rest, "interval"))
        return Plan(tuple(phases), 1)

    def describe(self, ramp: m.LinearRamp) -> str:
        return (f"{ramp.start} -> {ramp.end} users over {num(ramp.over)}s, {num(ramp.duration)}s in all "
                "(closed loop: each runs transactions back to back)")


def _more(ramp: m.StepRamp) -> str:
    return f"+{ramp.add} users" if ramp.add is not None else f"x{num(ramp.mul or 1)} users"


USERS_PROFILES: tuple[LoadProfile, ...] = (ConstantUsers(), StepUsers(), LinearUsers())
