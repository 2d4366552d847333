"""A virtual clock, a fake fleet and CPU for tests of the scheduler and the judge: the run's own code
from the plan to its events, in a few milliseconds per phase, without a server, and the same at every
run whatever else the machine does. The end-to-end tests run the same code against a real one. And
a one-statement workload for tests of the users against a real server (QueryWorkload), and the wait
for a condition of the tests that meet something real (wait_until)."""

from __future__ import annotations

import asyncio
import heapq
import inspect
import itertools
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from bench_dsl.core.clock import MONOTONIC, Clock
from bench_dsl.engine.judge import Judge
from bench_dsl.engine.profiles.registry import PROFILES
from bench_dsl.fleet.base import Health, ProcessFigures, WorkerReport
from bench_dsl.language.model import Condition
from bench_dsl.language.statements import Execute, StatementStep, Transaction, Transactions
from bench_dsl.measure.txstats import TxStats, new_histogram
from bench_dsl.measure.stalls import Quiet

# users -> {transaction: (transactions per second, latency in ms)}: what a fake server gives
Model = Callable[[int], dict[str, tuple[float, float]]]

# how long a wait for a condition may take before the test is called hung: never reached by a slow
# machine, only by a defect (each wait ends as soon as its condition holds)
HUNG_S = 60.0


async def wait_until(what: str, done: Callable[[], bool | Awaitable[bool]], within: float = HUNG_S) -> None:
    """Until `done()` holds (polled every 10 ms; it may be a coroutine function, as a look at the
    server is), or fail as hung, saying `what` was waited for, after `within` seconds. For a test that
    waits for something to happen: never a fixed sleep, long enough on one machine and not on a
    loaded one, and never a poll without end."""
    deadline = time.monotonic() + within
    while True:
        ok = done()
        if inspect.isawaitable(ok):
            ok = await ok
        if ok:
            return
        assert time.monotonic() < deadline, f"hung: {what} (not within {within:g} s)"
        await asyncio.sleep(0.01)


class VirtualClock:
    """A clock that moves only when every task of the loop waits: then it jumps to the earliest
    moment a task sleeps until, and wakes that task. A run on it takes no wall-clock time between
    its ticks, and what it measures does not depend on how busy the machine is: the same figures
    at every run. (Tasks waiting on something else, a real timer or a socket, do not hold it back:
    a test on it waits on nothing but the clock.)"""

    def __init__(self, start: float = 1000.0) -> None:
        self.t = start  # not 0: a run's t0 of 0 means "not begun"
        self._due: list[tuple[float, int, asyncio.Future[None]]] = []
        self._order = itertools.count()  # sleepers due at the same moment wake in the order they slept
        self._looking = False

    def now(self) -> float:
        return self.t

    async def sleep_until(self, t: float, wake: asyncio.Event | None = None) -> None:
        if t <= self.t:
            return  # as the machine's clock: nothing to wait for, no turn given to the loop
        loop = asyncio.get_running_loop()
        due: asyncio.Future[None] = loop.create_future()
        heapq.heappush(self._due, (t, next(self._order), due))
        self._look(loop)
        try:
            if wake is None:
                await due
            else:
                woken = asyncio.ensure_future(wake.wait())
                try:
                    await asyncio.wait((due, woken), return_when=asyncio.FIRST_COMPLETED)
                finally:
                    woken.cancel()
        finally:
            if not due.done():
                due.cancel()  # woken early (or cancelled): its entry is skipped when it comes up

    async def sleep(self, seconds: float) -> None:
        await self.sleep_until(self.t + seconds)

    def _look(self, loop: asyncio.AbstractEventLoop) -> None:
        if not self._looking:
            self._looking = True
            loop.call_soon(self._advance, loop)

    def _advance(self, loop: asyncio.AbstractEventLoop) -> None:
        self._looking = False
        # another task ready to run has not reached its wait yet: look again once it has had its turn
        # (asyncio's loop says what is ready in `_ready`; a loop that does not is given one turn)
        if getattr(loop, "_ready", None):
            self._look(loop)
            return
        while self._due and self._due[0][2].done():
            heapq.heappop(self._due)
        if not self._due:
            return
        self.t = max(self.t, self._due[0][0])
        while self._due and self._due[0][0] <= self.t:
            due = heapq.heappop(self._due)[2]
            if not due.done():
                due.set_result(None)
        if self._due:
            self._look(loop)


@dataclass
class FakeFleet:
    """Each collect returns one second of the model at the users set: every transaction of a type
    takes the model's latency, in a WorkerReport as a real fleet's. Remembers every resize, for the
    scheduler's tests."""

    model: Model
    active: int = 0
    processes: int = 1
    resizes: list[int] = field(default_factory=list)
    errors: dict[str, dict[int, int]] = field(default_factory=dict)  # transaction -> {code: per second}
    # with `second` set, counts accumulate in real time (a second of the plan lasting `second`), and
    # `delays` (in seconds of the plan) hold up the collects that follow, one each: a slow worker
    second: float | None = None
    connectable: int | None = None  # users that get a connection; the others stay connecting
    delays: list[float] = field(default_factory=list)
    # each collect's scheduling lag, by process: bench_dsl.measure.schedlag's samples (none: not measured)
    lags: Callable[[], dict[str, dict[str, list[float]]]] = dict
    # what the counts and the fleet's word on its users' completions are timed on: the run's
    clock: Clock = MONOTONIC
    # each collect's CPU by process, % of one core, on a machine of `cores` (none: not measured)
    cpu: Callable[[], dict[str, float]] = dict
    cores: int = 1
    # (users, collects since the last resize: 0 is the phase's first) -> the server answered nothing
    # in the second up to this collect: no transaction in it, and the users' last completion stays
    frozen: Callable[[int, int], bool] = lambda users, k: False
    _swapped: float | None = None
    _since_resize: int = 0
    _last: float | None = None
    _quiet: list[Quiet] = field(default_factory=list)

    async def reach(self) -> None:
        pass

    async def start(self) -> None:
        pass

    @property
    def workers(self) -> int:
        return self.processes

    def capacity_pct(self) -> float:
        return 100.0

    def cluster(self) -> None:
        return None

    def lose(self) -> list[str]:
        return []

    async def resize(self, n: int, wait: bool = True) -> None:
        self.active = n
        self.resizes.append(n)
        self._since_resize = -1

    async def collect(self) -> WorkerReport:
        clock = self.clock
        span = 1.0  # seconds of the plan these counts cover
        if self.second is not None:
            if self.delays:
                await clock.sleep_until(clock.now() + self.delays.pop(0) * self.second)
            now = clock.now()
            span = 0.0 if self._swapped is None else (now - self._swapped) / self.second
            self._swapped = now
        self._since_resize += 1
        frozen = self.frozen(self.active, self._since_resize)
        at = clock.now()
        if not frozen:
            self._last = at
        self._quiet = [Quiet((), self._last, at)]
        out = {}
        for name, (tps, ms) in self.model(self.active).items():
            if frozen:
                tps = 0.0
            st = TxStats(new_histogram())
            n = int(round(tps * span))
            if n:
                st.hist.record_value(max(1, int(ms * 1000)), n)
            st.count, st.queries, st.total_us = n, n, int(ms * 1000) * n
            st.errors.update(self.errors.get(name, {}))
            out[name] = st
        lags, cpu = self.lags(), self.cpu()
        processes = {name: ProcessFigures(cpu[name] / 100 if name in cpu else None, 1.0, lags.get(name, {}), "fake",
                                          self.cores) for name in {**lags, **cpu}}
        return WorkerReport(out, self.health(), self.active, self._quiet, processes)

    def health(self) -> Health:
        connected = self.active if self.connectable is None else min(self.active, self.connectable)
        return Health(connect_failures=0, idle_s=0.0, fatal=None, error_messages={}, executors=("fake",),
                      connected=connected, never_connected=self.active - connected)

    def cancel_in_flight(self) -> None:
        pass

    async def stop(self, grace: float = 5.0) -> WorkerReport:
        return WorkerReport({}, self.health())


class FakeCpu:
    """The server's CPU as a function of the run's elapsed seconds. (The client's comes with the
    fleet's reports: FakeFleet's `cpu`.)"""

    def __init__(self, server: Callable[[], float | None] = lambda: None) -> None:
        self.server = server

    def sample(self) -> dict[str, float | None]:
        return {"server": self.server(), "host": None}


class Query:
    """A session on asyncmy: one statement per transaction."""

    paced = False
    values: tuple[int, ...] = ()

    def __init__(self, sql: str) -> None:
        self.sql = sql

    async def run(self, conn: Any, tx: int) -> int:
        async with conn.cursor() as cur:
            await cur.execute(self.sql)
            await cur.fetchall()
        return 1

    def forget(self) -> None:
        pass


class QueryWorkload:
    """A workload of one transaction type `t`, one statement: on asyncmy through its sessions, on the
    C executor through its description."""

    names, weights, retries, retry_on = ("t",), (1.0,), (0,), (frozenset(),)
    raw = True  # described by statements(): its users run on the C executor where it is built

    def __init__(self, sql: str) -> None:
        self.sql = sql

    async def ready(self, dsn: Any) -> None:
        pass

    def session(self, rng: Any, user: int) -> Query:
        return Query(self.sql)

    def statements(self) -> Transactions:
        return Transactions((Transaction((StatementStep(1, 1, (), (Execute((self.sql,), ()),)),), False),))


def judge_of(stop: tuple[Condition, ...], names: tuple[str, ...], ramp: str = "constant") -> Judge:
    """The judge a run of a ramp of kind `ramp` makes (engine.runner.Run): on its load profile's axis."""
    profile = PROFILES[ramp]
    return Judge(stop, names, profile.axis, profile.point)
