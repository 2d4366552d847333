"""Every connection of a run reaches the server the run names (issue 38): the address's transport is
the one used (`localhost:PORT` is TCP to that port, never the client library's default socket), and
each connection checks what it reached (Dsn.reaches): the C executor's users, asyncmy's, the side
connections and the replicas. A user that reached another server stops the run with exit 4.

A second throwaway server plays the other one. It is given the first one's root password, so that an
address that leads to it is let in and would measure it, as the distribution's server on the default
socket was in the report."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator, Iterator
from dataclasses import replace
from pathlib import Path
from urllib.parse import quote

import pytest

from bench_dsl.core.dsn import Dsn, ServerIdentity
from bench_dsl.engine.watch import TargetWatch
from bench_dsl.fleet import users
from bench_dsl.measure.recorder import Recorder, new_counts
from bench_dsl.native import executor
from bench_dsl.native.executor import ELSEWHERE, NativeUser
from bench_dsl.server.connect import OtherServer, connect, identify
from bench_dsl.server.embedded import EmbeddedServer
from tests.conftest import run_bench, run_sql
from tests.fakes import QueryWorkload


@pytest.fixture(scope="module")
def other(server: tuple[Dsn, EmbeddedServer | None]) -> Iterator[EmbeddedServer]:
    """A second server that lets in the suite's server's root (its password, on its socket and port)."""
    srv = EmbeddedServer()
    dsn = asyncio.run(srv.start())
    password = server[0].password
    asyncio.run(run_sql(dsn, None, *(f"ALTER USER 'root'@'{h}' IDENTIFIED BY '{password}'"
                                     for h in ("localhost", "127.0.0.1"))))
    srv.dsn = replace(dsn, password=password)
    try:
        yield srv
    finally:
        srv.stop()


async def _who(dsn: Dsn) -> ServerIdentity:
    conn = await connect(replace(dsn, reaches=None), None)
    try:
        async with conn.cursor() as cur:
            return await identify(cur)
    finally:
        conn.close()


async def _questions(dsn: Dsn) -> int:
    conn = await connect(dsn, None)
    try:
        async with conn.cursor() as cur:
            await cur.execute("SHOW GLOBAL STATUS LIKE 'Questions'")
            return int((await cur.fetchone())[1])
    finally:
        conn.close()




@pytest.fixture
async def pinned(server: tuple[Dsn, object], other: EmbeddedServer) -> AsyncIterator[tuple[Dsn, Dsn]]:
    """(the suite's server's address, bound to it; the other server's address, bound to the suite's)."""
    assert other.dsn is not None
    mine = await _who(server[0])
    assert mine != await _who(other.dsn)  # two servers: the check has something to tell apart
    yield replace(server[0], reaches=mine), replace(other.dsn, reaches=mine)


async def test_the_c_executor_refuses_another_server(pinned: tuple[Dsn, Dsn], other: EmbeddedServer) -> None:
    right, wrong = pinned
    prog = executor.program(QueryWorkload("SELECT 1").statements(), (1.0,))
    for dsn, expected in ((right, 0), (wrong, ELSEWHERE)):
        u = NativeUser(prog, new_counts(1), 1, executor.options(dsn, 5))
        try:
            outcome, _, message = await u.connect()
        finally:
            u.close()
        assert outcome == expected, message
    assert ServerIdentity.shown(message) == str(await _who(other.dsn))  # type: ignore[arg-type]


async def test_asyncmy_connections_refuse_another_server(pinned: tuple[Dsn, Dsn]) -> None:
    right, wrong = pinned
    conn = await connect(right, None)
    conn.close()
    with pytest.raises(OtherServer) as refused:
        await connect(wrong, None)
    assert str(right.reaches) in str(refused.value) and "***" in str(refused.value)
    assert wrong.password not in str(refused.value)


@pytest.mark.parametrize("raw", [True, False], ids=["c-executor", "asyncmy"])
async def test_a_pool_whose_user_reached_another_server_stops_the_run(
        pinned: tuple[Dsn, Dsn], raw: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    _, wrong = pinned
    monkeypatch.setattr(users.native, "raw_executor", raw)
    pool = users.UserPool(wrong, QueryWorkload("SELECT 1"), Recorder(("t",)), seed=1)  # type: ignore[arg-type]
    await pool.resize(2)
    try:
        for _ in range(200):
            if pool.health().elsewhere is not None:
                break
            await asyncio.sleep(0.05)
        health = pool.health()
        assert health.elsewhere is not None and str(wrong.reaches) in health.elsewhere
        assert pool.active == 0  # they stop there, not retry against the other server
        stop = TargetWatch(lambda s: s, None).check(health, asked=2, step=1, at_s=1.0, ending=False)
        assert stop is not None and stop.kind == "target_failed" and int(stop.exit_code or 0) == 4
        assert "another server" in (stop.said or "")
    finally:
        await pool.stop_all()


SCENARIO = """
scenario "where do the users go" {
  target env("SAME_DSN")
  setup { sql "CREATE TABLE IF NOT EXISTS same_t (id INT PRIMARY KEY)" }
  workload custom {
    transaction one { query "SELECT 1" }
  }
  workers 2
  users 2
  warmup 1s
  duration 2s
}
"""


def test_localhost_and_a_port_is_that_port_not_the_default_socket(
        server: tuple[Dsn, object], other: EmbeddedServer, tmp_path: Path) -> None:
    """libmariadb reads the host `localhost` as its default socket (MYSQL_UNIX_PORT here, the other
    server's) and drops the port: the users went there while the result named the port's server."""
    dsn = server[0]
    assert other.dsn is not None
    before, mine = asyncio.run(_questions(other.dsn)), asyncio.run(_questions(dsn))
    (tmp_path / "s.bench").write_text(SCENARIO)
    url = f"mysql://root:{quote(dsn.password, safe='')}@localhost:{dsn.port}/{dsn.database}"
    out = run_bench("run", str(tmp_path / "s.bench"), "--headless", "--json", str(tmp_path / "r.json"),
                    env={"SAME_DSN": url, "MYSQL_UNIX_PORT": other.socket})
    assert out.returncode == 0, out.stderr[-2000:]
    result = json.loads((tmp_path / "r.json").read_text())
    measured = result["summary"]["count"]
    assert measured > 100
    assert result["server"]["identity"]["port"] == dsn.port
    # what was measured is what the named server did; the other saw only this test's status queries
    assert asyncio.run(_questions(dsn)) - mine >= measured
    assert asyncio.run(_questions(other.dsn)) - before < 10


class _Switch:
    """A TCP forwarder to the suite's server for the first `first` connections, to the other server
    for every one after: a proxy that sends a run's later connections elsewhere."""

    def __init__(self, first: int, one: int, two: int) -> None:
        self.first, self.one, self.two = first, one, two
        self.loop = asyncio.new_event_loop()
        self.count = 0
        self.port = 0
        ready = threading.Event()
        self.thread = threading.Thread(target=self._serve, args=(ready,), daemon=True)
        self.thread.start()
        ready.wait(10)

    def _serve(self, ready: threading.Event) -> None:
        asyncio.set_event_loop(self.loop)
        srv = self.loop.run_until_complete(asyncio.start_server(self._pipe, "127.0.0.1", 0))
        self.port = srv.sockets[0].getsockname()[1]
        ready.set()
        self.loop.run_forever()
        srv.close()

    async def _pipe(self, r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        self.count += 1
        port = self.one if self.count <= self.first else self.two
        try:
            ur, uw = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            w.close()
            return

        async def copy(a: asyncio.StreamReader, b: asyncio.StreamWriter) -> None:
            try:
                while data := await a.read(65536):
                    b.write(data)
                    await b.drain()
            except OSError:
                pass
            finally:
                b.close()

        await asyncio.gather(copy(r, uw), copy(ur, w))

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


def test_a_run_whose_connections_reach_another_server_ends_with_exit_4(
        server: tuple[Dsn, object], other: EmbeddedServer, tmp_path: Path) -> None:
    """The run meets the server through its first two connections (the database made, the facts
    read); every later one, the set-up's and the users' included, lands on the other server."""
    dsn = server[0]
    assert other.dsn is not None
    switch = _Switch(2, dsn.port, other.dsn.port)
    try:
        (tmp_path / "s.bench").write_text(SCENARIO)
        url = f"mysql://root:{quote(dsn.password, safe='')}@127.0.0.1:{switch.port}/{dsn.database}"
        out = run_bench("run", str(tmp_path / "s.bench"), "--headless", "--json", str(tmp_path / "r.json"),
                        env={"SAME_DSN": url})
    finally:
        switch.close()
    assert out.returncode == 4, out.stderr[-2000:]
    assert "not the one this run measures" in out.stderr
    assert dsn.password not in out.stderr + out.stdout


def test_identity_reads_back_as_written() -> None:
    who = ServerIdentity("db-1", 3306, "/var/lib/mysql/")
    assert ServerIdentity.shown(who.text()) == str(who) == "db-1:3306 (data in /var/lib/mysql/)"
    assert ServerIdentity.shown("proxy\tx") == "proxy x"

