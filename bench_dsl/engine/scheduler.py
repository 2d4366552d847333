"""The users scheduler: walks the plan's phases, sets the fleet's users, and produces a tick about
every second. It judges nothing and writes nothing: what a tick means is the consumer's (the run's).

This is the seam where an arrival scheduler (open-loop `rate`) will sit beside it, and where a
matrix run (`vary`) calls the run once per configuration. A front end's controls (hold, next step)
act here, since they move the clock of a phase.
"""

from __future__ import annotations

import asyncio
import time
from typing import Protocol

from bench_dsl.fleet.base import Fleet, WorkerFailed
from bench_dsl.measure.metrics import Tick, TxStats
from bench_dsl.engine.plan import Phase, Plan
from bench_dsl.measure.stalls import Span, quiet_spans


class Consumer(Protocol):
    """What the scheduler hands its ticks to (bench_dsl.engine.run.Run)."""

    def stopping(self) -> bool:
        """True once the run must stop: the scheduler ends the phase at the next tick."""

    def elapsed(self) -> float: ...

    async def phase_begins(self, ph: Phase, new_step: bool) -> None:
        """The phase's users are set; nothing of it is measured yet."""

    async def step_last_tick(self, ph: Phase) -> None:
        """The last tick of a measured phase is being taken (read the server's counters now)."""

    def tick(self, tick: Tick, ph: Phase, remaining_s: float | None, final: bool) -> None:
        """One tick's figures. `final`: the phase's last."""

    def lost_tick(self, tick: Tick, ph: Phase) -> None:
        """What the surviving workers measured in the tick a worker was lost in."""

    async def phase_ends(self, ph: Phase) -> None: ...


class UsersScheduler:
    """Closed loop: a number of virtual users per phase, each running transactions back to back."""

    def __init__(self, plan: Plan, consumer: Consumer, second: float = 1.0) -> None:
        self.plan = plan
        self.second = second  # how long a second of the plan lasts: shorter in tests of a fake fleet
        self.consumer = consumer
        self.fleet: Fleet | None = None
        self.holding = False
        self._skip = False  # end the current phase at the next tick
        self._skip_step: int | None = None  # `n` during a settle skips that step's hold too
        self._wake = asyncio.Event()
        self._step: int | None = None  # the step whose figures are being gathered
        self._origin = (0.0, 0.0)  # (monotonic, the run's elapsed) at the start: stalls' clock
        # where the fleet's word on its completions ended at the last collect: the next tick's stalls
        # start there (not at the coordinator's own clock, which a late tick would turn into a stall)
        self._quiet_from: float | None = None

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

    async def run(self, fleet: Fleet) -> None:
        self.fleet = fleet
        self._origin = (time.monotonic(), self.consumer.elapsed())
        for ph in self.plan.phases:
            if self.consumer.stopping():  # also a stop that came while the workers started
                break
            if ph.step is not None and ph.step == self._skip_step:
                continue
            await self._phase(ph)

    async def _phase(self, ph: Phase) -> None:
        fleet, consumer = self.fleet, self.consumer
        assert fleet is not None
        await fleet.resize(ph.users)
        # a step's figures start with its first measured phase: a linear ramp's ramp and hold are one step
        new_step = ph.measured and ph.step != self._step
        if new_step:
            self._step = ph.step
        await consumer.phase_begins(ph, new_step)
        await fleet.collect()  # connecting, and all before this moment, is not measured
        self._stalls()
        start = time.monotonic()
        second = self.second
        end = start + ph.seconds * second
        last = self._quiet_from or start  # where the counts of the phase's first tick begin
        held = 0.0  # seconds the phase's clock stood still (toggle_hold)
        k = 1
        while True:
            at = min(start + k * second, end + held) if not self.holding else start + k * second
            self._wake.clear()
            delay = at - time.monotonic()
            if delay > 0:
                try:
                    await asyncio.wait_for(self._wake.wait(), delay)
                except asyncio.TimeoutError:
                    pass
            now = time.monotonic()
            if not consumer.stopping() and now < at - 1e-3:
                continue  # woken early without a reason
            if self.holding:
                held += now - last  # the phase's clock stands still while held
            users = fleet.active  # the users asked for; those that ran are known after the collect
            try:
                stats = await fleet.collect()
            except WorkerFailed as exc:
                if exc.partial is not None:  # the surviving workers' last second: measured, so kept
                    # (timed at `now`: they answered then, the failure may have taken REPLY_TIMEOUT)
                    consumer.lost_tick(self._tick(now, last, ph, users, exc.partial, at_elapsed=False), ph)
                raise
            # the counts cover the time up to their collection, not up to `now`: a worker slow to
            # answer (a thousand users starting) would otherwise inflate this tick's rate
            got = time.monotonic()
            final = not self.holding and now >= end + held - 1e-3  # the phase's last tick
            if ph.measured and final:
                await consumer.step_last_tick(ph)
            stalls = self._stalls()  # taken whether users run or not: it moves the mark on
            if not fleet.active:
                stalls = []  # no user running: no stall
            # the counts cover the time between the fleet's takes, where it says when they were:
            # the coordinator's own clock reads, on a loaded machine, may lag them by a scheduling slice
            took = self._quiet_from if self._quiet_from is not None and self._quiet_from > last else got
            users = min(users, fleet.health().connected)
            tick = self._tick(took, last, ph, users, stats)
            tick.stalls = stalls
            last = took
            consumer.tick(tick, ph, None if self.holding else max(0.0, end + held - now) / second, final)
            if consumer.stopping() or self._skip or final:
                break
            k += 1
            if ph.kind == "ramp" and not self.holding:
                frac = min(1.0, (now - start - held) / (ph.seconds * second))
                await fleet.resize(round(ph.users + (ph.users_end - ph.users) * frac), wait=False)
        if self._skip and ph.kind == "settle":
            self._skip_step = ph.step
        self._skip = False
        await consumer.phase_ends(ph)

    def _stalls(self) -> list[Span] | None:
        """The spans without a completion since the last collect, in the run's elapsed seconds (each
        second of the plan lasting `second`); None when the fleet does not say. They end where the
        fleet's word ends (the earliest process's take): what came after is the next tick's."""
        assert self.fleet is not None
        quiet = self.fleet.quiet()
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
              at_elapsed: bool = True) -> Tick:
        t = self.consumer.elapsed() if at_elapsed else self.consumer.elapsed() - (time.monotonic() - now)
        return Tick(round(t, 3), (now - last) / self.second, ph.kind, ph.step, users, stats, {})
