"""Virtual users: one connection each, added and removed while the run goes on. Closed-loop (each
sends its next transaction when the last one is done), or open-loop once the pool is paced
(`UserPool.pace`): each transaction then waits for an arrival of the pool's schedule (the C
executor's _native.Schedule for its users, bench_dsl.fleet.pacing for users on asyncmy), and its
latency runs from the arrival's due time. This is the hot path: one pass of `_loop` per transaction."""

from __future__ import annotations

import asyncio
import random
import time
from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import accumulate
from typing import Any

import asyncmy

from bench_dsl import native
from bench_dsl.core import limits
from bench_dsl.core.dsn import Dsn, ServerIdentity, redact
from bench_dsl.core.mysql_errors import CONNECTION_LOST, LOST_CONNECTION, SCENARIO_ERRORS
from bench_dsl.fleet import pacing
from bench_dsl.fleet.base import Health
from bench_dsl.measure.arrivals import ArrivalStats
from bench_dsl.measure.recorder import Recorder
from bench_dsl.native import executor
from bench_dsl.native.executor import ELSEWHERE, ERROR, PREPARE, STOPPED, NativeUser
from bench_dsl.server.connect import OtherServer, close_quietly, connect, driver_message, is_connected, other_server
from bench_dsl.workloads.base import IntendedRollback, Session, Workload, error_code

# what the owner of a user decides after an error
RETRY, NEXT, RECONNECT = 0, 1, 2
_NO_MORE_ATTEMPTS = 1 << 30

# Connections being opened at once by the whole run (shared out over its processes). A server takes
# new connections from a queue of back_log entries (MariaDB's own default: 80 + max_connections / 5);
# 3,000 users dialling at once overflowed it: the kernel dropped their handshakes and retried them
# 1, 3, 7, 15 s later, and a connection it gave up on waited forever for the server's greeting.
CONNECTING = 64
# a connection whose greeting or authentication never comes is abandoned and tried again
CONNECT_TIMEOUT = 20.0


def _picker(rng: random.Random, weights: tuple[float, ...]) -> Callable[[], int] | None:
    """What picks each transaction type of a driver-path user by weight: None when there is one."""
    if len(weights) == 1:
        return None
    cum = list(accumulate(weights))
    total = cum[-1]
    last = len(cum) - 1
    return lambda: min(bisect_right(cum, rng.random() * total), last)


@dataclass
class _User:
    session: Session
    rng: random.Random
    seed: int  # the C executor's generator's
    stop: bool = False
    tx: int = 0  # the transaction type in flight or last run: what a defect is reported under
    connected: asyncio.Event = field(default_factory=asyncio.Event)
    task: asyncio.Task[None] | None = None
    raw: NativeUser | None = None  # while its transactions run on the C executor
    gate: asyncio.Event | None = None  # connected, it waits for this before its first transaction
    live: bool = False  # has a connection
    refused: bool = False  # its latest attempt to connect failed
    ever_connected: bool = False

    def halt(self) -> None:
        """Finish the transaction in flight, then close the connection."""
        self.stop = True
        if self.raw is not None:
            self.raw.stop = True


class UserPool:
    """The users of one process. User k of this pool is user `offset + k * stride` of the run, so
    that several pools (worker processes) give every user of the run its own seed."""

    def __init__(self, dsn: Dsn, workload: Workload, recorder: Recorder, seed: int,
                 offset: int = 0, stride: int = 1) -> None:
        self.dsn = dsn
        self.workload = workload
        self.recorder = recorder
        self.seed = seed
        self.offset = offset
        self.stride = stride
        self.users: list[_User] = []
        self.started = 0
        self.last_progress = time.monotonic()
        self.connect_failures = 0
        self.connect_error: tuple[int, str] | None = None
        self.fatal: tuple[int, str, str] | None = None
        self.elsewhere: str | None = None  # what a user that reached another server than the run's found
        self.no_thread: str | None = None  # a user's thread could not start: the client's limit, in its words
        self.error_messages: dict[int, str] = {}
        self.executors: set[str] = set()
        # the users run on the C executor: one Program for the process's users (its sequences are
        # shared, as the driver path's are), made once the workload is ready (_describe)
        self.described = workload.raw and native.raw_executor
        self.program: Any = None
        self.paced_in_c = False  # the Program waits the paced sessions' pauses itself
        self.options = executor.options(dsn, CONNECT_TIMEOUT)
        self._describing = asyncio.Lock()
        self._gate: asyncio.Event | None = None  # the held users' (resize(hold=True)) until release()
        self.schedule: Any = None  # paced: the arrivals (a _native.Schedule, or a pacing.AsyncSchedule)
        # what users on asyncmy await for each arrival: the Python schedule, or the C one polled
        self._claims: pacing.AsyncSchedule | pacing.NativeClaims | None = None
        self._waiting = 0  # arrivals offered, neither started nor dropped, at the schedule's last take
        self._connecting = asyncio.Semaphore(max(4, CONNECTING // stride))
        limits.allow_many_connections()

    def pace(self, rate: float, poisson: bool = False, queue: int = 0, offset: float = 0.0) -> None:
        """Open loop from now on: `rate` transactions per second offered to this pool's users
        (0: none, they wait), evenly spaced or Poisson; `queue`: arrivals that may wait for a busy
        pool, beyond which they are dropped; `offset`: this process's phase, i/W for worker i of
        W, so that the workers' timelines interleave. Called again, it changes the rate at once.
        The schedule is made at the first call, the C executor's when the users run on it."""
        if self.schedule is None:
            seed = (self.seed * 100_003 + self.offset) & (1 << 64) - 1
            if self.described:
                self.schedule = native.compiled.Schedule(seed)  # type: ignore[union-attr]
                self._claims = pacing.NativeClaims(self.schedule)
                for u in self.users:  # already running closed-loop: open-loop from their next transaction
                    if u.raw is not None:
                        u.raw.core.schedule = self.schedule
            else:
                self.schedule = self._claims = pacing.AsyncSchedule(seed)
        self.schedule.set(rate, poisson, queue, offset)

    def arrivals(self) -> ArrivalStats | None:
        """The schedule's figures since the last call (None: the pool is not paced)."""
        if self.schedule is None:
            return None
        out = ArrivalStats.from_take(self.schedule.take())
        out.waiting_start, self._waiting = self._waiting, out.waiting  # where this take's span began
        return out

    def _wake(self) -> None:
        """Halted users waiting for an arrival on asyncmy leave at once (the C ones wake themselves)."""
        if self._claims is not None:
            self._claims.wake()

    @property
    def active(self) -> int:
        return sum(1 for u in self.users if not u.stop)

    def health(self, completed: int = 0) -> Health:
        """`completed`: transactions measured since the last call (the hot path keeps no clock of its own)."""
        if completed:
            self.last_progress = time.monotonic()
        running = [u for u in self.users if not u.stop]
        return Health(self.connect_failures, time.monotonic() - self.last_progress, self.fatal,
                      dict(self.error_messages), tuple(sorted(self.executors)),
                      sum(u.live for u in running), sum(u.refused and not u.live for u in running), self.connect_error,
                      sum(not u.ever_connected for u in running), self.elsewhere, self.no_thread)

    async def resize(self, n: int, wait: bool = True, hold: bool = False) -> None:
        """`hold`: the new users connect (and prepare) but start no transaction before release().
        Users that start one as soon as they connect load the server while the others are still
        connecting: traced with 3,000 users on 2 cores, once one worker's 1,500 users ran, the other
        worker's prepares took 16 s each (median), whatever the workload."""
        live = [u for u in self.users if not u.stop]
        new: list[_User] = []
        if hold and self._gate is None:
            self._gate = asyncio.Event()
        while len(live) + len(new) < n:
            index = self.offset + self.started * self.stride
            seed = self.seed * 100_003 + index
            rng = random.Random(seed)
            self.started += 1
            u = _User(self.workload.session(rng, index), rng, seed, gate=self._gate if hold else None)
            u.task = asyncio.create_task(self._loop(u), name=f"user-{index}")
            new.append(u)
        self.users.extend(new)
        for u in live[n:]:
            u.halt()
        if live[n:]:
            self._wake()
        self.users = [u for u in self.users if not (u.stop and u.task is not None and u.task.done())]
        if wait and new:
            waiters = [asyncio.create_task(u.connected.wait()) for u in new]
            _, pending = await asyncio.wait(waiters, timeout=60)
            for w in pending:
                w.cancel()

    def release(self) -> None:
        """The held users start their transactions (those still connecting, once connected)."""
        if self._gate is not None:
            self._gate.set()
            self._gate = None

    def cancel_in_flight(self) -> None:
        for u in self.users:
            if u.task:
                u.task.cancel()

    async def stop_all(self, grace: float = 5.0) -> None:
        for u in self.users:
            u.halt()
        self._wake()
        self.release()  # a held user leaves at its gate, halted
        tasks = [u.task for u in self.users if u.task is not None]
        if not tasks:
            return
        _, pending = await asyncio.wait(tasks, timeout=grace)
        for t in pending:
            t.cancel()
        if pending:
            await asyncio.wait(pending, timeout=2)

    async def _describe(self) -> None:
        """The Program, once the workload is ready; a workload that cannot get ready for want of
        its server leaves its users on asyncmy, which meet what stopped it under the error policy."""
        async with self._describing:
            if not self.described or self.program is not None:
                return
            try:
                await self.workload.ready(self.dsn)
            except (TimeoutError, asyncmy.errors.MySQLError, OSError, OtherServer):
                self.described = False
                return
            description = self.workload.statements()
            if description is None:
                self.described = False
                return
            self.program = executor.program(description, self.workload.weights)
            self.options = executor.options(self.dsn, CONNECT_TIMEOUT, description)
            self.paced_in_c = bool(description.pauses)

    async def _loop(self, u: _User) -> None:
        try:
            if self.described and self.program is None:
                await self._describe()
            if self.program is not None and (self.paced_in_c or not u.session.paced):
                if await self._run_native(u):
                    await self._run_driver(u)  # a statement the C executor could not prepare
            else:
                await self._run_driver(u)
        except asyncio.CancelledError:
            raise
        except limits.NoThread as exc:  # the client machine is out of threads: the climb ends here (engine/watch.py)
            # not halted: it still counts among the users asked for, which the stop names
            self.no_thread = self.no_thread or str(exc)
        except Exception as exc:
            # not a MySQL error (a defect in a workload or in bench-dsl): the run must hear of it,
            # not go on counting a user that no longer exists
            u.stop = True
            if self.fatal is None:
                self.fatal = (-1, f"{type(exc).__name__}: {exc}", self.workload.names[u.tx])
        finally:
            u.connected.set()
            u.live = False

    async def _run_native(self, u: _User) -> bool:
        """The user's transactions on the C executor; True when one of its statements cannot be
        prepared, for the driver to meet it and report it under its transaction."""
        nu = NativeUser(self.program, self.recorder.counts, u.seed, self.options, self.schedule, u.session.values)
        u.raw = nu
        backoff = 0.1
        try:
            while not u.stop:
                async with self._connecting:
                    outcome, code, message = await nu.connect()
                if outcome == ELSEWHERE:
                    self._elsewhere(u, other_server(self.dsn, ServerIdentity.shown(message)))
                    return False
                if outcome == ERROR:
                    await self._not_connected(u, code, message, backoff)
                    backoff = min(backoff * 2, 2.0)
                    continue
                backoff = 0.1
                self._now_connected(u)
                if outcome == PREPARE:
                    return True
                self.executors.add(nu.executor)
                u.connected.set()  # ready: its statements prepared too (a resize waits for this)
                if u.gate is not None:
                    await u.gate.wait()
                    u.gate = None  # once: a user that reconnects later goes straight on
                nu.stop = u.stop  # halted while connecting, or at the gate
                retry = False
                while True:
                    outcome, code, message = await nu.run(retry)
                    u.tx = nu.tx
                    if outcome == STOPPED:
                        return False
                    if outcome != ERROR:  # lost, or its ROLLBACK failed: the session is in doubt
                        self._failed(nu.tx, code, message, _NO_MORE_ATTEMPTS)
                        break
                    verdict = self._failed(nu.tx, code, message, nu.attempt)
                    if verdict == RETRY:
                        nu.attempt += 1
                        retry = True
                    elif verdict == NEXT:
                        retry = False
                    else:
                        break
                u.live = False  # and connect again
            return False
        finally:
            u.raw = None
            nu.close()

    async def _not_connected(self, u: _User, code: int, message: str, backoff: float) -> None:
        """A failed connect: counted, remembered, then a pause before the next attempt."""
        self.connect_failures += 1
        self.connect_error = (code, redact(message))
        self._remember(code, message)
        u.refused = True
        u.connected.set()
        await asyncio.sleep(backoff)

    def _elsewhere(self, u: _User, why: str) -> None:
        """A user reached another server than the run's: it stops, and the run with it (engine/watch.py)."""
        u.stop = True
        self.elsewhere = self.elsewhere or redact(why)

    def _now_connected(self, u: _User) -> None:
        u.live, u.refused, u.ever_connected = True, False, True
        self.connect_failures = 0
        self.last_progress = time.monotonic()

    async def _run_driver(self, u: _User) -> None:
        """The user's transactions through asyncmy: statements the C executor could not prepare (TPC-C
        on a server without JSON_TABLE), BENCH_RAWEXEC=0, or a build without the C core."""
        pick = _picker(u.rng, self.workload.weights)
        conn: asyncmy.Connection | None = None
        backoff = 0.1
        rec = self.recorder
        # counted as inside a transaction (bench_dsl.measure.stalls): from its first one until it
        # waits for an arrival or pauses; retrying or reconnecting, it still waits on the server
        inside = False
        try:
            while not u.stop:
                if conn is None:
                    try:
                        async with self._connecting:
                            conn = await asyncio.wait_for(connect(self.dsn, self.dsn.database, timeout=5),
                                                          CONNECT_TIMEOUT)
                    except OtherServer as exc:
                        self._elsewhere(u, str(exc))
                        return
                    except Exception as exc:  # unmeasured: connecting is not part of a transaction
                        why = (f"no greeting or authentication in {CONNECT_TIMEOUT:g}s"
                               if isinstance(exc, asyncio.TimeoutError) else driver_message(exc))
                        await self._not_connected(u, error_code(exc), why, backoff)
                        backoff = min(backoff * 2, 2.0)
                        continue
                    backoff = 0.1
                    self._now_connected(u)
                    self.executors.add("driver")
                    u.connected.set()
                    if u.gate is not None:
                        await u.gate.wait()
                        u.gate = None
                        if u.stop:
                            break
                i = u.tx = 0 if pick is None else pick()
                claims = self._claims
                if claims is not None:
                    # open loop: the arrival replaces a paced session's keying and think time
                    if inside:
                        rec.leave(time.monotonic_ns())
                        inside = False
                    due = await claims.claim(lambda: u.stop)
                    if due is None:
                        break
                    send = time.monotonic_ns()
                    rec.enter(send)
                    inside = True
                    end: int | None = None
                    try:  # the response time runs from the due time
                        conn, end = await self._attempts(u, conn, i, due)
                    finally:
                        claims.done(send, end)
                    continue
                if u.session.paced:
                    if inside:
                        rec.leave(time.monotonic_ns())
                        inside = False
                    await u.session.pause(i)  # keying and think time: not part of the response time
                    if u.stop:
                        break
                t0 = time.monotonic_ns()
                if not inside:
                    rec.enter(t0)
                    inside = True
                conn, _ = await self._attempts(u, conn, i, t0)
        finally:
            if inside:
                rec.leave(time.monotonic_ns())
            if conn is not None:
                close_quietly(conn)

    async def _attempts(self, u: _User, conn: asyncmy.Connection, i: int,
                        t0: int) -> tuple[asyncmy.Connection | None, int | None]:
        """Transaction `i` and its retries, timed from `t0` (time.monotonic_ns): the connection to
        go on with (None: reconnect), and when it completed (None: it failed)."""
        rec = self.recorder
        attempt = 0
        while True:
            try:
                q = await u.session.run(conn, i)
            except IntendedRollback as rb:
                end = time.monotonic_ns()
                rec.ok(i, (end - t0) // 1000, rb.statements)
                rec.rollback(i)
                return conn, end
            except (asyncmy.errors.MySQLError, OSError, EOFError, asyncio.IncompleteReadError) as exc:
                verdict = self._failed(i, error_code(exc), driver_message(exc), attempt, is_connected(conn))
                if verdict == RETRY:
                    attempt += 1
                    continue
                if verdict == RECONNECT:
                    close_quietly(conn)
                    u.live = False
                    u.session.forget()
                    return None, None
                return conn, None
            else:
                end = time.monotonic_ns()
                rec.ok(i, (end - t0) // 1000, q)
                return conn, end

    def _failed(self, i: int, code: int, message: str, attempt: int, connected: bool = True) -> int:
        """Count a failed attempt at transaction `i` and say what comes next: RETRY it, go on with
        the NEXT transaction, or RECONNECT. One policy for both ways of running statements."""
        wl = self.workload
        if code in CONNECTION_LOST or code == -1 or not connected:
            self.recorder.error(i, code if code > 0 else LOST_CONNECTION)
            self._remember(code, message)
            return RECONNECT
        if code in wl.retry_on[i] and attempt < wl.retries[i]:
            self.recorder.retry(i)
            return RETRY
        self.recorder.error(i, code)
        self._remember(code, message)
        if code in SCENARIO_ERRORS and self.fatal is None:
            self.fatal = (code, message, wl.names[i])
        return NEXT

    def _remember(self, code: int, message: str) -> None:
        if code not in self.error_messages:
            self.error_messages[code] = redact(message)

