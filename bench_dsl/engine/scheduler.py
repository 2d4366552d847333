"""The clock of a run: walks the plan's phases, collects the fleet's report about every second, and
says what happened as moments (PhaseBegins, LastTick, Ticked, TickLost, PhaseEnds) to whoever
iterates over `run(fleet)`. It judges nothing and writes nothing: what a tick means is the
tally's (bench_dsl.engine.tally). It knows two things of the run: its clock, and whether it
must stop.

How much load a phase puts on the fleet is its load profile's (bench_dsl.engine.profiles): a
profile's scheduler subclasses this one and sets the fleet's load as a phase begins (`enter`) and
after each tick (`steer`): users for `users`, due times for an open-loop rate. A front end's
controls (hold, next step) act here, since they move the clock of a phase.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass
from typing import Any

from bench_dsl.core.clock import MONOTONIC, Clock
from bench_dsl.engine.phases import Phase, Plan
from bench_dsl.fleet.base import Fleet, WorkerFailed, WorkerReport
from bench_dsl.measure.metrics import TickStats
from bench_dsl.measure.stalls import TimeSpan, quiet_spans
from bench_dsl.measure.txstats import TxStats


@dataclass(frozen=True, slots=True)
class PhaseBegins:
    """The phase's load is set; nothing of it is measured yet. `new_step`: its step's first
    measured phase (a linear ramp's ramp and hold are one step)."""
    ph: Phase
    new_step: bool


@dataclass(frozen=True, slots=True)
class LastTick:
    """The last tick of a measured phase is being taken (the server's counters are read now)."""
    ph: Phase


@dataclass(frozen=True, slots=True)
class Ticked:
    """One tick's figures (`report`: the fleet's, the tick's CPU and lag). `final`: the phase's last;
    `holding`: the phase's clock stands still (a front end's hold)."""
    tick: TickStats
    ph: Phase
    report: WorkerReport
    remaining_s: float | None
    final: bool
    holding: bool


@dataclass(frozen=True, slots=True)
class TickLost:
    """What the surviving workers measured in the tick a worker was lost in: the run then fails."""
    tick: TickStats
    ph: Phase
    report: WorkerReport
    holding: bool


@dataclass(frozen=True, slots=True)
class WorkersLost:
    """Workers lost at this tick, the run going on without them (on worker loss continue): the
    tick's figures (what the others measured) follow as a Ticked."""
    reasons: list[str]
    workers: int  # left
    users: int  # the users they run


@dataclass(frozen=True, slots=True)
class PhaseEnds:
    ph: Phase


Moment = PhaseBegins | LastTick | Ticked | TickLost | WorkersLost | PhaseEnds


class Scheduler:
    """A plan's phases on a fleet. Subclassed by each load profile (`enter`, `steer`)."""

    def __init__(self, plan: Plan, elapsed: Callable[[], float], stopping: Callable[[], bool],
                 second: float = 1.0, load: Any = None, clock: Clock = MONOTONIC) -> None:
        self.plan = plan
        self.load = load  # the scenario's load as the model has it (its profile's own settings)
        self.elapsed = elapsed  # the run's elapsed seconds: what ticks are timed in
        self.clock = clock  # what the phases are timed and waited on (a test's is virtual)
        self.stopping = stopping  # True once the run must stop: the phase ends at the next tick
        self.second = second  # how long a second of the plan lasts: shorter in tests of a fake fleet
        self.holding = False
        self._skip = False  # end the current phase at the next tick
        self._skip_step: int | None = None  # `n` during a settle skips that step's hold too
        self._wake = asyncio.Event()
        self._step: int | None = None  # the step whose figures are being gathered
        self._origin = (0.0, 0.0)  # (the clock, the run's elapsed) at the start: stalls' clock
        # where the fleet's word on its completions ended at the last collect: the next tick's stalls
        # start there (not at the coordinator's own clock, which a late tick would turn into a stall)
        self._quiet_from: float | None = None
        self.on_worker_loss = "fail"  # the scenario's: a lost worker ends the run, or it goes on without it

    # the profile's part -------------------------------------------------------------------------
    async def enter(self, fleet: Fleet, ph: Phase) -> None:
        """Set the fleet's load for `ph`, before any of it is measured."""
        raise NotImplementedError

    async def steer(self, fleet: Fleet, ph: Phase, done: float) -> None:
        """After each tick of `ph` (not held): `done` is the share of the phase gone by."""

    async def regroup(self, fleet: Fleet) -> None:
        """After workers were lost and the run goes on (on worker loss continue): what the load
        asks of the workers left. A closed loop asks nothing: the step goes on with fewer users,
        and the next ones share theirs over the workers left."""

    # controls ----------------------------------------------------------------------------------
    def wake(self) -> None:
        """Look at the controls now rather than at the next tick (a stop was asked)."""
        self._wake.set()

    def next_step(self) -> None:
        self._skip = True
        self.holding = False
        self._wake.set()

    def toggle_hold(self) -> bool:
        self.holding = not self.holding
        self._wake.set()
        return self.holding

    # the clock ---------------------------------------------------------------------------------
    async def run(self, fleet: Fleet) -> AsyncGenerator[Moment, None]:
        self._origin = (self.clock.now(), self.elapsed())
        for ph in self.plan.phases:
            if self.stopping():  # also a stop that came while the workers started
                break
            if ph.step is not None and ph.step == self._skip_step:
                continue
            async with contextlib.aclosing(self._phase(fleet, ph)) as moments:
                async for moment in moments:
                    yield moment

    async def _phase(self, fleet: Fleet, ph: Phase) -> AsyncGenerator[Moment, None]:
        await self.enter(fleet, ph)
        new_step = ph.measured and ph.step != self._step
        if new_step:
            self._step = ph.step
        yield PhaseBegins(ph, new_step)
        self._stalls(await fleet.collect())  # connecting, and all before this moment, is not measured
        clock = self.clock
        start = clock.now()
        second = self.second
        end = start + ph.seconds * second
        last = self._quiet_from or start  # where the counts of the phase's first tick begin
        held = 0.0  # seconds the phase's clock stood still (toggle_hold)
        k = 1
        while True:
            at = min(start + k * second, end + held) if not self.holding else start + k * second
            self._wake.clear()
            await clock.sleep_until(at, self._wake)
            now = clock.now()
            if not self.stopping() and now < at - 1e-3:
                continue  # woken early without a reason
            if self.holding:
                held += now - last  # the phase's clock stands still while held
            users = fleet.active  # the load asked for; what ran is known after the collect
            # a loss's tick is timed where its counts end, not when the collect gave up on the lost
            # worker (a reply's timeout, Ray's seconds to call an actor dead), or it would overlap the next
            lost_tick = False
            try:
                report = await fleet.collect()
            except WorkerFailed as exc:
                lost = fleet.lose() if self.on_worker_loss == "continue" and exc.partial is not None else []
                if lost and exc.partial is not None:  # the others' second is this tick's, and the run goes on
                    report = exc.partial
                    lost_tick = True
                    yield WorkersLost(lost, fleet.workers, fleet.active)
                    await self.regroup(fleet)
                else:
                    if exc.partial is not None:  # the surviving workers' last second: measured, so kept
                        # (timed at `now`: they answered then, the failure may have taken a reply's timeout)
                        tick = self._tick(now, last, ph, users, exc.partial.tx, at_elapsed=False)
                        tick.arrivals = exc.partial.arrivals  # with the lost workers' share, offered and dropped
                        yield TickLost(tick, ph, exc.partial, self.holding)
                    raise
            # the counts cover the time up to their collection, not up to `now`: a worker slow to
            # answer (a thousand users starting) would otherwise inflate this tick's rate
            got = clock.now()
            final = not self.holding and now >= end + held - 1e-3  # the phase's last tick
            if ph.measured and final:
                yield LastTick(ph)
            stalls = self._stalls(report)  # taken whether users run or not: it moves the mark on
            if not fleet.active:
                stalls = []  # no user running: no stall
            # the counts cover the time between the fleet's takes, where it says when they were:
            # the coordinator's own clock reads, on a loaded machine, may lag them by a scheduling slice
            took = self._quiet_from if self._quiet_from is not None and self._quiet_from > last else got
            users = min(users, report.health.connected)
            tick = self._tick(took, last, ph, users, report.tx, at_elapsed=not lost_tick)
            tick.stalls = stalls
            tick.arrivals = report.arrivals
            last = took
            yield Ticked(tick, ph, report, None if self.holding else max(0.0, end + held - now) / second, final,
                         self.holding)
            if self.stopping() or self._skip or final:
                break
            k += 1
            if not self.holding:
                await self.steer(fleet, ph, min(1.0, (now - start - held) / (ph.seconds * second)))
        if self._skip and ph.kind == "settle":
            self._skip_step = ph.step
        self._skip = False
        yield PhaseEnds(ph)

    def _stalls(self, report: WorkerReport) -> list[TimeSpan] | None:
        """The spans with a user inside a transaction and no completion since the last collect, in
        the run's elapsed seconds (each second of the plan lasting `second`); None when the fleet
        does not say. They end where the fleet's word ends (the earliest process's take): what came
        after is the next tick's."""
        quiet = report.quiet
        if not quiet:
            self._quiet_from = None  # the fleet's word is lost: stalls and takes start afresh
            return None
        start, end = self._quiet_from, min(q.at for q in quiet)
        self._quiet_from = end
        if start is None:
            return []
        mono, elapsed = self._origin  # one map for the run, so that the ticks' pieces join
        return [(elapsed + (a - mono) / self.second, elapsed + (b - mono) / self.second)
                for a, b in quiet_spans(quiet, start, end)]

    def _tick(self, now: float, last: float, ph: Phase, users: int, stats: dict[str, TxStats],
              at_elapsed: bool = True) -> TickStats:
        t = self.elapsed() if at_elapsed else self.elapsed() - (self.clock.now() - now)
        return TickStats(round(t, 3), (now - last) / self.second, ph.kind, ph.step, users, stats, {})
