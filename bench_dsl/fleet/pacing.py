"""Open-loop arrivals for users on asyncmy (TPC-C without JSON_TABLE, BENCH_RAWEXEC=0, a build without the C
executor): the same timeline as the C executor's `_native.Schedule` (bench_dsl/native/src/schedule.c,
where the reasoning is written down), on the event loop instead of threads. The numbers mean the
same things, and take() gives the same dict, so bench_dsl.measure.arrivals reads either.

A user awaits `claim()` before each transaction, sends it, then calls `done()`:

- an arrival is due at a time on a timeline of `rate` per second (evenly spaced, or Poisson),
  whatever the replies do; the transaction's response time runs from that due time (the user
  records its latency from it), its service time from its send, its lag is send minus due;
- an arrival that finds no idle user within GRACE is queued (up to `queue`, oldest first) or
  dropped, and counted; the timeline never slows down for the server.

Idle users wait here as a leader (sleeping until the next due time) and followers it wakes in turn:
on one event loop a wakeup is a future set, not a thread's. The C schedule has each idle user claim
an arrival and sleep until its due time instead, since waking a thread for another costs a context
switch; the two decide the same (an idle user holding a claim there is a leader or a follower here,
and an arrival past its grace meets the same free users).

`NativeClaims` is the same interface over a C Schedule, for a user that runs on asyncmy beside the
C executor's users (a statement the C executor could not prepare): they share its timeline."""

from __future__ import annotations

import asyncio
import math
import random
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from bench_dsl.measure.txstats import encoded_counts

GRACE = 0.001  # seconds an arrival may wait for a free user before it is queued or dropped, as in C
_WAIT_MAX = 3600.0  # a due time further away is waited for an hour at a time


def _wake(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)


class AsyncSchedule:
    """The arrivals of one process's users on asyncmy. `claim`, `done`, `set`, `take` and `wake`
    are called on the event loop; nothing here runs between them (the timeline advances lazily,
    exact because the number of idle users only changes in these calls)."""

    def __init__(self, seed: int, grace: float = GRACE) -> None:
        if not 0 <= grace < 3600:
            raise ValueError("grace: 0 to 3600 seconds")
        self._rng = random.Random(seed)
        self._grace = int(grace * 1e9)
        self._gap = 0.0  # mean gap, ns; 0: no arrivals
        self._poisson = False
        self._queue = 0
        self._next = 0.0  # ns: the first arrival neither started, queued nor dropped
        # due times past their grace, waiting for a user; and whether one found no idle user (queued,
        # not merely late)
        self._ring: deque[tuple[int, bool]] = deque()
        self._leader: asyncio.Future[None] | None = None
        self._followers: deque[asyncio.Future[None]] = deque()
        self._idle = self._busy = self._busy_max = 0
        self._offered = self._started = self._dropped = self._queued_max = 0
        self._lag: dict[int, int] = {}
        self._service: dict[int, int] = {}
        self._wait: dict[int, int] = {}

    def set(self, rate: float, poisson: bool = False, queue: int = 0, offset: float = 0.0) -> None:
        """Arrivals at `rate` per second from now on (0: none, the users wait). A change while the
        run goes on keeps the share of the current gap still to run, at the new pace: no burst,
        no gap, and (evenly spaced) comes back onto the offset grid of the new gap. A start (from 0)
        puts the first arrival on the grid of the gap shifted by `offset` gaps, on the machine's
        monotonic clock: W processes at rate R/W with offsets i/W interleave into one even timeline."""
        if not 0 <= rate <= 1e9:
            raise ValueError("rate: 0 to 1e9 per second")
        if queue < 0:
            raise ValueError("queue: 0 or more")
        if not 0 <= offset < 1:
            raise ValueError("offset: in [0, 1)")
        now = time.monotonic_ns()
        self._advance(now)
        old, gap = self._gap, (1e9 / rate if rate > 0 else 0.0)
        if gap == 0 and old > 0:
            # a stop: the arrivals already due, still in their grace, are kept for the users (or
            # dropped, as they would have been), not forgotten
            while self._next <= now:
                self._offered += 1
                if len(self._ring) < queue + self._idle:
                    self._push(int(self._next))
                else:
                    self._dropped += 1
                self._next += self._next_gap()
        elif gap > 0 and old > 0:
            if self._next > now:
                self._next = now + (self._next - now) * gap / old
            if not poisson:  # back onto the offset grid: processes change at their own moments (as in C)
                self._next = (math.ceil((self._next - offset * gap) / gap) + offset) * gap
        elif gap > 0:
            self._next = (math.ceil((now - offset * gap) / gap) + offset) * gap
        self._gap, self._poisson, self._queue = gap, bool(poisson), int(queue)
        if self._leader is not None:
            _wake(self._leader)  # to sleep again until the new due time
        self._hand_over(now)

    async def claim(self, stopped: Callable[[], bool]) -> int | None:
        """Wait for this user's next arrival: its due time (time.monotonic_ns()), or None once
        `stopped()` (checked whenever the user wakes: call wake() after setting it)."""
        loop = asyncio.get_running_loop()
        now = time.monotonic_ns()
        self._advance(now)  # with the idle users there were until now
        self._idle += 1
        due: int | None = None
        queued = False
        try:
            while not stopped():
                if self._ring:
                    due, queued = self._ring.popleft()
                    break
                if self._gap > 0 and self._next <= now:
                    due = int(self._next)
                    self._offered += 1
                    self._next += self._next_gap()
                    break
                fut: asyncio.Future[None] = loop.create_future()
                if self._leader is None:
                    self._leader = fut
                    timer = None
                    if self._gap > 0:
                        timer = loop.call_at(min(math.ceil(self._next) / 1e9, now / 1e9 + _WAIT_MAX), _wake, fut)
                    try:
                        await fut
                    finally:
                        if timer is not None:
                            timer.cancel()
                        if self._leader is fut:
                            self._leader = None
                else:
                    self._followers.append(fut)
                    try:
                        await fut
                    finally:
                        if not fut.done():  # cancelled: no longer waiting
                            self._followers.remove(fut)
                now = time.monotonic_ns()
                self._advance(now)  # with the idle users until now, this one among them
        finally:
            self._idle -= 1
            if due is not None:
                self._started += 1
                self._busy += 1
                self._busy_max = max(self._busy_max, self._busy)
                _count(self._lag, now - due)
                if queued:
                    _count(self._wait, now - due)
            self._hand_over(now)
        return due

    def done(self, send: int, end: int | None) -> None:
        """The transaction of the last claim is over (`end` None: it failed): its service time."""
        self._busy -= 1
        if end is not None:
            _count(self._service, end - send)

    def wake(self) -> None:
        """Every waiting user wakes and checks whether it is stopped."""
        for fut in (self._leader, *self._followers):
            if fut is not None:
                _wake(fut)
        self._followers.clear()

    def take(self) -> dict[str, Any]:
        """Since the previous take: offered, started, dropped, queued_max, queued, waiting (offered,
        neither started nor dropped, now), busy, busy_max, idle, and lag, service, queue_wait as
        histograms of microseconds with the sums of their values; as _native.Schedule.take."""
        self._advance(time.monotonic_ns())
        queued = max(0, len(self._ring) - self._idle)
        out: dict[str, Any] = {"offered": self._offered, "started": self._started, "dropped": self._dropped,
                               "queued_max": self._queued_max, "queued": queued, "waiting": len(self._ring),
                               "busy": self._busy,
                               "busy_max": self._busy_max, "idle": self._idle,
                               **_histograms("lag", self._lag), **_histograms("service", self._service),
                               **_histograms("queue_wait", self._wait)}
        self._offered = self._started = self._dropped = 0
        self._queued_max, self._busy_max = queued, self._busy
        self._lag, self._service, self._wait = {}, {}, {}
        return out

    def _next_gap(self) -> float:
        return self._rng.expovariate(1.0) * self._gap if self._poisson else self._gap

    def _advance(self, now: int) -> None:
        """What each arrival whose grace ran out by `now` met: an idle user or room in the queue,
        or nothing (dropped)."""
        if self._gap > 0:
            late = now - self._grace
            room = self._queue + self._idle
            while self._next <= late:
                if len(self._ring) < room:
                    self._push(int(self._next))
                    self._offered += 1
                    self._next += self._next_gap()
                elif self._poisson:
                    self._offered += 1
                    self._dropped += 1
                    self._next += self._next_gap()
                else:  # no room until the next event: counted at once, not walked
                    k = math.floor((late - self._next) / self._gap) + 1
                    self._offered += k
                    self._dropped += k
                    self._next += k * self._gap
        self._queued_max = max(self._queued_max, len(self._ring) - self._idle)

    def _push(self, due: int) -> None:
        self._ring.append((due, len(self._ring) >= self._idle))  # beyond the idle users' share: queued

    def _hand_over(self, now: int) -> None:
        """Wake a waiting user to lead when none does, and one more per arrival already due."""
        wake = (0 if self._leader is not None else 1) + len(self._ring) + (
            1 if self._gap > 0 and self._next <= now else 0)
        while wake > 0 and self._followers:
            _wake(self._followers.popleft())
            wake -= 1


def _count(d: dict[int, int], ns: int) -> None:
    us = ns // 1000 if ns > 0 else 0
    d[us] = d.get(us, 0) + 1


class NativeClaims:
    """claim()/done() over a C Schedule, for a user on asyncmy in a process whose users share it:
    it polls (claim_nowait) between sleeps on the event loop, and is not counted idle meanwhile."""

    def __init__(self, schedule: Any) -> None:
        self.schedule = schedule
        self._wakers: set[asyncio.Future[None]] = set()

    async def claim(self, stopped: Callable[[], bool]) -> int | None:
        loop = asyncio.get_running_loop()
        while not stopped():
            due, nxt = self.schedule.claim_nowait()
            if due is not None:
                return int(due)
            fut: asyncio.Future[None] = loop.create_future()
            timer = loop.call_at(nxt / 1e9 if nxt is not None else loop.time() + 0.1, _wake, fut)
            self._wakers.add(fut)
            try:
                await fut
            finally:
                timer.cancel()
                self._wakers.discard(fut)
        return None

    def done(self, send: int, end: int | None) -> None:
        self.schedule.release(-1 if end is None else end - send)

    def wake(self) -> None:
        for fut in list(self._wakers):
            _wake(fut)


def _histograms(name: str, counts: dict[int, int]) -> dict[str, Any]:
    return {name: encoded_counts(counts), name + "_us": sum(us * n for us, n in counts.items())}
