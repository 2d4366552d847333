"""The C executor (bench_dsl/native/src/, executor.py) against a real server: what it counts is what
the server did, failures inside a transaction are rolled back, results of any size and procedures'
many results are read, a killed connection is reported, the GIL is not needed to run, and values
are reproducible from the seed."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from bench_dsl import native
from bench_dsl.core import limits
from bench_dsl.core.dsn import Dsn
from bench_dsl.fleet import users
from bench_dsl.language.statements import Draw, Execute, StatementStep, Transaction, Transactions
from bench_dsl.measure.recorder import new_counts
from bench_dsl.native import executor
from bench_dsl.native.executor import ERROR, LOST, PREPARE, STOPPED, NativeUser
from bench_dsl.server.connect import connect, ensure_database
from tests.conftest import run_bench, run_sql
from tests.fakes import HUNG_S, wait_until


@pytest.fixture
async def db(server: tuple[Dsn, object]) -> Dsn:
    dsn = server[0]
    await ensure_database(dsn)
    conn = await connect(dsn, dsn.database)
    try:
        async with conn.cursor() as cur:
            await cur.execute("DROP TABLE IF EXISTS ex_t")
            await cur.execute("CREATE TABLE ex_t (id INT PRIMARY KEY, k INT NOT NULL, c VARCHAR(200) NOT NULL)")
            await cur.execute("INSERT INTO ex_t SELECT seq, 0, REPEAT('x', 120) FROM seq_1_to_6000")
    finally:
        conn.close()
    return dsn


async def _scalar(dsn: Dsn, sql: str) -> object:
    conn = await connect(dsn, dsn.database)
    try:
        async with conn.cursor() as cur:
            await cur.execute(sql)
            row = await cur.fetchone()
            return row[0] if row else None
    finally:
        conn.close()


async def _in_sleep(dsn: Dsn, ident: int) -> bool:
    """Whether connection `ident` is inside its SELECT SLEEP, as the server sees it."""
    return bool(await _scalar(dsn, "SELECT COUNT(*) FROM information_schema.PROCESSLIST "
                                   f"WHERE ID = {ident} AND INFO LIKE 'SELECT SLEEP%'"))


def _one(sql: str, *draws: Draw, params: tuple[tuple[int, int], ...] = ((0, 0),), explicit: bool = False,
         more: tuple[Execute, ...] = ()) -> Transaction:
    return Transaction((StatementStep(1, 1, draws, (Execute((sql,), params),) + more),), explicit)


def _user(dsn: Dsn, transactions: Transactions, weights: tuple[float, ...] = (1.0,), seed: int = 1) -> NativeUser:
    prog = executor.program(transactions, weights)
    return NativeUser(prog, new_counts(len(weights)), seed, executor.options(dsn, 10))


async def _run_for(u: NativeUser, seconds: float) -> tuple[int, int, str]:
    """Run `u` until stopped after `seconds`: for what must end, whatever happens (an error, a hang)."""
    return await _run_until(u, lambda: False, seconds)


async def _run_until(u: NativeUser, enough: Callable[[], bool], within: float = 60.0) -> tuple[int, int, str]:
    """Run `u` until `enough()` holds (or `within` seconds have passed): the tests count what was
    done, not what a time allowed (the suite shares two cores; a loaded machine did 2 of 20 MB
    results in 1.5 s)."""
    async def later() -> None:
        deadline = time.monotonic() + within
        while not enough() and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        u.stop = True
    stopper = asyncio.create_task(later())
    try:
        return await u.run(False)
    finally:
        stopper.cancel()


async def test_counted_transactions_are_what_the_server_did(db: Dsn) -> None:
    """Every transaction counted is one the server committed, with its statements (BEGIN and COMMIT
    included); the values come from the draws."""
    counts = new_counts(2)
    tx = Transactions((
        _one("SELECT c FROM ex_t WHERE id = ?", Draw("uniform", (1, 6000))),
        Transaction((StatementStep(1, 1, (Draw("randstr", (5, 9)), Draw("const", (1,))),
                          (Execute(("UPDATE ex_t SET k = k + 1, c = ? WHERE id = ?",), ((0, 0), (1, 0))),)),), True),
    ))
    u = NativeUser(executor.program(tx, (3.0, 1.0)), counts, 7, executor.options(db, 10))
    try:
        assert (await u.connect())[0] == 0
        assert await _run_until(u, lambda: u.completed >= 200) == (STOPPED, 0, "")
    finally:
        u.close()
    (sel, sel_q), (upd, upd_q) = [(n, q) for _, n, q, _, _ in counts.take()]
    assert sel > 50 and upd > 10 and sel_q == sel and upd_q == 3 * upd
    assert 2 < sel / upd < 4.5  # weights 3:1
    k, c = await _scalar(db, "SELECT k FROM ex_t WHERE id = 1"), await _scalar(db, "SELECT c FROM ex_t WHERE id = 1")
    assert k == upd and 5 <= len(str(c)) <= 9 and str(c).isalnum()


async def test_a_failed_statement_rolls_its_transaction_back(db: Dsn) -> None:
    """A duplicate key inside BEGIN ... COMMIT: reported with the server's code and message, and the
    transaction's first statement is rolled back before anything else."""
    tx = Transactions((_one("UPDATE ex_t SET k = k + 1 WHERE id = ?", Draw("const", (2,)), explicit=True,
                            more=(Execute(("INSERT INTO ex_t VALUES (?, 0, 'dup')",), ((0, 0),)),)),))
    u = _user(db, tx)
    try:
        assert (await u.connect())[0] == 0
        outcome, code, message = await u.run(False)
        assert (outcome, code) == (ERROR, 1062) and "Duplicate entry" in message and u.tx == 0
        outcome, code, _ = await u.run(False)  # next transaction: the session is usable
        assert (outcome, code) == (ERROR, 1062)
    finally:
        u.close()
    assert await _scalar(db, "SELECT k FROM ex_t WHERE id = 2") == 0


async def test_results_of_any_size_are_read_to_their_end(db: Dsn) -> None:
    """Rows are never looked at, but every result is read: 6,000 rows of 120 characters (0.7 MB)
    and one of 20 MB, then a point select on the same connection, in step."""
    conn = await connect(db, None)
    try:
        async with conn.cursor() as cur:
            await cur.execute("SET GLOBAL max_allowed_packet = 64 * 1024 * 1024")
    finally:
        conn.close()
    tx = Transactions((
        _one("SELECT c FROM ex_t WHERE id >= ?", Draw("const", (1,))),
        _one("SELECT REPEAT('y', ?)", Draw("const", (20 * 1024 * 1024,))),
        _one("SELECT c FROM ex_t WHERE id = ?", Draw("const", (3,))),
    ))
    u = _user(db, tx, (1.0, 1.0, 1.0))
    try:
        assert (await u.connect())[0] == 0
        assert await _run_until(u, lambda: u.completed > 3) == (STOPPED, 0, "")
        assert u.completed > 3
    finally:
        u.close()


async def test_an_error_after_rows_were_sent_is_the_statements_error(db: Dsn) -> None:
    """The server fails a statement after it has sent rows (a scalar subquery with two rows at the
    5,000th row): the rows are read and dropped, the error is reported with its code and message,
    and the connection goes on in step."""
    await run_sql(db, db.database, "DROP TABLE IF EXISTS ex_two",
                  "CREATE TABLE ex_two (id INT NOT NULL)", "INSERT INTO ex_two VALUES (5000), (5000)")
    tx = Transactions((_one("SELECT id, (SELECT id FROM ex_two WHERE ex_two.id = ex_t.id) FROM ex_t "
                            "WHERE id >= ? ORDER BY id", Draw("const", (1,))),))
    u = _user(db, tx)
    try:
        assert (await u.connect())[0] == 0
        for _ in range(2):
            outcome, code, message = await _run_for(u, 10.0)  # a missed error: STOPPED, not a hang
            assert (outcome, code) == (ERROR, 1242) and "more than 1 row" in message
            u.stop = False
        assert u.completed == 0
    finally:
        u.close()


async def test_a_procedure_with_results_keeps_the_loop_in_step(db: Dsn) -> None:
    """CALL of a procedure that selects twice sends two results, then its own OK."""
    await run_sql(db, db.database, "DROP PROCEDURE IF EXISTS ex_p",
                  "CREATE PROCEDURE ex_p(IN x INT) BEGIN SELECT c FROM ex_t WHERE id = x; "
                  "SELECT k FROM ex_t WHERE id BETWEEN x AND x + 50; UPDATE ex_t SET k = k + 1 WHERE id = 7; END")
    tx = Transactions((_one("CALL ex_p(?)", Draw("const", (1,)),
                            more=(Execute(("SELECT id FROM ex_t WHERE id = ?",), ((0, 1),)),)),))
    u = _user(db, tx)
    try:
        assert (await u.connect())[0] == 0
        assert await _run_until(u, lambda: u.completed > 10) == (STOPPED, 0, "")
        done = u.completed
    finally:
        u.close()
    assert done > 10 and await _scalar(db, "SELECT k FROM ex_t WHERE id = 7") == done


async def test_a_killed_connection_is_reported_lost(db: Dsn) -> None:
    # SELECT SLEEP(0.05): statements the KILL mostly lands inside (the server's time, under test; no wait)
    tx = Transactions((_one("SELECT SLEEP(?)", Draw("const", (0.05,))),))
    u = _user(db, tx)
    try:
        assert (await u.connect())[0] == 0
        ident = int(u.core.query_value("SELECT CONNECTION_ID()"))
        running = asyncio.ensure_future(u.run(False))
        await wait_until("the user's transactions running", lambda: u.completed > 0)
        conn = await connect(db, None)
        try:
            async with conn.cursor() as cur:
                await cur.execute(f"KILL {ident}")
        finally:
            conn.close()
        outcome, code, message = await asyncio.wait_for(running, 10)
        assert outcome in (ERROR, LOST) and code in (1927, 2013, 2006), (outcome, code, message)
        assert code in users.CONNECTION_LOST
    finally:
        u.close()


async def test_closing_while_running_wakes_the_thread_and_closes(db: Dsn) -> None:
    """A user cancelled in a long statement: its socket is shut down, the thread leaves its call,
    and the server sees the connection go."""
    tx = Transactions((_one("SELECT SLEEP(?)", Draw("const", (30,))),))
    u = _user(db, tx)
    assert (await u.connect())[0] == 0
    ident = int(u.core.query_value("SELECT CONNECTION_ID()"))
    task = asyncio.ensure_future(u.run(False))
    # the SELECT SLEEP(30) is what is under test: a statement the user is inside when it is cancelled
    await wait_until("the user inside its SELECT SLEEP(30)", lambda: _in_sleep(db, ident))
    task.cancel()
    u.close()

    async def gone() -> bool:
        return not await _scalar(db, f"SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = {ident}")

    await wait_until("the server to see the cancelled user's connection go", gone)


async def test_a_statement_that_cannot_be_prepared_is_left_to_the_driver(db: Dsn) -> None:
    u = _user(db, Transactions((_one("SELECT nope FROM ex_t WHERE id = ?", Draw("const", (1,))),)))
    try:
        outcome, code, message = await u.connect()
        assert (outcome, code) == (PREPARE, 1054) and "nope" in message
    finally:
        u.close()


async def test_users_run_while_the_gil_is_held(db: Dsn) -> None:
    """The loop needs no GIL: transactions complete while this thread holds it. A busy loop in Python
    that never releases it holds it until another thread has asked for it for a whole switch interval:
    the interval is raised above the loop's deadline, so that no thread is given it meanwhile. The loop
    ends as soon as 20 transactions completed (counted, not timed: a loaded machine only takes longer)."""
    import sys

    u = _user(db, Transactions((_one("SELECT c FROM ex_t WHERE id = ?", Draw("uniform", (1, 6000))),)))
    assert (await u.connect())[0] == 0
    running = asyncio.ensure_future(u.run(False))
    await wait_until("the user's transactions running", lambda: u.core.completed > 0)
    old = sys.getswitchinterval()
    sys.setswitchinterval(2 * HUNG_S)
    try:
        before = u.core.completed
        deadline = time.monotonic() + HUNG_S  # reached only when the user needs the GIL: the test fails
        while u.core.completed - before < 20 and time.monotonic() < deadline:
            pass  # the GIL held: this loop is what is under test, not a wait to replace
        during = u.core.completed - before
    finally:
        sys.setswitchinterval(old)
        u.stop = True
    assert (await running)[0] == STOPPED
    u.close()
    assert during >= 20, f"{during} transactions in {HUNG_S:g} s while this thread held the GIL"


async def test_the_same_seed_draws_the_same_values(db: Dsn) -> None:
    """Values are reproducible from the seed: two users with one seed insert the same rows."""
    await run_sql(db, db.database, "CREATE OR REPLACE TABLE ex_seed (user INT, n INT AUTO_INCREMENT, a BIGINT, b VARCHAR(20), "
                  "c DOUBLE, PRIMARY KEY (user, n)) ENGINE=MyISAM")
    draws = (Draw("zipf", (1, 1000, 1.1)), Draw("randstr", (3, 12)), Draw("uniform_real", (0.0, 1.0)))
    for who in (1, 2):
        tx = Transactions((Transaction((StatementStep(1, 1, (Draw("const", (who,)),) + draws, (Execute(
            ("INSERT INTO ex_seed (user, a, b, c) VALUES (?, ?, ?, ?)",), ((0, 0), (1, 0), (2, 0), (3, 0))),)),), False),))
        u = _user(db, tx, seed=12345)
        assert (await u.connect())[0] == 0
        await _run_until(u, lambda: u.completed > 25)
        u.close()
    first = await _scalar(db, "SELECT MIN(n) FROM (SELECT MAX(n) n FROM ex_seed GROUP BY user) m")
    same = await _scalar(db, f"SELECT COUNT(*) FROM ex_seed x JOIN ex_seed y ON x.n = y.n AND x.user = 1 AND y.user = 2 "
                             f"AND x.a = y.a AND x.b = y.b AND x.c = y.c WHERE x.n <= {first}")
    assert int(first) > 20 and same == first  # type: ignore[arg-type]
    assert native.compiled.sample(("uniform", 1, 10**9), 5, 50) == native.compiled.sample(("uniform", 1, 10**9), 5, 50)
    assert native.compiled.sample(("uniform", 1, 10**9), 5, 50) != native.compiled.sample(("uniform", 1, 10**9), 6, 50)


async def test_deadlocks_roll_back_and_retry_and_every_ok_is_committed(db: Dsn) -> None:
    """Eight users each updating two of four rows in either order: real deadlocks (1213), each
    rolled back before the retry; every transaction counted is one the server kept (two
    increments each), and none more."""
    await run_sql(db, db.database, "CREATE OR REPLACE TABLE ex_dl (id INT PRIMARY KEY, v BIGINT NOT NULL)",
                  "INSERT INTO ex_dl VALUES (1, 0), (2, 0), (3, 0), (4, 0)")
    upd = "UPDATE ex_dl SET v = v + 1 WHERE id = ?"
    tx = Transactions((Transaction((StatementStep(1, 1, (Draw("uniform", (1, 4)), Draw("uniform", (1, 4))),
                                         (Execute((upd,), ((0, 0),)), Execute((upd,), ((1, 0),)))),), True),))
    prog = executor.program(tx, (1.0,))
    counts = new_counts(1)
    errors: list[tuple[int, int]] = []

    async def one(n: int) -> None:
        u = NativeUser(prog, counts, n, executor.options(db, 10))
        assert (await u.connect())[0] == 0
        retry = False
        end = time.monotonic() + 2.0
        try:
            while time.monotonic() < end:
                u.stop = False
                stopper = asyncio.get_running_loop().call_later(0.2, setattr, u, "stop", True)
                outcome, code, _ = await u.run(retry)
                stopper.cancel()
                if outcome == STOPPED:
                    retry = False
                    continue
                assert (outcome, code) == (ERROR, 1213)
                errors.append((code, u.attempt))
                retry = u.attempt < 3
                u.attempt = u.attempt + 1 if retry else 0
        finally:
            u.close()

    await asyncio.wait_for(asyncio.gather(*(one(n) for n in range(8))), 60)
    done = sum(n for _, n, _, _, _ in counts.take())
    assert errors and any(attempt > 0 for _, attempt in errors)  # deadlocks, retried again
    assert await _scalar(db, "SELECT SUM(v) FROM ex_dl") == 2 * done


def test_a_program_is_checked_when_built() -> None:
    bad = [
        (Transactions((_one("SELECT ?", Draw("uniform", (5, 1))),)), "minimum is larger"),
        (Transactions((_one("SELECT ?", Draw("nope", (1,))),)), "no draw named nope"),
        (Transactions((_one("SELECT ?", Draw("uniform", (1,))),)), "takes 2 arguments"),
        (Transactions((_one("SELECT ?", Draw("uniform", (1, 2)), params=((3, 0),)),)), "no such draw"),
        (Transactions((Transaction((StatementStep(1, 2, (), (Execute(("SELECT 1",), ()),)),), False),)), "one statement per table"),
        (Transactions((Transaction((StatementStep(0, 1, (), (Execute(("SELECT 1",), ()),)),), False),)), "executes nothing"),
    ]
    for tx, message in bad:
        with pytest.raises((ValueError, IndexError), match=message):
            executor.program(tx, (1.0,))
    with pytest.raises(ValueError, match="one weight per transaction"):
        executor.program(Transactions((_one("SELECT ?", Draw("const", (1,))),)), (1.0, 2.0))


def test_the_open_descriptors_limit_is_raised_to_the_hard_limit() -> None:
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(256, hard), hard))
        limits.allow_many_connections()
        now, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
        assert now == (hard if hard != resource.RLIM_INFINITY else 1 << 20)
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


@pytest.mark.slow
@pytest.mark.parametrize("test", ["oltp_point_select", "oltp_read_write"])
def test_both_executors_measure_the_same_thing(test: str, dsn_url: str, tmp_path: Path) -> None:
    """The default (the C executor) and BENCH_RAWEXEC=0 (every statement through asyncmy): the same
    transactions, the same statements per transaction, and the result says which ran."""
    src = tmp_path / "s.bench"
    src.write_text(f'scenario "raw" {{ workload sysbench {test} {{ tables = 2  table_size = 2000 }}\n'
                   '  users 4  warmup 1s  duration 2s }\n')
    for raw, name in (("1", "libmariadb"), ("0", "driver")):
        out = tmp_path / f"{raw}.json"
        r = run_bench("run", str(src), "--headless", "--json", str(out), env={"BENCH_RAWEXEC": raw})
        assert r.returncode == 0, r.stderr
        doc = json.loads(out.read_text())
        assert doc["executor"] == name
        s = doc["summary"]
        tx = s["transactions"][test]
        assert tx["count"] > 20 and s["errors"] == 0  # some: 71 of read/write in 2 s on a loaded machine
        assert tx["qps"] == pytest.approx(tx["tps"] * (1 if test == "oltp_point_select" else 20), rel=0.01)


DEADLOCKS = """
scenario "deadlocks" {
  target env("BENCH_DSN")
  setup {
    sql "CREATE TABLE IF NOT EXISTS dl_run (id INT PRIMARY KEY, v BIGINT NOT NULL)"
    fill dl_run rows 4 { id = sequence(1)  v = uniform(0, 9) }
  }
  workload custom {
    # two rows each, in either order, among four: deadlocks all the time
    transaction swap retry 3 on deadlock {
      let a = uniform(1, 4)
      let b = uniform(1, 4)
      query "UPDATE dl_run SET v = v + 1 WHERE id = :a"
      query "UPDATE dl_run SET v = v + 1 WHERE id = :b"
    }
  }
  users 8
  warmup 0s
  duration 3s
}
"""


@pytest.mark.slow
async def test_a_run_full_of_deadlocks_retries_them_and_goes_on(server: tuple[Dsn, object], tmp_path: Path) -> None:
    """A scenario whose transactions deadlock all the time, on the default executor: retried as the
    scenario says, the rest counted as errors, the run completes, and no transaction is counted
    that the server did not keep (two increments each; those done while the users connected are
    kept but not measured, by design)."""
    dsn = server[0]
    src = tmp_path / "dl.bench"
    src.write_text(DEADLOCKS)
    assert run_bench("prepare", str(src), "--force-prepare").returncode == 0
    before = int(await _scalar(dsn, "SELECT SUM(v) FROM dl_run"))  # type: ignore[arg-type]
    out, stream = tmp_path / "dl.json", tmp_path / "dl.jsonl"
    r = run_bench("run", str(src), "--headless", "--json", str(out), "--jsonl", str(stream))
    assert r.returncode == 0, r.stderr
    doc = json.loads(out.read_text())
    tx = doc["summary"]["transactions"]["swap"]
    assert doc["status"] == "completed" and tx["count"] > 100 and doc["executor"] == "libmariadb"
    assert tx["retries"] > 0 and set(tx["errors_by_code"]) <= {"1213"}
    counted = sum(e["count"] for e in map(json.loads, stream.read_text().splitlines()) if e["type"] == "interval")
    added = int(await _scalar(dsn, "SELECT SUM(v) FROM dl_run")) - before  # type: ignore[arg-type]
    # every transaction counted was kept; more were kept than counted, those the users ran while the
    # others still connected (how many depends on how long connecting took: 16% more in a soak round
    # beside four busy loops, under 10% on a quiet machine, so no bound is put on them)
    assert added % 2 == 0 and counted == tx["count"] and added // 2 >= counted, (added, counted)


def test_the_c_counts_and_the_fallback_count_alike() -> None:
    """_native.Counts and PyCounts (a build without libmariadb) take the same calls to the same
    figures: the same histograms, byte for byte."""
    from bench_dsl.measure.recorder import PyCounts

    assert native.compiled is not None
    c, py = native.compiled.Counts(3), PyCounts(3)
    calls = [(i % 3, (i * 37) % 1000, 1 + i % 4) for i in range(5000)]
    for counts in (c, py):
        for call in calls:
            counts.ok(*call)
    assert c.take() == py.take()
    assert c.take() == py.take() == [(None, 0, 0, 0, 0)] * 3


def test_the_c_counts_and_the_fallback_keep_the_same_idle_spans() -> None:
    """The spans in which no user was inside a transaction (bench_dsl.measure.stalls), from the
    users' enter and leave: of 50 ms or more, and since when none is inside at the take."""
    from bench_dsl.measure.recorder import PyCounts

    assert native.compiled is not None
    ms = 1_000_000
    c, py = native.compiled.Counts(1), PyCounts(1)
    for counts in (c, py):
        counts.take()
        assert counts.quiet()[3:] == ([], 0)  # nobody ever inside: idle since ever
        for name, t in [("enter", 100), ("enter", 110), ("leave", 120), ("leave", 130), ("enter", 160),
                        ("leave", 200), ("enter", 400), ("leave", 500), ("leave", 510)]:
            getattr(counts, name)(t * ms)
        counts.take()
    # 130-160 is under the resolution; a leave too many changes nothing
    assert c.quiet()[3:] == py.quiet()[3:] == ([(0, 100 * ms), (200 * ms, 400 * ms)], 500 * ms)
    for counts in (c, py):
        counts.enter(600 * ms)
        counts.take()
    assert c.quiet()[3:] == py.quiet()[3:] == ([(500 * ms, 600 * ms)], None)  # one inside at the take


async def test_text_beyond_ascii_is_sent_as_utf8mb4(db: Dsn) -> None:
    """ASCII-only workloads keep libmariadb's default character set, as sysbench does; a value or a
    statement beyond ASCII makes the connection utf8mb4, and the server stores what was meant."""
    await run_sql(db, db.database, "CREATE OR REPLACE TABLE ex_text (n INT AUTO_INCREMENT PRIMARY KEY, v VARCHAR(20)) "
                  "CHARACTER SET utf8mb4")
    tx = Transactions((_one("INSERT INTO ex_text (v) VALUES (?)", Draw("choice", ("héllo", "日本"))),))
    assert executor.charset(tx) == "utf8mb4"
    assert executor.charset(Transactions((_one("SELECT ?", Draw("const", ("plain",))),))) is None
    u = NativeUser(executor.program(tx, (1.0,)), new_counts(1), 3, executor.options(db, 10, tx))
    try:
        assert (await u.connect())[0] == 0
        await _run_until(u, lambda: u.completed > 5)
    finally:
        u.close()
    assert await _scalar(db, "SELECT COUNT(*) FROM ex_text WHERE v NOT IN ('héllo', '日本')") == 0
    assert int(await _scalar(db, "SELECT COUNT(*) FROM ex_text")) > 5  # type: ignore[arg-type]


async def test_a_user_closed_right_after_its_run_is_closed_once(db: Dsn, monkeypatch: pytest.MonkeyPatch) -> None:
    """The user's thread tells the caller its run is over, then is held up (another thread had the
    core) before it marks itself idle: the caller's next run and its close() must not meet a
    stale mark. With the mark cleared after the answer, close() found the thread idle and closed
    the core while the thread then closed it too: a double free, the suite's rare segfault."""
    closed: list[str] = []

    class Core:  # the user's core as the thread sees it, recording who closes it
        stop = False

        def run(self, retry: bool) -> tuple[int, int, str]:
            return (STOPPED, 0, "")

        def interrupt(self) -> None:
            pass

        def close(self) -> None:
            closed.append(threading.current_thread().name)

    told = executor._call_soon
    missed: list[str] = []

    def told_then_held_up(*args: object) -> None:
        told(*args)  # type: ignore[arg-type]
        # held up until the caller has acted on the answer (sent its next call, or closed the user): the
        # race met at every run, not only when a fixed pause outlasted the caller. (A poll of its own,
        # on the user's thread: a failure raised here would end the thread and leave the caller hung.)
        deadline = time.monotonic() + HUNG_S
        while u._calls.empty() and not u._closing:
            if time.monotonic() > deadline:
                missed.append(f"the caller did not act on the thread's answer within {HUNG_S:g} s")
                return
            time.sleep(0.001)

    monkeypatch.setattr(executor, "_call_soon", told_then_held_up)
    u = _user(db, Transactions((_one("SELECT 1", params=()),)))
    u.core = Core()
    assert (await u.run(False))[0] == STOPPED
    assert (await u.run(False))[0] == STOPPED  # sent while the thread is held up after the first
    u.close()  # while the thread is held up after the second
    thread = u._thread
    assert thread is not None
    # once the thread has ended, it has done any close of its own it had to do
    await wait_until("the user's thread to end", lambda: not thread.is_alive())
    assert not missed, missed
    assert len(closed) == 1, closed


async def test_an_answer_slower_than_the_sockets_read_timeout_is_still_waited_for(db: Dsn) -> None:
    """A user's reads block in recv() (bench_dsl/native/src/connection.c), on a socket that had the
    connect timeout (1 s here) as its read timeout while connecting: a statement that takes longer is
    waited for, not cut at it."""
    prog = executor.program(Transactions((_one("SELECT SLEEP(?)", Draw("const", (1.6,))),)), (1.0,))
    counts = new_counts(1)
    u = NativeUser(prog, counts, 1, executor.options(db, 1))
    try:
        assert (await u.connect())[0] == 0
        assert await _run_until(u, lambda: u.completed >= 1) == (STOPPED, 0, "")
    finally:
        u.close()
    (_, n, _, total_us, _), = counts.take()
    assert n >= 1 and total_us >= 1_500_000 * n
