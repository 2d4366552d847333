"""What every workload provides to the engine: its transactions, its data, its sessions."""

from __future__ import annotations

import abc
import hashlib
import json
import random
import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import asyncmy

from bench_dsl.core.dsn import Dsn
from bench_dsl.core.mysql_errors import LOST_CONNECTION
from bench_dsl.core.prepare_report import PrepareReport
from bench_dsl.language.statements import Draw, Transactions
from bench_dsl.server.connect import connect


class Progress:
    """How a loader reports: messages for the log, and rows done out of a total for a progress bar."""

    def __init__(self, log: Callable[[str], None], rows: Callable[[int, int], None] | None = None) -> None:
        self._log = log
        self._rows = rows

    def __call__(self, message: str) -> None:
        self._log(message)

    def rows(self, done: int, total: int) -> None:
        """Call as often as convenient (it is cheap); `total` is the rows the load will write."""
        if self._rows is not None:
            self._rows(done, total)


# rows a call of a Bulk writes (on a connection of its own): the step a load's progress moves by
BULK_ROWS = 100_000


class Bulk(Protocol):
    """A faster way to write a workload's rows than the driver, where one is built (the C
    executor's loader, bench_dsl/native/loader.py): handed to a workload's load by whoever prepares
    it, so that a workload describes its rows and never drives the executor itself."""

    async def rows(self, dsn: Dsn, table: str, columns: Sequence[str], draws: Sequence[Draw], count: int,
                   seed: int) -> None:
        """`count` rows into `table`, each column's value drawn as a statement's draw is (a sequence
        from its start): the same rows for the same draws and seed."""


class IntendedRollback(Exception):
    """Raised by Session.run after a transaction rolled back on purpose (TPC-C's 1% of new orders
    with an unused item): it counts as a completed transaction for latency, and as a rollback."""

    def __init__(self, statements: int) -> None:
        super().__init__(statements)
        self.statements = statements

MARKER_TABLE = "bench_dsl_prepared"


class Session(abc.ABC):
    """One virtual user's view of the workload: its statements and random state."""

    @abc.abstractmethod
    async def run(self, conn: asyncmy.Connection, tx: int) -> int:
        """Run transaction number `tx` once; return the number of statements sent. Raises the
        driver's error on failure; the caller retries or counts it."""

    # True when the session waits between transactions (TPC-C's keying and think times): the
    # engine then awaits pause() before each transaction, outside its measured response time.
    paced: bool = False
    # the user's own values, which the workload's statements() read with user(k) draws (a TPC-C
    # terminal's home warehouse): what the C executor's user is given
    values: tuple[int, ...] = ()

    async def pause(self, tx: int) -> None:
        """Wait as a terminal's user would before transaction `tx` (only called when `paced`)."""

    def forget(self) -> None:
        """The connection was replaced: statements prepared on the old one are gone."""



class Workload(abc.ABC):
    names: tuple[str, ...]
    weights: tuple[float, ...]
    retries: tuple[int, ...]
    retry_on: tuple[frozenset[int], ...]
    # statements() describes its transactions: the users cost the client little CPU (the C executor)
    raw: bool = False

    @abc.abstractmethod
    def description(self) -> dict[str, object]: ...

    def statements(self) -> Transactions | None:
        """What the transactions are, for workloads whose transactions are nothing but prepared
        statements whose results they never read (or only to learn that one rolled back): the engine
        then runs them on the C executor (bench_dsl/native/executor.py), the same description for
        every user, once `ready`. None: every transaction goes through its sessions' `run`."""
        return None

    async def ready(self, dsn: Dsn) -> None:
        """What `statements()` needs from the server, read (and what its statements need on the
        server, made) once in each process that runs users, before the first of them (TPC-C: the
        run's NURand constants, the stored procedures)."""

    @abc.abstractmethod
    def session(self, rng: random.Random, user: int) -> Session:
        """The session of virtual user number `user` (0, 1, 2 ... over the whole run, whichever
        worker process runs it): TPC-C derives each user's home warehouse from it."""

    @abc.abstractmethod
    async def load(self, dsn: Dsn, progress: Progress, bulk: Bulk | None = None) -> int:
        """Create and fill the data; return the rows loaded. `bulk`: where rows may be written faster."""

    def fingerprint(self) -> str:
        return hashlib.sha256(json.dumps(self.description(), sort_keys=True, default=str).encode()).hexdigest()[:32]

    async def prepare(self, dsn: Dsn, progress: Progress, force: bool = False,
                      bulk: Bulk | None = None) -> PrepareReport:
        """Load the data unless a previous prepare with the same description finished."""
        key = self.marker_name()
        fp = self.fingerprint()
        conn = await connect(dsn, dsn.database)
        try:
            async with conn.cursor() as cur:
                await cur.execute(f"CREATE TABLE IF NOT EXISTS {MARKER_TABLE} (name VARCHAR(64) PRIMARY KEY, "
                                  "fingerprint VARCHAR(64) NOT NULL, `rows` BIGINT NOT NULL, seconds DOUBLE NOT NULL, "
                                  "prepared_at TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP)")
                await cur.execute(f"SELECT fingerprint, `rows`, prepared_at FROM {MARKER_TABLE} WHERE name = %s",
                                  (key,))
                row = await cur.fetchone()
                if row is not None and row[0] == fp and not force and await self.still_there(cur):
                    progress(f"data already prepared ({row[1]} rows, {row[2]}); --force-prepare reloads it")
                    return PrepareReport(True, int(row[1]), 0.0, str(row[2]))
                await cur.execute(f"DELETE FROM {MARKER_TABLE} WHERE name = %s", (key,))
        finally:
            conn.close()
        t0 = time.perf_counter()
        rows = await self.load(dsn, progress, bulk)
        secs = time.perf_counter() - t0
        conn = await connect(dsn, dsn.database)
        try:
            async with conn.cursor() as cur:
                await cur.execute(f"REPLACE INTO {MARKER_TABLE} (name, fingerprint, `rows`, seconds) "
                                  "VALUES (%s, %s, %s, %s)", (key, fp, rows, secs))
        finally:
            conn.close()
        progress(f"prepared {rows} rows in {secs:.1f}s ({rows / secs if secs else 0:,.0f} rows/s)")
        return PrepareReport(False, rows, round(secs, 3))

    async def server_counters(self, conn: asyncmy.Connection) -> dict[str, int]:
        """Counters read from the server at each step boundary, whose deltas the run reports beside
        the client's own figures (TPC-C: the sum of d_next_o_id, i.e. new orders as HammerDB counts),
        as its kind declares them (WorkloadPlugin.counted)."""
        return {}

    def rates(self, tps: float) -> dict[str, float] | None:
        """Statements per second by kind at `tps` transactions a second, when the workload knows its
        transactions' statements (sysbench: reads, writes and other, as sysbench prints them)."""
        return None

    def report(self, summary: dict[str, Any]) -> dict[str, Any] | None:
        """What this workload adds to the result from the whole run's summary (TPC-C: the mix run
        and the p90s against the specification's limits); None for nothing."""
        return None

    def report_lines(self, report: dict[str, Any]) -> list[str]:
        """The report as the log says it (the mix run, the p90s against their limits)."""
        lines = []
        if "mix" in report:
            lines.append("mix run: " + ", ".join(f"{n} {m['run_pct']:g}% (asked {m['asked_pct']:g}%)"
                                                 for n, m in report["mix"].items()))
        if "p90_limits" in report:
            lines.append("p90 against the specification: " + ", ".join(
                f"{n} {p['p90_ms']} ms / {p['limit_ms']:g} ms {'ok' if p['within'] else 'OVER'}"
                for n, p in report["p90_limits"].items()))
        return lines

    def marker_name(self) -> str:
        return str(self.description().get("workload", "workload"))[:64]

    async def still_there(self, cur: asyncmy.cursors.Cursor) -> bool:
        """A cheap check that the tables were not dropped behind the marker's back."""
        return True


class TransactionScope:
    """`async with TransactionScope(conn, trx):` the statements inside as one transaction when `trx`
    (begin, then commit; rolled back when anything fails, the commit included), as they come when
    not. A class rather than contextlib's decorator: it runs once per transaction on asyncmy."""

    __slots__ = ("conn", "trx")

    def __init__(self, conn: asyncmy.Connection, trx: bool) -> None:
        self.conn, self.trx = conn, trx

    async def __aenter__(self) -> None:
        if self.trx:
            await self.conn.begin()

    async def __aexit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: object) -> bool:
        if not self.trx:
            return False
        if kind is not None:
            await rollback_quietly(self.conn)
            return False
        try:
            await self.conn.commit()
        except BaseException:
            await rollback_quietly(self.conn)
            raise
        return False


async def rollback_quietly(conn: asyncmy.Connection) -> None:
    """After a failed statement: end the transaction; a broken connection is dealt with by the caller."""
    try:
        await conn.rollback()
    except Exception:
        pass


def error_code(exc: BaseException) -> int:
    """The MySQL error number of a driver exception; 2013 (lost connection) for a broken socket."""
    args = getattr(exc, "args", ())
    if args and isinstance(args[0], int):
        return int(args[0])
    if isinstance(exc, (ConnectionError, OSError, EOFError)):
        return LOST_CONNECTION
    return -1
