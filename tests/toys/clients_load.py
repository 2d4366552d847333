"""A toy load profile: `load clients { start = 1  max = 4  settle = 1s  hold = 2s }`, clients of two users
each, doubled at each step, on an axis of its own (clients) and in a syntax of its own. Its registry
line is LOAD_PROFILES."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from bench_dsl.core.axis import LoadAxis
from bench_dsl.core.errors import Span
from bench_dsl.engine.phases import Phase, Plan, whole
from bench_dsl.engine.profiles.base import LoadProfile, warmup_phase
from bench_dsl.engine.profiles.closed_loop import UsersScheduler
from bench_dsl.language import syntax as ast
from bench_dsl.language.loads import unknown_settings
from bench_dsl.language.model import PointUnits, LoadWindow
from bench_dsl.language.values import Checker
from bench_dsl.measure.metrics import Aggregate

USERS_PER_CLIENT = 2

CLIENTS = LoadAxis("clients", "clients", "clients", "clients (two users each)", "clients",
                   "closed-loop (clients of two users each: how many clients the server carries)", "clients",
                   whole=True, point_meaning="the clients of the last step that met every stop condition")


@dataclass(frozen=True, slots=True)
class ClientsLoad:
    start: int
    max: int
    settle: float
    hold: float
    kind: ClassVar[str] = "clients"
    open_loop: ClassVar[bool] = False
    steps_compared: ClassVar[bool] = True

    def counts(self) -> list[int]:
        out = [self.start]
        while out[-1] * 2 <= self.max:
            out.append(out[-1] * 2)
        return out

    def window(self) -> LoadWindow:
        return self.hold, "each step's hold", f"for {self.hold:g}s at most, or a longer hold"

    def seconds(self, warmup: float) -> float:
        return warmup + len(self.counts()) * (self.settle + self.hold)

    def point_units(self) -> PointUnits:
        return PointUnits({None: 1.0}, "clients", "clients", "a number of clients", "saturation >= 2")


class ClientsSyntax:
    name = "clients"
    usage = "load clients { start = 1  max = 8  settle = 1s  hold = 5s }"

    def model(self, c: Checker, settings: Mapping[str, ast.Setting], span: Span) -> ClientsLoad | None:
        if unknown_settings(c, settings, ("start", "max", "settle", "hold"), self.usage):
            return None
        for name in ("start", "max", "hold"):
            if name not in settings:
                c.error(f"load clients needs its {name}", span, self.usage)
                return None
        start, top = c.count(settings["start"].value, "start"), c.count(settings["max"].value, "max")
        hold = c.duration(settings["hold"].value, "hold")
        settle = c.duration(settings["settle"].value, "settle", allow_zero=True) if "settle" in settings else 0.0
        if start is None or top is None or hold is None or settle is None:
            return None
        if top < start:
            c.error("max is below start", settings["max"].span, self.usage)
            return None
        return ClientsLoad(int(start), int(top), settle, hold)


class Clients(LoadProfile):
    kind = "clients"
    scheduler = UsersScheduler
    axis = CLIENTS
    syntax = ClientsSyntax()

    def point(self, ph: Phase, interval: Aggregate | None = None) -> float | None:
        users = ph.users if interval is None else interval.users_max
        return None if users is None else users // USERS_PER_CLIENT

    def plan(self, ramp: ClientsLoad, warmup: float, time_scale: float, max_steps: int | None) -> Plan:
        counts = ramp.counts()[:max_steps] if max_steps is not None else ramp.counts()
        phases = warmup_phase(ramp.start * USERS_PER_CLIENT, warmup, time_scale)
        for i, n in enumerate(counts, start=1):
            users = n * USERS_PER_CLIENT
            if i > 1 and ramp.settle > 0:
                phases.append(Phase("settle", i, users, users, whole(ramp.settle, time_scale), None))
            phases.append(Phase("hold", i, users, users, whole(ramp.hold, time_scale), "step"))
        return Plan(tuple(phases), len(counts))

    def describe(self, ramp: ClientsLoad) -> str:
        return (f"{ramp.start} clients of {USERS_PER_CLIENT} users each, doubled a step up to {ramp.max} clients "
                f"({len(ramp.counts())} steps)")

    def load(self, ph: Phase) -> str:
        return f"{ph.users // USERS_PER_CLIENT} clients ({ph.users} users)"


LOAD_PROFILES = (Clients(),)
