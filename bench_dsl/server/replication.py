"""Replicas and their lag.

Embedded: `server { replicas = N }` makes the throwaway server a primary with a binary log and
starts N throwaway replicas attached to it with GTIDs. Remote: `replica "mysql://..."` names
replicas that already replicate the target.

The lag is measured with a heartbeat, as pt-heartbeat does, not with Seconds_Behind_Master
(which reads 0 or NULL while a stopped SQL thread or a long transaction holds a replica back):
every HEARTBEAT_S the coordinator writes a numbered row into `bench_heartbeat` on the primary, and
reads the number each replica has. A replica that has the newest row is not behind (by less than
HEARTBEAT_S); one that has row k is behind by at least the age of row k+1, the first it has not
applied. Both times are the coordinator's own clock, so the hosts' clocks do not matter."""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

import asyncmy

from bench_dsl.core.aio import cancel_and_wait
from bench_dsl.core.dsn import Dsn, quote_identifier
from bench_dsl.core.errors import TargetError, error_reason
from bench_dsl.server.connect import connect
from bench_dsl.server.embedded import EmbeddedServer

HEARTBEAT_S = 0.25
TABLE = "bench_heartbeat"


@dataclass(frozen=True, slots=True)
class ReplicaLag:
    """One replica at one moment."""

    lag_s: float | None  # the heartbeat's; None: not read yet
    seconds_behind_master: float | None  # what the replica itself says (NULL: None)
    io_running: str | None
    sql_running: str | None
    # the replica's own SHOW GLOBAL STATUS (REPLICA_STATUS): per variable, its value and its growth
    # per second since the reading before (about a second earlier)
    status: dict[str, dict[str, float | None]] | None = None


# What a replica's own counters say of the work it applies, read once a second beside the lag.
REPLICA_STATUS = ("Threads_running", "Handler_write", "Handler_update", "Handler_delete", "Innodb_rows_inserted",
                  "Innodb_rows_updated", "Innodb_rows_deleted", "Innodb_data_writes", "Innodb_data_fsyncs",
                  "Innodb_buffer_pool_reads", "Innodb_os_log_written")


async def start_replicas(primary: EmbeddedServer, n: int, settings: tuple, keep: bool,
                         log: Callable[[str], None]) -> list[EmbeddedServer]:
    """N throwaway replicas of `primary` (started with role="primary"), attached from its current
    GTID position: what was there before (its own set-up) stays its own."""
    assert primary.dsn is not None
    replicas: list[EmbeddedServer] = []
    try:
        for i in range(n):
            r = EmbeddedServer(settings, keep=keep, max_connections=primary.max_connections, parent=primary.parent,
                               role="replica", server_id=101 + i)
            replicas.append(r)
            await r.start()
        user, password = "bench_repl", secrets.token_urlsafe(24)
        conn = await connect(primary.dsn)
        try:
            async with conn.cursor() as cur:
                await cur.execute("SET SESSION sql_log_bin = 0")  # the account is the primary's alone
                await cur.execute("CREATE USER %s@'127.0.0.1' IDENTIFIED BY %s", (user, password))
                await cur.execute("GRANT REPLICATION SLAVE ON *.* TO %s@'127.0.0.1'", (user,))
                await cur.execute("SELECT @@GLOBAL.gtid_binlog_pos")
                (position,) = await cur.fetchone()
        finally:
            conn.close()
        for r in replicas:
            assert r.dsn is not None
            conn = await connect(r.dsn)
            try:
                async with conn.cursor() as cur:
                    await cur.execute("SET GLOBAL gtid_slave_pos = %s", (position or "",))
                    await cur.execute("CHANGE MASTER TO MASTER_HOST = '127.0.0.1', MASTER_PORT = %s, "
                                      "MASTER_USER = %s, MASTER_PASSWORD = %s, MASTER_USE_GTID = slave_pos",
                                      (primary.port, user, password))
                    await cur.execute("START SLAVE")
            finally:
                conn.close()
        log(f"{n} throwaway replica{'s' if n > 1 else ''} attached (ports "
            + ", ".join(str(r.port) for r in replicas) + ")")
        return replicas
    except BaseException as exc:
        for r in replicas:
            with contextlib.suppress(Exception):
                r.stop()
        if isinstance(exc, asyncmy.errors.MySQLError):
            raise TargetError(f"could not set up the replicas: {error_reason(exc)}") from None
        raise


class Heartbeat:
    """Writes the heartbeat on the primary and reads it on every replica, in the background."""

    def __init__(self, primary: Dsn, replicas: list[Dsn], warn: Callable[[str], None]) -> None:
        self.primary = primary
        self.replicas = replicas
        self.warn = warn
        self.written: deque[tuple[int, float]] = deque(maxlen=int(3600 / HEARTBEAT_S))  # (seq, time)
        self.state: list[ReplicaLag] = [ReplicaLag(None, None, None, None) for _ in replicas]
        self._counters: list[tuple[float, dict[str, float]] | None] = [None] * len(replicas)
        self._task: asyncio.Task[None] | None = None
        self._warned: set[str] = set()

    async def start(self) -> None:
        conn = await connect(self.primary, self.primary.database)
        try:
            async with conn.cursor() as cur:
                await cur.execute(f"CREATE TABLE IF NOT EXISTS {quote_identifier(TABLE)} "
                                  "(id TINYINT PRIMARY KEY, seq BIGINT NOT NULL, written DOUBLE NOT NULL)")
        finally:
            conn.close()
        self._task = asyncio.create_task(self._loop())

    async def stop(self) -> None:
        await cancel_and_wait(self._task)

    def worst(self) -> float | None:
        lags = [s.lag_s for s in self.state if s.lag_s is not None]
        return max(lags) if lags else None

    def snapshot(self) -> list[ReplicaLag]:
        return list(self.state)

    async def _loop(self) -> None:
        writer: asyncmy.Connection | None = None
        readers: list[asyncmy.Connection | None] = [None] * len(self.replicas)
        seq = 0
        rounds = 0
        try:
            while True:
                t = time.monotonic()
                try:
                    if writer is None:
                        writer = await connect(self.primary, self.primary.database, timeout=5)
                    async with writer.cursor() as cur:
                        await asyncio.wait_for(cur.execute(
                            f"REPLACE INTO {quote_identifier(TABLE)} VALUES (1, %s, %s)", (seq + 1, time.time())), 5)
                    seq += 1  # only a row written is counted: the numbers stay consecutive
                    self.written.append((seq, time.monotonic()))
                except Exception as exc:
                    self._say("primary", f"could not write the heartbeat on the primary: {error_reason(exc)}")
                    writer = None
                for i, dsn in enumerate(self.replicas):
                    readers[i] = await self._read(i, dsn, readers[i], full=rounds % 4 == 0)
                rounds += 1
                await asyncio.sleep(max(0.0, HEARTBEAT_S - (time.monotonic() - t)))
        finally:
            for c in [writer, *readers]:
                if c is not None:
                    with contextlib.suppress(Exception):
                        c.close()

    async def _read(self, i: int, dsn: Dsn, conn: asyncmy.Connection | None, full: bool) -> asyncmy.Connection | None:
        now = time.monotonic()
        try:
            if conn is None:
                conn = await connect(dsn, dsn.database, timeout=5)
            async with conn.cursor() as cur:
                await asyncio.wait_for(cur.execute(f"SELECT seq FROM {quote_identifier(TABLE)} WHERE id = 1"), 5)
                row = await cur.fetchone()
                old = self.state[i]
                behind, io, sql, counters = old.seconds_behind_master, old.io_running, old.sql_running, old.status
                if full:  # once a second: what the replica itself says, recorded beside
                    await asyncio.wait_for(cur.execute("SHOW SLAVE STATUS"), 5)
                    status = await cur.fetchone()
                    names = [d[0] for d in cur.description or ()]
                    if status is not None:
                        got = dict(zip(names, status))
                        sbm = got.get("Seconds_Behind_Master", got.get("Seconds_Behind_Source"))
                        behind = None if sbm is None else float(sbm)
                        io = got.get("Slave_IO_Running", got.get("Replica_IO_Running"))
                        sql = got.get("Slave_SQL_Running", got.get("Replica_SQL_Running"))
                    await asyncio.wait_for(cur.execute("SHOW GLOBAL STATUS WHERE Variable_name IN ("
                                                       + ", ".join(["%s"] * len(REPLICA_STATUS)) + ")",
                                                       REPLICA_STATUS), 5)
                    counters = self._rates(i, {str(k).lower(): float(v) for k, v in await cur.fetchall()})
        except Exception as exc:
            self._say(f"replica {i}", f"could not read the heartbeat on replica {i + 1} ({dsn.redacted()}): "
                      f"{error_reason(exc)}")
            with contextlib.suppress(Exception):
                if conn is not None:
                    conn.close()
            return None
        have = int(row[0]) if row else 0
        self.state[i] = ReplicaLag(self._lag(have, now), behind, io, sql, counters)
        return conn

    def _rates(self, i: int, values: dict[str, float]) -> dict[str, dict[str, float | None]]:
        now = time.monotonic()
        before, self._counters[i] = self._counters[i], (now, values)
        out: dict[str, dict[str, float | None]] = {}
        for k, v in values.items():
            rate = None
            if before is not None and k in before[1] and now > before[0] and v >= before[1][k]:
                rate = round((v - before[1][k]) / (now - before[0]), 2)
            out[k] = {"value": v, "per_s": rate}
        return out

    def _lag(self, have: int, now: float) -> float | None:
        """Behind by the age of the first heartbeat the replica has not applied (0 when it has the
        newest one)."""
        if not self.written:
            return None
        first = self.written[0][0]
        if have + 1 > self.written[-1][0]:
            return 0.0
        # the numbers written are consecutive: row have+1 is found by its place, not by a search
        _, at = self.written[max(0, have + 1 - first)]
        return round(max(0.0, now - at), 3)

    def _say(self, key: str, message: str) -> None:
        if key not in self._warned:  # once per source: a replica down says so, not four times a second
            self._warned.add(key)
            self.warn(message)
