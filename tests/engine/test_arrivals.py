"""Open-loop arrivals (bench_dsl/native/src/schedule.c's Schedule, bench_dsl/fleet/pacing.py) against a
real server, on both executors: the rate offered is the rate asked, each transaction's response time
runs from its due time, arrivals that find no free user are dropped or queued and counted, waiting
users stop at once, a rate changes while the run goes on, and processes' timelines interleave.
Counts and relations only, with wide margins: accuracy is measured by bench/arrivals.py."""

from __future__ import annotations

import asyncio
import itertools
import os
import resource
import signal
import time
from typing import Any

import pytest

from bench_dsl import native
from bench_dsl.core.dsn import Dsn
from bench_dsl.fleet import pacing
from bench_dsl.fleet.users import UserPool
from bench_dsl.measure.arrivals import ArrivalStats
from bench_dsl.measure.txstats import PERCENTILES, TxStats
from bench_dsl.measure.recorder import Recorder
from bench_dsl.server.embedded import EmbeddedServer
from tests.fakes import HUNG_S, Query, QueryWorkload, wait_until

# both, always: the set-up builds the C executor (scripts/setup.sh installs libmariadb's headers), and a
# suite that skipped it would pass with the executor most runs use untested
EXECUTORS = ["c", "driver"]
NOT_BUILT = "the C executor is not built: scripts/setup.sh builds it (make test runs it)"
# users enough for 500 arrivals a second even when a loaded machine makes a SELECT 1 take 10 ms
USERS = 32
# A wait for something to happen is wait_until (tests/fakes.py), never a fixed sleep. The sleeps left
# here are the load a test measures, or a stall it makes: how long they really lasted is read from the
# clock around them, and the counts are held to that.


async def _drained(pool: UserPool, into: ArrivalStats | None = None) -> ArrivalStats:
    """After `pool.pace(0)`: until nothing is in flight, nothing waits for a user, and nothing started
    since the last look (an arrival due before the rate went to 0 may start after it), as the run's
    own drain waits; the takes meanwhile merged into `into` (or a new one), which is returned."""
    out = into if into is not None else ArrivalStats()

    def drained() -> bool:
        take = pool.arrivals()
        assert take is not None
        out.merge(take)
        return take.busy == 0 and take.waiting == 0 and take.started == 0

    await wait_until("the arrivals in flight to complete", drained)
    return out


@pytest.fixture(params=EXECUTORS)
def executor(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    assert request.param != "c" or native.compiled is not None, NOT_BUILT
    monkeypatch.setattr(native, "raw_executor", request.param == "c")
    return str(request.param)


async def _pool(dsn: Dsn, users: int, sql: str = "SELECT 1") -> tuple[UserPool, Recorder]:
    """A paced pool (rate 0: its users connect, then wait) of `users` users."""
    rec = Recorder(("t",))
    pool = UserPool(dsn, QueryWorkload(sql), rec, 1)  # type: ignore[arg-type]
    pool.pace(0)
    await pool.resize(users)
    assert pool.health().connected == users
    return pool, rec


async def _paced(pool: UserPool, rate: float, seconds: float, **how: Any) -> tuple[ArrivalStats, float, float]:
    """`rate` for `seconds` (the load measured: a slow machine makes it last longer), then no more
    arrivals: what the schedule counted, and the seconds it ran at least and at most (the clock read
    just inside and just outside the two rate changes: this process may be preempted between a
    change and a reading of the clock, and the count is held to the span it surely covers)."""
    before = time.monotonic()
    pool.pace(rate, **how)
    start = time.monotonic()
    await asyncio.sleep(seconds)
    end = time.monotonic()
    pool.pace(0)
    after = time.monotonic()
    stats = pool.arrivals()
    assert stats is not None
    return stats, end - start, after - before


async def test_a_steady_rate_is_offered_and_timed_from_the_due_time(server: tuple[Dsn, object],
                                                                      executor: str) -> None:
    for _ in range(3):
        pool, rec = await _pool(server[0], USERS)
        try:
            assert pool.arrivals() is not None
            rec.swap()
            a, least, most = await _paced(pool, 500, 2.0)
            await _drained(pool, a)  # the last ones complete
            tx = rec.swap()["t"]
        finally:
            await pool.stop_all(2.0)
        a.merge(pool.arrivals())  # type: ignore[arg-type]  # the service times of the last ones
        # this process starved for a second or more by the suite's other processes (seen once in a
        # fresh-clone CI: a SELECT 1 took 63 ms on average, 855 of 1,481 arrivals dropped) measures
        # the machine, not the schedule: such a run is run again
        if a.dropped <= 0.05 * a.offered:
            break
    assert 500 * least * 0.95 <= a.offered <= 500 * most * 1.05, (a.offered, least, most)
    # every arrival started, dropped, or still waiting for a user when the pacing stopped (one was, in
    # a soak round beside four busy loops)
    assert a.started + a.dropped + a.waiting - a.waiting_start == a.offered, a
    assert a.dropped <= 0.05 * a.offered, a  # a loaded machine may drop a few
    assert tx.count == a.started and a.service.get_total_count() == tx.count == a.lag.get_total_count()
    # response = service + lag, transaction by transaction: so at every percentile
    for p in PERCENTILES:
        assert tx.hist.get_value_at_percentile(p) >= a.service.get_value_at_percentile(p)
    assert tx.total_us >= a.service_us + a.lag_us - tx.count  # each rounded down to the microsecond
    assert a.lag.get_value_at_percentile(50) < 20_000  # microseconds
    assert a.queue_wait.get_total_count() <= 0.05 * a.offered and a.queued_max <= 0.05 * a.offered
    figures = a.figures(most)
    assert figures["lag_ms"]["p50"] < 20


async def test_poisson_arrivals_offer_the_same_count(server: tuple[Dsn, object], executor: str) -> None:
    for _ in range(3):  # run again when this process starved (see the steady rate's test above)
        pool, _ = await _pool(server[0], USERS)
        try:
            a, least, most = await _paced(pool, 500, 2.0, poisson=True)
        finally:
            await pool.stop_all(2.0)
        if a.started >= 0.8 * a.offered:
            break
    assert 500 * least * 0.85 <= a.offered <= 500 * most * 1.15, (a.offered, least, most)
    assert a.started + a.dropped >= a.offered - USERS and a.started >= 0.8 * a.offered


async def test_a_slow_server_drops_what_no_user_is_free_for(server: tuple[Dsn, object], executor: str) -> None:
    """One user, 50 ms a transaction, 100 arrivals a second: it can start about 20 of them a second;
    the others are dropped, and counted. With `queue 5` the queue fills to 5, and its waits show."""
    pool, rec = await _pool(server[0], 1, "SELECT SLEEP(0.05)")
    try:
        a, _, _ = await _paced(pool, 100, 2.0)
        await _drained(pool, a)
        rec.swap()
        q, _, _ = await _paced(pool, 100, 2.0, queue=5)
        await _drained(pool, q)  # the queue's too
        slow = rec.swap()["t"]
    finally:
        await pool.stop_all(2.0)
    assert a.offered >= 150 and a.started <= 0.3 * a.offered + 2, a
    assert a.dropped >= 0.6 * a.offered and a.started + a.dropped + a.waiting - a.waiting_start == a.offered
    assert a.queued_max == 0 and a.queue_wait.get_total_count() <= 2
    assert q.queued_max == 5 and q.dropped >= 0.5 * q.offered, q
    assert q.queue_wait.get_total_count() >= 10
    assert q.queue_wait.get_value_at_percentile(50) >= 40_000  # waited behind 50 ms transactions
    # what waited in the queue waited in the response time too
    assert slow.hist.get_value_at_percentile(50) >= q.queue_wait.get_value_at_percentile(50)


async def test_users_waiting_for_an_arrival_stop_at_once(server: tuple[Dsn, object], executor: str) -> None:
    pool, _ = await _pool(server[0], 4)
    pool.pace(0.05)  # an arrival every 20 s

    def all_waiting() -> bool:
        take = pool.arrivals()
        return take is not None and take.idle == 4 and take.busy == 0

    await wait_until("every user waiting for an arrival", all_waiting)
    # a user that waited for the next arrival instead (20 s away, or due now and served) would still
    # be at it when the grace ran out, and be cancelled: none is, however long the stop took
    await pool.stop_all(10.0)
    assert all(u.task is not None and u.task.done() and not u.task.cancelled() for u in pool.users)


async def test_a_new_rate_applies_from_the_moment_it_is_set(server: tuple[Dsn, object], executor: str) -> None:
    pool, _ = await _pool(server[0], USERS)
    try:
        # the clock read on either side of each change: the counts are held to the spans they surely cover
        t0 = time.monotonic()
        pool.pace(200)
        t0b = time.monotonic()
        await asyncio.sleep(1.0)  # the load measured: t0..t1 says how long it really lasted
        t1 = time.monotonic()
        low = pool.arrivals()
        pool.pace(600)
        t1b = time.monotonic()
        await asyncio.sleep(1.0)  # the load measured: t1..t2 says how long it really lasted
        t2 = time.monotonic()
        high = pool.arrivals()
        t2b = time.monotonic()
    finally:
        await pool.stop_all(2.0)
    assert low is not None and high is not None
    assert 0.9 * 200 * (t1 - t0b) - 5 <= low.offered <= 1.1 * 200 * (t1b - t0) + 5, (low.offered, t0, t0b, t1, t1b)
    assert 0.9 * 600 * (t2 - t1b) - 5 <= high.offered <= 1.1 * 600 * (t2b - t1) + 5, (high.offered, t1, t1b, t2, t2b)


async def test_an_arrival_wakes_only_the_user_that_serves_it(server: tuple[Dsn, object],
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """On the C executor each idle user sleeps until the due time of the arrival it claimed: an
    arrival costs its user two sleeps, until its due time and until its reply, as a closed-loop
    transaction costs one. (A leader woken at each due time, which then woke a follower to lead,
    cost about three, and each is tens of microseconds of CPU on a virtual machine.) Counted over
    the whole process: the event loop's own sleeps are a few in the window."""
    assert native.compiled is not None, NOT_BUILT
    monkeypatch.setattr(native, "raw_executor", True)
    pool, _ = await _pool(server[0], USERS)
    try:
        before = resource.getrusage(resource.RUSAGE_SELF).ru_nvcsw
        a, _, _ = await _paced(pool, 500, 2.0)
        switches = resource.getrusage(resource.RUSAGE_SELF).ru_nvcsw - before
    finally:
        await pool.stop_all(2.0)
    assert a.started >= 500, a
    assert switches / a.started < 2.4, f"{switches / a.started:.2f} sleeps per arrival"  # measured 1.95


async def _dues(schedule: Any, n: int, since: int) -> list[int]:
    """The first `n` due times from `since` on (time.monotonic_ns()) a schedule gives one claimer:
    counted, not timed (a starved claimer claims late, and its schedule's grace keeps a late claim
    from being a drop); those due before `since`, claimed and left out."""
    out: list[int] = []
    claims = pacing.NativeClaims(schedule) if not isinstance(schedule, pacing.AsyncSchedule) else schedule
    while len(out) < n:
        due = await claims.claim(lambda: False)
        assert due is not None
        if due >= since:
            out.append(due)
        claims.done(due, due)
    return out


@pytest.mark.parametrize("kind", EXECUTORS)
async def test_processes_with_offsets_interleave(kind: str) -> None:
    """Two schedules at R/2 each, offsets 0 and 0.5, started at different moments: their due times
    alternate, half a gap apart."""
    make = native.compiled.Schedule if kind == "c" else pacing.AsyncSchedule  # type: ignore[union-attr]
    # a late claim is never a drop here: a machine that froze the claimers for seconds loses none
    first, second = make(1, grace=600.0), make(2, grace=600.0)
    first.set(50, offset=0.0)
    await asyncio.sleep(0.013)  # not a wait for anything: the two start at different moments
    second.set(50, offset=0.5)
    both = time.monotonic_ns()  # from here on both run, however late a busy machine set the second
    a, b = await asyncio.gather(_dues(first, 20, both), _dues(second, 20, both))
    _interleaved(a, b, 10_000_000)  # ns: 100 a second together
    # a new rate, taken by each at its own moment (as a step's by worker processes): still interleaved
    first.set(100, offset=0.0)
    await asyncio.sleep(0.007)
    second.set(100, offset=0.5)
    both = time.monotonic_ns()
    a, b = await asyncio.gather(_dues(first, 20, both), _dues(second, 20, both))
    _interleaved(a, b, 5_000_000)


def _interleaved(a: list[int], b: list[int], gap_ns: int) -> None:
    lo, hi = max(a[0], b[0]), min(a[-1], b[-1])  # where both ran
    merged = sorted([(d, 0) for d in a if lo <= d <= hi] + [(d, 1) for d in b if lo <= d <= hi])
    assert len(merged) >= 30
    assert all(x[1] != y[1] for x, y in itertools.pairwise(merged))
    gaps = [y[0] - x[0] for x, y in itertools.pairwise(merged)]
    assert all(abs(g - gap_ns) < 1_000 for g in gaps), gaps


async def test_the_c_schedule_reaches_users_already_running_closed_loop(server: tuple[Dsn, object]) -> None:
    assert native.compiled is not None, NOT_BUILT
    rec = Recorder(("t",))
    pool = UserPool(server[0], QueryWorkload("SELECT 1"), rec, 1)  # type: ignore[arg-type]
    try:
        await pool.resize(2)
        await wait_until("the users running closed loop", lambda: rec.swap()["t"].count > 0)
        pool.pace(100)

        def reached() -> bool:
            take = pool.arrivals()
            return take is not None and take.started > 0

        await wait_until("an arrival started", reached)
        rec.swap()
        pool.arrivals()
        start = time.monotonic()
        await asyncio.sleep(1.0)  # the load measured: a slow machine makes it longer, and the bound with it
        count = rec.swap()["t"].count
        a = pool.arrivals()
        took = time.monotonic() - start
    finally:
        await pool.stop_all(2.0)
    # what ran is what the schedule started (a user still in its closed loop's last transaction at the
    # take: one each), never more than the rate offered (closed loop, two users run thousands a second)
    assert a is not None and 1 <= count <= 100 * took * 1.1 + 5 and abs(a.started - count) <= 2, (count, took, a)


def _slower_than_1s(st: TxStats) -> int:
    return sum(item.count_at_value_iterated_to for item in st.hist.get_recorded_iterator()
               if item.value_iterated_to >= 1_000_000)


async def _frozen(srv: EmbeddedServer, dsn: Dsn, rate: float | None) -> tuple[TxStats, float]:
    """8 users, at `rate` with room to queue everything (None: closed loop), while the server is
    stopped for 2 s: every transaction's latency, and how long the stop lasted."""
    rec = Recorder(("t",))
    pool = UserPool(dsn, QueryWorkload("SELECT 1"), rec, 1)  # type: ignore[arg-type]
    if rate is not None:
        pool.pace(0)
    await pool.resize(8)
    try:
        if rate is not None:
            pool.pace(rate, queue=10_000)
        await asyncio.sleep(0.5)  # the load before the stop: what it is is no part of the count
        pid = srv.pid
        assert pid is not None
        os.kill(pid, signal.SIGSTOP)
        stopped = time.monotonic()
        try:
            await asyncio.sleep(2.0)  # the stall measured: `stopped` says how long it really was
        finally:
            os.kill(pid, signal.SIGCONT)
            stopped = time.monotonic() - stopped
        await asyncio.sleep(1.0)  # answers again, for a while (not a wait: the drain or the stop below waits)
        if rate is not None:
            pool.pace(0)
            await _drained(pool)  # every arrival of the stall answered and recorded
        # (closed loop, the stop below waits for each user's transaction)
    finally:
        await pool.stop_all(5.0)
    return rec.swap()["t"], stopped


@pytest.mark.alone  # the count is held within 15%: a late drain on a busy machine adds rate x its delay
@pytest.mark.slow
async def test_a_stalled_server_shows_in_response_times_not_one_per_user(executor: str) -> None:
    """Coordinated omission: the server stopped 2 s. At 200 a second, the arrivals due in the
    first second of the stall wait more than 1 s each (about 200 of them); closed-loop, each of the
    8 users records one slow transaction, and the stall is all but hidden (the same on either
    executor: once, on the C one)."""
    srv = EmbeddedServer(max_connections=50)
    dsn = await srv.start()
    try:
        open_loop, stopped = await _frozen(srv, dsn, 200.0)
        closed_loop = None if executor != "c" else (await _frozen(srv, dsn, None))[0]
    finally:
        srv.stop()
    # due in the stop's first (stopped - 1) s, each waited over 1 s: the "rate x 1 s, within 15%"
    expected = 200.0 * (stopped - 1.0)
    assert abs(_slower_than_1s(open_loop) - expected) <= 0.15 * expected, (_slower_than_1s(open_loop), stopped)
    if closed_loop is not None:
        assert _slower_than_1s(closed_loop) <= 8


async def test_users_waiting_for_their_arrivals_are_no_stall_users_held_by_a_lock_are(server: tuple[Dsn, object],
                                                                                       executor: str) -> None:
    """At 0.75 a second no transaction completes for 1.3 s at a time, while both users wait for
    their arrivals: no stall (the run called 92% of a 0.5 tps step frozen, issue 38). A table
    locked by the test holds the next arrival's user inside its transaction: a stall from its send
    until the lock is released, as the users' processes say it (bench_dsl.measure.stalls)."""
    from bench_dsl.measure.stalls import Stalls, quiet_spans
    from bench_dsl.server.connect import connect
    from tests.conftest import run_sql

    dsn = server[0]
    await run_sql(dsn, None, "CREATE DATABASE IF NOT EXISTS stall_lock",
                  "CREATE OR REPLACE TABLE stall_lock.t (n INT)", "INSERT INTO stall_lock.t VALUES (1)")
    pool, rec = await _pool(dsn, 2, "SELECT COUNT(*) FROM stall_lock.t")
    lock = await connect(dsn, None)
    seen = ArrivalStats()

    def served(n: int) -> Any:
        """Whether `n` arrivals have started since `seen` was reset, and no user is in a transaction."""
        def check() -> bool:
            take = pool.arrivals()
            assert take is not None
            seen.merge(take)
            return seen.started >= n and take.busy == 0
        return check

    def held_by_the_lock() -> bool:
        take = pool.arrivals()
        return take is not None and take.busy >= 1

    try:
        rec.swap()
        start = time.monotonic()
        pool.pace(0.75)
        await wait_until("three arrivals served", served(3))  # two gaps of 1.33 s between completions
        served_tx = rec.swap()["t"]
        idle = rec.quiet()
        waiting = Stalls.of(quiet_spans([idle], start, idle.at))
        async with lock.cursor() as cur:
            await cur.execute("LOCK TABLES stall_lock.t WRITE")
            locked = time.monotonic()
            await wait_until("an arrival's user held by the lock", held_by_the_lock)
            await asyncio.sleep(1.2)  # the stall measured: held this long at least, longer on a slow machine
            rec.swap()
            held = rec.quiet()
            await cur.execute("UNLOCK TABLES")
        pool.pace(0)
    finally:
        lock.close()
        await pool.stop_all(HUNG_S)  # the held transaction completes first, however slow the machine
    assert rec.swap()["t"].count >= 1  # the held transaction completed once the lock went
    # no wait for an arrival is a stall: what is left is a transaction's own time, none of it longer than
    # the transaction took from its due time (a SELECT answered in 70 ms by a loaded machine is a 70 ms
    # gap with a user inside; a wait for the next arrival would be some 1.3 s with none)
    assert served_tx.count >= 3
    assert waiting.longest_s <= served_tx.hist.get_max_value() / 1e6 + 0.002, (waiting, served_tx.hist.get_max_value())
    assert waiting.total_s <= served_tx.total_us / 1e6 + 0.002, (waiting, served_tx.total_us)
    frozen = Stalls.of(quiet_spans([held], locked, held.at))
    assert frozen.longest_s >= 1.0 and frozen.longest is not None and frozen.longest[1] == held.at, frozen


class _Thinking(Query):
    """A session with a think time before each transaction, as TPC-C's terminals have; counts the
    transactions it completes."""

    paced = True
    completed = 0  # by every session

    async def pause(self, tx: int) -> None:
        await asyncio.sleep(1.4)  # the think time under test (the test waits for completions, not for this)

    async def run(self, conn: Any, tx: int) -> int:
        out = await super().run(conn, tx)
        _Thinking.completed += 1
        return out


class _ThinkingWorkload(QueryWorkload):
    def session(self, rng: Any, user: int) -> Query:
        return _Thinking(self.sql)


async def test_users_in_their_think_time_are_no_stall(server: tuple[Dsn, object]) -> None:
    """Closed loop, paced (on asyncmy, as TPC-C's keying and think times are): two users each finish
    a transaction every 1.4 s, and nothing completes in between while both think. No stall."""
    from bench_dsl.measure.stalls import Stalls, quiet_spans

    rec = Recorder(("t",))
    pool = UserPool(server[0], _ThinkingWorkload("SELECT 1"), rec, 1)  # type: ignore[arg-type]
    _Thinking.completed = 0
    try:
        await pool.resize(2)
        rec.swap()
        start = time.monotonic()
        first = _Thinking.completed
        # each user through two think times at least (counted, not timed), then the take
        await wait_until("two think times of each user", lambda: _Thinking.completed >= first + 4)
        ran = rec.swap()["t"]
        quiet = rec.quiet()
    finally:
        await pool.stop_all(3.0)
    thinking = Stalls.of(quiet_spans([quiet], start, quiet.at))
    # what is left is the transactions' own time (a loaded machine's slow SELECT 1 is a gap with a user
    # inside), never a think time's 1.4 s
    assert thinking.longest_s <= ran.hist.get_max_value() / 1e6 + 0.002, (thinking, ran.hist.get_max_value())
    assert thinking.total_s <= ran.total_us / 1e6 + 0.002, (thinking, ran.total_us)
