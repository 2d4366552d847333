"""The raw executor (bench_dsl/rawexec.py) against a real server: what it counts is what the server
did, failures inside a transaction are rolled back, large replies and lost connections are handled."""

from __future__ import annotations

import asyncio
import fcntl
import json
import random
import socket
import struct
import sys
import termios
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from bench_dsl import programs, users
from bench_dsl.blocking import ThreadLoop
from bench_dsl.dsn import Dsn
from bench_dsl.metrics import Recorder
from bench_dsl.rawexec import BEGIN, COMMIT, NEXT, RECONNECT, RETRY, CRawLoop, PyRawLoop, Statement, command
from bench_dsl.server import connect, ensure_database
from bench_dsl.statements import Drawn
from tests.conftest import run_bench


def test_execute_packet_layout() -> None:
    one = Statement(7, 1).one(-5)
    length, = struct.unpack("<I", one[:3] + b"\x00")
    assert one[3] == 0 and length == len(one) - 4  # sequence 0, payload length
    body = one[4:]
    assert body[0] == 0x17 and struct.unpack("<IBI", body[1:10]) == (7, 0, 1)
    assert body[10:12] == b"\x00\x01"  # NULL bitmap for one parameter, types follow
    assert body[12:14] == b"\x08\x00" and struct.unpack("<q", body[14:]) == (-5,)
    assert Statement(7, 1).packet(-5) == one

    two = Statement(1, 2).packet("é" * 200, 3)[4:]
    assert two[10:12] == b"\x00\x01" and two[12:16] == b"\xfd\x00\x08\x00"
    assert two[16:19] == b"\xfc\x90\x01"  # 400 utf-8 bytes: a 2-byte length after 0xfc
    assert two[19:419] == ("é" * 200).encode() and struct.unpack("<q", two[419:]) == (3,)
    # NULL: a bit in the bitmap and no value; a float is a double; an int beyond 64 bits is text
    mixed = Statement(1, 9).packet(None, 1.5, b"\x00\xff", 1, 2, 3, 4, 5, 1 << 70)[4:]
    assert mixed[10:12] == b"\x01\x00" and mixed[12] == 1
    assert mixed[13:31] == b"\x06\x00\x05\x00\xfc\x00" + b"\x08\x00" * 5 + b"\xfd\x00"
    assert mixed[31:39] == struct.pack("<d", 1.5) and mixed[39:42] == b"\x02\x00\xff"
    assert mixed[-23:] == b"\x16" + str(1 << 70).encode()
    assert Statement(1, 1).one(1 << 70) == Statement(1, 1).packet(1 << 70)
    assert Statement(2, 0).packet() == command(0x17, struct.pack("<IBI", 2, 0, 1))
    with pytest.raises(ValueError):
        Statement(1, 2).packet(1)


@pytest.fixture
async def db(server: tuple[Dsn, object]) -> Dsn:
    dsn = server[0]
    await ensure_database(dsn)
    conn = await connect(dsn, dsn.database)
    try:
        async with conn.cursor() as cur:
            await cur.execute("DROP TABLE IF EXISTS raw_t")
            await cur.execute("CREATE TABLE raw_t (id INT PRIMARY KEY, k INT NOT NULL, c VARCHAR(200) NOT NULL)")
            await cur.execute("INSERT INTO raw_t SELECT seq, 0, REPEAT('x', 120) FROM seq_1_to_6000")
    finally:
        conn.close()
    return dsn


def _stmt(prepared: object) -> Statement:
    return Statement.of(prepared)


async def _scalar(dsn: Dsn, sql: str) -> int:
    conn = await connect(dsn, dsn.database)
    try:
        async with conn.cursor() as cur:
            await cur.execute(sql)
            row = await cur.fetchone()
            return int(row[0])
    finally:
        conn.close()


# every test of a loop runs on the three: the C core on the event loop, its pure-Python twin, and
# the C core on a thread per user (blocking.py)
Loop = type[CRawLoop] | type[PyRawLoop] | type[ThreadLoop]


@pytest.fixture(params=[CRawLoop, PyRawLoop, ThreadLoop], ids=["c", "py", "thread"])
def core(request: pytest.FixtureRequest) -> Loop:
    return request.param  # type: ignore[no-any-return]


class _Run:
    """One RawLoop on a fresh connection, with what it reported; stops after `limit` outcomes."""

    def __init__(self, conn: Any, program: Callable[[int], Sequence[bytes]], limit: int,
                 verdict: int | Callable[[int, int], int] = NEXT, core: Loop = CRawLoop,
                 pick: Callable[[], int] | None = None) -> None:
        self.ok: list[tuple[int, int, int]] = []
        self.errors: list[tuple[int, int, str, int]] = []
        self.limit = limit
        self.verdict = verdict
        self.loop = core(conn, program, pick, SimpleNamespace(ok=self._ok), self._error)

    def _ok(self, i: int, us: int, q: int) -> None:
        self.ok.append((i, us, q))
        self.loop.stop = len(self.ok) + len(self.errors) >= self.limit

    def _error(self, i: int, code: int, message: str, attempt: int) -> int:
        self.errors.append((i, code, message, attempt))
        self.loop.stop = len(self.ok) + len(self.errors) >= self.limit
        return self.verdict(code, attempt) if callable(self.verdict) else self.verdict


async def test_counted_transactions_are_what_the_server_did(db: Dsn, core: Loop) -> None:
    conn = await connect(db, db.database)
    try:
        sel = _stmt(await conn.prepare("SELECT c FROM raw_t WHERE id=?"))
        upd = _stmt(await conn.prepare("UPDATE raw_t SET k=k+1, c=? WHERE id=?"))
        n = 0

        def program(tx: int) -> list[bytes]:
            nonlocal n
            n += 1
            return [BEGIN, sel.one(n % 6000 + 1), upd.packet(f"v{n}", 1), COMMIT]

        run = _Run(conn, program, 500, core=core)
        assert await run.loop.run() is False
        assert len(run.ok) == 500 and not run.errors
        assert all(q == 4 and us > 0 for _, us, q in run.ok)
        # the driver gets its connection back, in step
        async with conn.cursor() as cur:
            await cur.execute("SELECT k, c FROM raw_t WHERE id=1")
            assert await cur.fetchone() == (500, "v500")
    finally:
        conn.close()


async def test_a_failed_statement_rolls_its_transaction_back(db: Dsn, core: Loop) -> None:
    conn = await connect(db, db.database)
    try:
        upd = _stmt(await conn.prepare("UPDATE raw_t SET k=k+1 WHERE id=?"))
        ins = _stmt(await conn.prepare("INSERT INTO raw_t VALUES (?, 0, 'dup')"))
        run = _Run(conn, lambda tx: [BEGIN, upd.one(2), ins.one(3), COMMIT], 3, core=core)
        assert await run.loop.run() is False
        assert not run.ok and [e[1] for e in run.errors] == [1062, 1062, 1062]
        assert "Duplicate entry" in run.errors[0][2]
    finally:
        conn.close()
    assert await _scalar(db, "SELECT k FROM raw_t WHERE id=2") == 0


async def test_replies_larger_than_the_buffer(db: Dsn, core: Loop) -> None:
    conn = await connect(db, db.database)
    try:
        # 6,000 rows of 120 characters (about 800 KB, three times the first buffer), then one row
        # larger than the buffer
        rng = _stmt(await conn.prepare("SELECT c FROM raw_t WHERE id BETWEEN ? AND ?"))
        big = _stmt(await conn.prepare("SELECT REPEAT('y', ?)"))
        first = core(conn, lambda tx: (), None, None, print).buffer_size
        run = _Run(conn, lambda tx: [rng.packet(1, 6000), big.one(3 * first), rng.packet(1, 1)], 5, core=core)
        assert await run.loop.run() is False
        assert len(run.ok) == 5 and not run.errors
        assert run.loop.buffer_size > 3 * first
    finally:
        conn.close()


async def test_a_killed_connection_asks_for_a_new_one(db: Dsn, core: Loop) -> None:
    conn = await connect(db, db.database)
    try:
        slow = _stmt(await conn.prepare("SELECT SLEEP(?)"))
        async with conn.cursor() as cur:
            await cur.execute("SELECT CONNECTION_ID()")
            (cid,) = await cur.fetchone()
        run = _Run(conn, lambda tx: [slow.one(30)], 10, verdict=RECONNECT, core=core)
        task = asyncio.create_task(run.loop.run())
        await asyncio.sleep(0.3)
        killer = await connect(db, db.database)
        async with killer.cursor() as cur:
            await cur.execute(f"KILL {int(cid)}")
        killer.close()
        assert await asyncio.wait_for(task, 10) is True
        assert run.errors and run.errors[0][1] in (1927, 2013)  # "connection killed" or the lost socket
    finally:
        conn.close()


async def test_cancelling_closes_the_connection(db: Dsn, core: Loop) -> None:
    conn = await connect(db, db.database)
    try:
        slow = _stmt(await conn.prepare("SELECT SLEEP(?)"))
        run = _Run(conn, lambda tx: [slow.one(5)], 10, core=core)
        task = asyncio.create_task(run.loop.run())
        await asyncio.sleep(0.2)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert conn._transport.is_closing()
    finally:
        conn.close()


@pytest.mark.slow
@pytest.mark.parametrize("test", ["oltp_point_select", "oltp_read_write"])
def test_both_ways_of_running_statements_measure_the_same_thing(test: str, dsn_url: str, tmp_path: Path) -> None:
    """The default (the C core on a thread per user), BENCH_RAWEXEC=loop (the C core on the event
    loop), BENCH_RAWEXEC=py (its pure-Python core) and BENCH_RAWEXEC=0 (every statement through
    asyncmy): the same transactions, the same statements per transaction."""
    src = tmp_path / "s.bench"
    src.write_text(f'scenario "raw" {{ workload sysbench {test} {{ tables = 2  table_size = 2000 }}\n'
                   '  users 4  warmup 1s  duration 2s }\n')
    docs = {}
    for raw in ("1", "loop", "py", "0"):
        out = tmp_path / f"{raw}.json"
        r = run_bench("run", str(src), "--headless", "--json", str(out), env={"BENCH_RAWEXEC": raw})
        assert r.returncode == 0, r.stderr
        doc = json.loads(out.read_text())
        assert doc["executor"] == {"1": "raw-thread", "loop": "raw", "py": "raw-py", "0": "driver"}[raw]  # the result says which way ran
        docs[raw] = doc["summary"]
    for s in docs.values():
        tx = s["transactions"][test]
        assert tx["count"] > 100 and s["errors"] == 0
        assert tx["qps"] == pytest.approx(tx["tps"] * (1 if test == "oltp_point_select" else 20), rel=0.01)


async def test_a_procedure_with_results_keeps_the_loop_in_step(db: Dsn, core: Loop) -> None:
    """CALL of a procedure that selects sends a result set, then its own OK (more results flagged)."""
    conn = await connect(db, db.database)
    try:
        async with conn.cursor() as cur:
            await cur.execute("DROP PROCEDURE IF EXISTS raw_p")
            await cur.execute("CREATE PROCEDURE raw_p(IN x INT) BEGIN SELECT c FROM raw_t WHERE id = x; "
                              "SELECT k FROM raw_t WHERE id BETWEEN x AND x + 50; UPDATE raw_t SET k = k + 1 WHERE id = 7; END")
        call = _stmt(await conn.prepare("CALL raw_p(?)"))
        sel = _stmt(await conn.prepare("SELECT id FROM raw_t WHERE id = ?"))
        run = _Run(conn, lambda tx: [call.one(1), sel.one(2)], 200, core=core)
        assert await run.loop.run() is False
        assert len(run.ok) == 200 and not run.errors
        async with conn.cursor() as cur:  # the driver's connection is in step: no reply left unread
            await cur.execute("SELECT k FROM raw_t WHERE id = 7")
            assert await cur.fetchone() == (200,)
    finally:
        conn.close()


async def test_a_transaction_without_statements_is_a_defect_not_a_hang(db: Dsn, core: Loop) -> None:
    conn = await connect(db, db.database)
    try:
        run = _Run(conn, lambda tx: [], 5, core=core)
        with pytest.raises(ValueError, match="without statements"):
            await run.loop.run()
    finally:
        conn.close()


class _Recorder:
    """A TCP proxy between a client and the server that keeps every byte the server sends, to
    replay them cut differently. Each byte is kept before it is passed on: whatever the client
    has read is in `received`."""

    def __init__(self, upstream: Dsn) -> None:
        self.upstream = upstream
        self.received = bytearray()
        self.pipes: set[asyncio.Task[None]] = set()

    async def start(self) -> Dsn:
        """Listen; the address that connects through the recorder."""
        self.listener = await asyncio.start_server(self._client, "127.0.0.1", 0)
        port = self.listener.sockets[0].getsockname()[1]
        return Dsn("127.0.0.1", port, self.upstream.user, self.upstream.password, self.upstream.database)

    async def close(self) -> None:
        self.listener.close()
        for task in self.pipes:
            task.cancel()
        await asyncio.gather(*self.pipes, return_exceptions=True)

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up = self.upstream
        up_reader, up_writer = await (asyncio.open_unix_connection(up.socket) if up.socket
                                      else asyncio.open_connection(up.host, up.port))
        for pipe in (self._pipe(reader, up_writer, None), self._pipe(up_reader, writer, self.received)):
            task = asyncio.create_task(pipe)
            self.pipes.add(task)

    @staticmethod
    async def _pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter, keep: bytearray | None) -> None:
        try:
            while data := await src.read(65536):
                if keep is not None:
                    keep += data
                dst.write(data)
                await dst.drain()
        finally:
            dst.close()


class _NoSocket:
    def write(self, data: bytes) -> None:
        pass

    def is_closing(self) -> bool:
        return False

    def get_protocol(self) -> None:
        return None

    def set_protocol(self, protocol: object) -> None:
        pass

    def close(self) -> None:
        pass


async def test_replies_cut_anywhere_are_read_the_same(db: Dsn, core: Loop) -> None:
    """The server's own replies (rows, an error, an OK with 300 affected rows, a CALL's several
    results) fed back in pieces of every size: the same outcomes as when they came from the socket."""
    recorder = _Recorder(db)
    conn = await connect(await recorder.start(), db.database)  # through the recorder: the bytes as the server sent them
    try:
        async with conn.cursor() as cur:
            await cur.execute("DROP PROCEDURE IF EXISTS raw_q")
            await cur.execute("CREATE PROCEDURE raw_q(IN x INT) BEGIN SELECT c, k FROM raw_t WHERE id BETWEEN x AND x + 3; "
                              "SELECT COUNT(*) FROM raw_t; END")
        point = _stmt(await conn.prepare("SELECT c FROM raw_t WHERE id=?"))
        rng = _stmt(await conn.prepare("SELECT id, k, c FROM raw_t WHERE id BETWEEN ? AND ?"))
        many = _stmt(await conn.prepare("UPDATE raw_t SET k=k+1 WHERE id <= ?"))
        dup = _stmt(await conn.prepare("INSERT INTO raw_t VALUES (?, 0, 'dup')"))
        call = _stmt(await conn.prepare("CALL raw_q(?)"))
        varied = _stmt(await conn.prepare("SELECT CONCAT(id, c) FROM raw_t WHERE id BETWEEN ? AND ?"))
        plan = [[point.one(5)], [rng.packet(10, 109)], [many.one(300)], [dup.one(1)], [call.one(20)],
                [BEGIN, point.one(6), many.one(2), COMMIT], [varied.packet(5, 205)]]  # rows of 2, 3, 4 lengths

        def program(tx: int) -> list[bytes]:
            return plan[tx % len(plan)]

        tx = iter(range(10**6))
        live = _Run(conn, program, 3 * len(plan), core=core, pick=lambda: next(tx))
        before = len(recorder.received)
        assert await live.loop.run() is False
        stream = bytes(recorder.received[before:])  # what the loop received: every reply it waited for
        async with conn.cursor() as cur:  # nothing left unread: the driver's connection is in step
            await cur.execute("SELECT 42")
            assert await cur.fetchone() == (42,)
    finally:
        conn.close()
        await recorder.close()
    outcomes = [("ok", i, q) for i, _, q in live.ok], [(i, code) for i, code, _, _ in live.errors]
    assert outcomes == ([("ok", i, len(plan[i % 7])) for i in range(21) if i % 7 != 3], [(3, 1062), (10, 1062), (17, 1062)])

    if core is ThreadLoop:
        await _replay_to_threads(stream, program, 3 * len(plan), conn._deprecate_eof, outcomes)
        return

    class Replay:
        _transport, _deprecate_eof = _NoSocket(), conn._deprecate_eof

    for size in (1, 2, 3, 5, 7, 64, 131, 135, 1000, 4096, len(stream)):
        tx = iter(range(10**6))
        again = _Run(Replay(), program, 3 * len(plan), core=core, pick=lambda: next(tx))
        task = asyncio.create_task(again.loop.run())
        await asyncio.sleep(0)
        at = 0
        while at < len(stream):  # as a transport reads: at most what the buffer it is given holds
            with memoryview(again.loop.get_buffer(-1)) as view:
                chunk = stream[at:at + min(size, len(view))]
                view[:len(chunk)] = chunk
            again.loop.buffer_updated(len(chunk))
            at += len(chunk)
        assert await task is False
        assert ([("ok", i, q) for i, _, q in again.ok], [(i, c) for i, c, _, _ in again.errors]) == outcomes, size


class _PairTransport:
    """The transport side of ThreadLoop on one end of a socket pair."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock

    def get_extra_info(self, name: str) -> object:
        return self.sock if name == "socket" else None

    def is_closing(self) -> bool:
        return False

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass

    def close(self) -> None:
        pass


async def _replay_to_threads(stream: bytes, program: Callable[[int], Sequence[bytes]], limit: int,
                             deprecate_eof: bool, outcomes: Any) -> None:
    """The server's bytes written to a socket pair in pieces of each size, each piece read before the
    next is written, so that the thread's blocking reads end exactly there."""
    for size in (7, 131, 1000, 4096, len(stream)):
        ours, theirs = socket.socketpair()
        try:
            conn = SimpleNamespace(_transport=_PairTransport(ours), _deprecate_eof=deprecate_eof)
            tx = iter(range(10**6))
            again = _Run(conn, program, limit, core=ThreadLoop, pick=lambda: next(tx))

            def feed() -> None:
                queued = bytearray(4)
                for at in range(0, len(stream), size):
                    theirs.sendall(stream[at:at + size])
                    while True:  # until the reader has taken it all
                        fcntl.ioctl(ours.fileno(), termios.FIONREAD, queued)
                        if not int.from_bytes(queued, "little"):
                            break

            feeder = threading.Thread(target=feed, daemon=True)
            feeder.start()
            assert await asyncio.wait_for(again.loop.run(), 30) is False
            feeder.join(5)
            assert ([("ok", i, q) for i, _, q in again.ok], [(i, c) for i, c, _, _ in again.errors]) == outcomes, size
        finally:
            ours.close()
            theirs.close()


# A column count announced on 3 bytes with none of them there, then an error packet without its code:
# what a broken proxy might send. Each must be a defect reported, never bytes read past the packet.
MALFORMED = {"column count": b"\x01\x00\x00\x01\xfd" + b"\x05\x00\x00\x02\x00abcd",
             "error": b"\x01\x00\x00\x01\xff" + b"\x05\x00\x00\x02\x00abcd"}


@pytest.mark.parametrize("reply", list(MALFORMED))
async def test_a_malformed_reply_is_a_defect(core: Loop, reply: str) -> None:
    stream = MALFORMED[reply]
    packet = command(0x03, b"SELECT 1")
    if core is ThreadLoop:
        ours, theirs = socket.socketpair()
        try:
            theirs.sendall(stream)
            conn = SimpleNamespace(_transport=_PairTransport(ours), _deprecate_eof=True)
            run = _Run(conn, lambda tx: [packet], 5, core=core)
            with pytest.raises(ValueError, match="malformed"):
                await asyncio.wait_for(run.loop.run(), 10)
        finally:
            ours.close()
            theirs.close()
        return

    class Replay:
        _transport, _deprecate_eof = _NoSocket(), True

    run = _Run(Replay(), lambda tx: [packet], 5, core=core)
    task = asyncio.create_task(run.loop.run())
    await asyncio.sleep(0)
    with memoryview(run.loop.get_buffer(-1)) as view:
        view[:len(stream)] = stream
    run.loop.buffer_updated(len(stream))
    with pytest.raises(ValueError, match="malformed"):
        await asyncio.wait_for(task, 10)
    assert run.ok == [] and run.errors == []


async def test_waiting_for_the_gil_is_not_counted_as_latency(db: Dsn) -> None:
    """A transaction built in Python takes the GIL on the user's thread before its clock starts:
    while another thread holds the GIL (here: the test, for 50 ms at a time), the wait is the
    client's, and the latency is the round trip's."""
    conn = await connect(db, db.database)
    old = sys.getswitchinterval()
    try:
        one = _stmt(await conn.prepare("SELECT 1"))
        rec = Recorder(("t",))
        loop = ThreadLoop(conn, lambda tx: [one.packet()], None, rec.counts, lambda *a: NEXT)
        task = asyncio.create_task(loop.run())
        await asyncio.sleep(0.3)
        rec.swap()
        sys.setswitchinterval(0.05)
        end = time.monotonic() + 1.0
        while time.monotonic() < end:  # the GIL held, given up only when the interval says
            pass
        sys.setswitchinterval(old)
        loop.stop = True
        assert await asyncio.wait_for(task, 10) is False
        st = rec.swap()["t"]
        # about one transaction per 50 ms handover; measured from the GIL, each one a round trip
        assert st.count >= 5
        assert st.hist.get_value_at_percentile(50) < 20_000, st.hist.get_value_at_percentile(50)
    finally:
        sys.setswitchinterval(old)
        conn.close()


@pytest.mark.parametrize("loop", [ThreadLoop, CRawLoop], ids=["thread", "c"])
async def test_a_defect_in_a_program_stops_the_run_on_every_executor(db: Dsn, loop: Loop,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """A program that raises (a defect in a workload) is reported under its transaction, as the
    scenario error that ends the run: its user must not just vanish while the run goes on."""
    monkeypatch.setattr(users, "Loop", loop)

    class Session:
        paced = False

        def statements(self) -> Drawn:
            def draw(tx: int) -> list[tuple[str, tuple[()]]]:
                if tx == 1:
                    raise ValueError("a defect in the program")
                return [("one", ())]
            return Drawn({"one": "SELECT 1"}, draw, explicit=False)

        def forget(self) -> None:
            pass

    class Workload:
        names, weights, retries, retry_on = ("fine", "broken"), (0.5, 0.5), (0, 0), (frozenset(), frozenset())

        def session(self, rng: random.Random, user: int) -> Session:
            return Session()

    pool = users.UserPool(db, Workload(), Recorder(("fine", "broken")), 1)  # type: ignore[arg-type]
    try:
        await pool.resize(2)
        for _ in range(100):
            if pool.fatal is not None:
                break
            await asyncio.sleep(0.05)
        assert pool.fatal == (-1, "ValueError: a defect in the program", "broken")
        assert pool.health().fatal == pool.fatal
    finally:
        await pool.stop_all(2.0)


def test_the_open_descriptors_limit_is_raised_to_the_hard_limit() -> None:
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(256, hard), hard))
        users.allow_many_connections()
        now, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
        assert now == (hard if hard != resource.RLIM_INFINITY else 1 << 20)
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


async def test_a_thread_draws_the_keys_the_python_program_draws(db: Dsn) -> None:
    """Point selects on a thread draw from a C copy of the user's Mersenne Twister: after N of them
    the user's random.Random is where N point selects drawn in Python leave it."""
    from bench_dsl import _rawcore
    from bench_dsl.generators import special

    conn = await connect(db, db.database)
    try:
        st = _stmt(await conn.prepare("SELECT c FROM raw_t WHERE id=?"))
        rng = random.Random(11)
        program = _rawcore.PointSelect([st.int_head, st.int_head], rng, 1, 6000, 1, 75, 12)
        run = _Run(conn, program, 3000, core=ThreadLoop)
        assert await run.loop.run() is False
    finally:
        conn.close()
    assert len(run.ok) == 3000 and not run.errors
    ref = random.Random(11)
    key = special(1, 6000, 1, 75, 12)
    for _ in range(3000):
        int(ref.random() * 2)
        key(ref)
    assert rng.getstate() == ref.getstate()


def test_the_c_twins_draw_and_count_as_the_python_ones() -> None:
    """_rawcore's PointSelect, Mix and Counts against what they replace: the same keys, tables and
    packets from the same seed, the same transaction types, the same counts."""
    from functools import partial

    from bench_dsl import _rawcore
    from bench_dsl.generators import special
    from bench_dsl.metrics import PyCounts
    from bench_dsl.rawexec import PyMix

    for tables, (pct, res, iters) in [(4, (1, 75, 12)), (1, (5.0, 50.0, 7)), (3, (100, 0, 1))]:
        c_rng, py_rng = random.Random(7), random.Random(7)
        stmts = [Statement(i, 1) for i in range(1, tables + 1)]
        fast = _rawcore.PointSelect([s.int_head for s in stmts], c_rng, 1, 50_000, pct, res, iters)
        key = partial(special(1, 50_000, pct, res, iters), py_rng)
        table = (lambda: int(py_rng.random() * tables)) if tables > 1 else (lambda: 0)
        for _ in range(50_000):
            t = table()
            assert fast(0) == (stmts[t].one(key()),)
    with pytest.raises(ValueError):
        _rawcore.PointSelect([], random.Random(), 1, 10, 1, 75, 12)

    for seed in (0, 5, 2**40):  # the thread's copy of the Mersenne Twister draws as random.Random
        c_rng, py_rng = random.Random(seed), random.Random(seed)
        py_rng.gauss(0, 1)
        c_rng.gauss(0, 1)  # a gauss_next kept in the state
        assert _rawcore._draws(c_rng, 2000) == [py_rng.random() for _ in range(2000)]
        assert c_rng.getstate() == py_rng.getstate() and c_rng.random() == py_rng.random()

    for weights in ([45, 43, 4, 4, 4], [0.1, 0.2, 0.7], [1]):
        c_mix, py_mix = _rawcore.Mix(random.Random(3), weights), PyMix(random.Random(3), weights)
        assert [c_mix() for _ in range(20_000)] == [py_mix() for _ in range(20_000)]

    c, py = _rawcore.Counts(2), PyCounts(2)
    for ok in [(0, 5, 1), (0, 5, 1), (1, 7, 20), (0, 1 << 40, 2)]:
        c.ok(*ok)
        py.ok(*ok)
    assert c.take() == py.take() == [({5: 2, 1 << 40: 1}, 4), ({7: 1}, 20)]
    assert c.take() == py.take() == [({}, 0), ({}, 0)]
    with pytest.raises(IndexError):
        c.ok(2, 1, 1)


class _Prepared:
    """What programs.build reads of an asyncmy prepared statement."""

    def __init__(self, statement_id: int, parameter_count: int) -> None:
        self._statement_id, self.parameter_count = statement_id, parameter_count


class _NoServer:
    """A connection that prepares without a server: statement ids 1, 2, 3 ... in the order asked."""

    def __init__(self) -> None:
        self.ids = iter(range(1, 1000))

    async def prepare(self, sql: str) -> _Prepared:
        return _Prepared(next(self.ids), sql.count("?"))


async def _sysbench_programs(spec: Any, seed: int) -> tuple[tuple[Any, Any], tuple[Any, Any]]:
    """(session, program) built with the C core's Oltp, and the same with the Python transaction."""
    from bench_dsl import native
    from bench_dsl.workloads import sysbench

    out = []
    for core in (native.core, None):
        session = sysbench._SysbenchSession(spec, random.Random(seed))
        saved, native.core = native.core, core
        try:
            out.append((session, await programs.build(_NoServer(), session.statements())))
        finally:
            native.core = saved
    return out[0], out[1]


@pytest.mark.parametrize("options", [
    {"test": "oltp_read_write"}, {"test": "oltp_read_only", "tables": 3}, {"test": "oltp_write_only"},
    {"test": "oltp_read_write", "tables": 1, "skip_trx": True, "range_size": 7},
    {"test": "oltp_point_select", "point_selects": 3, "rand_spec_pct": 5.0, "rand_spec_res": 50.0},
], ids=lambda o: "-".join(f"{v}" for v in o.values()))
async def test_oltp_in_c_builds_what_the_python_session_builds(options: dict[str, Any]) -> None:
    """_rawcore.Oltp against the Python transaction it replaces: the same packets (tables, keys, c
    and pad strings drawn alike) from the same seed, and the user's Random left at the same place."""
    from bench_dsl import _rawcore
    from bench_dsl.workloads.sysbench import SysbenchWorkload

    spec = SysbenchWorkload(**{"tables": 4, "table_size": 50_000, **options})
    (c_session, fast), (py_session, slow) = await _sysbench_programs(spec, 7)
    assert type(fast) is _rawcore.Oltp and type(slow) is not _rawcore.Oltp
    for i in range(2000):
        assert fast(0) == slow(0), i
    assert c_session.rng.getstate() == py_session.rng.getstate()


def test_oltp_refuses_what_it_cannot_build() -> None:
    from bench_dsl import _rawcore

    head = (Statement(1, 1).int_head,)

    class Mine(random.Random):
        pass

    with pytest.raises(TypeError):  # a subclass may draw otherwise: only random.Random's own state
        _rawcore.Oltp([(0, 1, head, None)], Mine(1), 1, 10, 1, 75, 12, 100, True)
    for groups in ([], [(4, 1, head, None)], [(3, 1, head, None)], [(0, 0, head, None)],
                   [(0, 1, head, None), (0, 1, head * 2, None)]):
        with pytest.raises(ValueError):
            _rawcore.Oltp(groups, random.Random(1), 1, 10, 1, 75, 12, 100, True)


async def test_a_thread_runs_read_write_transactions_built_in_c(db: Dsn) -> None:
    """oltp_read_write on a thread, its transactions drawn and encoded in C: every one committed
    (the server's count), none failed, the table as large as before (each delete has its insert),
    and the user's Random where the Python transactions leave it."""
    from bench_dsl import _rawcore
    from bench_dsl.workloads.sysbench import SysbenchWorkload
    from bench_dsl.workloads import sysbench

    conn = await connect(db, db.database)
    try:
        async with conn.cursor() as cur:
            await cur.execute("DROP TABLE IF EXISTS sbtest1")
            await cur.execute(sysbench.CREATE.format(t=1))
            await cur.execute("INSERT INTO sbtest1 SELECT seq, seq, REPEAT('c', 119), REPEAT('p', 59) "
                              "FROM seq_1_to_2000")
        spec = SysbenchWorkload(test="oltp_read_write", tables=1, table_size=2000)
        session = sysbench._SysbenchSession(spec, random.Random(5))
        program = await programs.build(conn, session.statements())
        assert type(program) is _rawcore.Oltp
        before = await _scalar(db, "SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS "
                                   "WHERE VARIABLE_NAME = 'COM_COMMIT'")
        run = _Run(conn, program, 300, core=ThreadLoop, verdict=RETRY)
        assert await run.loop.run() is False
    finally:
        conn.close()
    assert len(run.ok) == 300 and not run.errors, run.errors[:3]
    assert {q for _, _, q in run.ok} == {20}  # BEGIN, 18 statements, COMMIT
    after = await _scalar(db, "SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS "
                              "WHERE VARIABLE_NAME = 'COM_COMMIT'")
    assert after - before >= 300
    assert await _scalar(db, "SELECT COUNT(*) FROM sbtest1") == 2000
    (_, _), (py_session, slow) = await _sysbench_programs(SysbenchWorkload(test="oltp_read_write", tables=1,
                                                                           table_size=2000), 5)
    for _ in range(300):
        slow(0)
    assert session.rng.getstate() == py_session.rng.getstate()


DEADLOCKS = """
scenario "deadlocks" {
  target env("BENCH_DSN")
  setup {
    sql "CREATE TABLE IF NOT EXISTS dl_%(mode)s (id INT PRIMARY KEY, v BIGINT NOT NULL)"
    fill dl_%(mode)s rows 4 { id = sequence(1)  v = uniform(0, 9) }
  }
  workload custom {
    # two rows each, in either order, among four: deadlocks all the time
    transaction swap retry 3 on deadlock {
      let a = uniform(1, 4)
      let b = uniform(1, 4)
      query "UPDATE dl_%(mode)s SET v = v + 1 WHERE id = :a"
      query "UPDATE dl_%(mode)s SET v = v + 1 WHERE id = :b"
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
    name = "scenario"
    src = tmp_path / "dl.bench"
    src.write_text(DEADLOCKS % {"mode": name})
    env: dict[str, str] = {}
    assert run_bench("prepare", str(src), "--force-prepare", env=env).returncode == 0
    before = await _scalar(dsn, f"SELECT SUM(v) FROM dl_{name}")
    out, stream = tmp_path / "dl.json", tmp_path / "dl.jsonl"
    r = run_bench("run", str(src), "--headless", "--json", str(out), "--jsonl", str(stream), env=env)
    assert r.returncode == 0, r.stderr
    doc = json.loads(out.read_text())
    tx = doc["summary"]["transactions"]["swap"]
    assert doc["status"] == "completed" and tx["count"] > 100
    assert tx["retries"] > 0 and set(tx["errors_by_code"]) <= {"1213"}
    # every interval, the measured window's and the moments around it (users connecting, the end)
    counted = sum(e["count"] for e in map(json.loads, stream.read_text().splitlines()) if e["type"] == "interval")
    added = await _scalar(dsn, f"SELECT SUM(v) FROM dl_{name}") - before
    assert added % 2 == 0 and counted == tx["count"] and 0 <= added // 2 - counted < counted // 10, (added, counted)


async def test_deadlocks_roll_back_and_retry_and_every_ok_is_committed(db: Dsn, core: Loop) -> None:
    """Eight loops each updating two of four rows in either order: real deadlocks (1213), each
    rolled back before the retry the policy asks for; every transaction reported done is one the
    server kept (two increments each), and none more."""
    conns = [await connect(db, db.database) for _ in range(8)]
    try:
        async with conns[0].cursor() as cur:
            await cur.execute("CREATE TABLE IF NOT EXISTS raw_dl (id INT PRIMARY KEY, v BIGINT NOT NULL)")
            await cur.execute("REPLACE INTO raw_dl VALUES (1, 0), (2, 0), (3, 0), (4, 0)")
        runs = []
        for n, conn in enumerate(conns):
            upd = _stmt(await conn.prepare("UPDATE raw_dl SET v = v + 1 WHERE id = ?"))
            rng = random.Random(n)

            def program(tx: int, upd: Statement = upd, rng: random.Random = rng) -> list[bytes]:
                return [BEGIN, upd.one(rng.randint(1, 4)), upd.one(rng.randint(1, 4)), COMMIT]

            runs.append(_Run(conn, program, 300, core=core,
                             verdict=lambda code, attempt: RETRY if code == 1213 and attempt < 3 else NEXT))
        assert await asyncio.wait_for(asyncio.gather(*(r.loop.run() for r in runs)), 60) == [False] * 8
    finally:
        for conn in conns:
            conn.close()
    done = sum(len(r.ok) for r in runs)
    errors = [e for r in runs for e in r.errors]
    assert errors and {e[1] for e in errors} == {1213} and any(e[3] > 0 for e in errors)  # retried, again
    assert await _scalar(db, "SELECT SUM(v) FROM raw_dl") == 2 * done
