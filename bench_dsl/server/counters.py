"""The coordinator's own connection to the server (never a user's, and one only: a user's
MAX_USER_CONNECTIONS counts it): the server's own count of what happened, read at the start and
end of each step (TPM as HammerDB computes it, Com_commit + Com_rollback, and for TPC-C, NOPM from
the districts' next order ids), and about once a second one SHOW GLOBAL STATUS of the variables
the result records (STATUS_DEFAULT and those conditions name): it is also the ping that tells a
hung server."""

from __future__ import annotations

import asyncio
import contextlib
import difflib
import os
import time
from collections.abc import Awaitable, Callable
from typing import Any

import asyncmy

from bench_dsl.core.dsn import Dsn
from bench_dsl.core.figures import Counted, Figure
from bench_dsl.measure import processlist
from bench_dsl.measure.metrics import StatusSample
from bench_dsl.server.connect import connect
from bench_dsl.server.figures import SECONDS, TPM

# What every interval and step records of SHOW GLOBAL STATUS (docs/language.md lists them): what
# the rows, the disk, the redo log, the locks and the statements did. A name the server does not
# have is left out: MariaDB 10.6 and later have no Innodb_rows_* (REMOVED_BY_MARIADB).
STATUS_DEFAULT = (
    "Innodb_rows_read", "Innodb_rows_inserted", "Innodb_rows_updated", "Innodb_rows_deleted",
    "Rows_read", "Handler_write", "Handler_update", "Handler_delete",
    "Innodb_data_reads", "Innodb_data_writes", "Innodb_data_fsyncs",
    "Innodb_buffer_pool_reads", "Innodb_buffer_pool_read_requests", "Innodb_os_log_written",
    "Innodb_row_lock_waits", "Innodb_row_lock_time", "Threads_running", "Threads_connected",
    "Com_select", "Com_insert", "Com_update", "Com_delete", "Com_commit", "Com_rollback",
    "Questions", "Created_tmp_disk_tables", "Slow_queries",
    # what the bottleneck's rules read (bench_dsl.attribution): misses the read-ahead did not ask for
    # and a pool too small for its writes, the redo log's checkpoint against its limit, row locks
    # waited on now and deadlocks, table locks, connections refused for max_connections
    "Innodb_buffer_pool_read_ahead", "Innodb_buffer_pool_wait_free", "Innodb_checkpoint_age",
    "Innodb_checkpoint_max_age", "Innodb_row_lock_current_waits", "Innodb_deadlocks", "Table_locks_waited",
    "Connection_errors_max_connections",
)
# Those that are readings, not counts: a window records their mean over its readings beside the last
# (the one at its end is a point sample: Threads_running read once is 1, the reader itself)
GAUGES = frozenset(n.lower() for n in ("Threads_running", "Threads_connected", "Innodb_checkpoint_age",
                                       "Innodb_row_lock_current_waits"))

# The counters MySQL has and MariaDB removed (MDEV-28539, in 10.6 and later), each with what counts
# the same there: a condition that names one is told what to write instead. Rows_read and the
# Handler_* counters count the rows of every engine, system tables included (as Innodb_system_rows_*).
_READ = ("Rows_read", "rows read by every engine (Handler_read_key, Handler_read_next, Handler_read_rnd_next ... "
         "count them by kind of read)")
REMOVED_BY_MARIADB = {  # name -> (what counts the same, what it counts)
    **dict.fromkeys(("innodb_rows_read", "innodb_system_rows_read"), _READ),
    **{f"innodb_{system}rows_{done}": (handler, f"rows {done} by every engine")
       for system in ("", "system_")
       for done, handler in (("inserted", "Handler_write"), ("updated", "Handler_update"),
                             ("deleted", "Handler_delete"))},
}

# BENCH_SAMPLE_SESSIONS=0 leaves out the ping's round trip and the processlist at each reading (the
# status is read as ever): for the benchmark harness alone (bench/sampling.py), which runs the same
# scenario with and without them to measure what they cost. A run without them has neither a step's
# "processlist" nor its "network", which bench_dsl.attribution's table-locks and network rules read.
SAMPLE_SESSIONS = "BENCH_SAMPLE_SESSIONS"

# seconds without an answer before the counters are given up: a host gone without a reset must not
# hold the run for the kernel's retransmission timeout
ANSWER_TIMEOUT = 10.0

CounterReading = tuple[float, dict[str, int]]  # (monotonic time, counters)


class ServerCounters:
    def __init__(self, workload_counters: Callable[[asyncmy.Connection], Awaitable[dict[str, int]]],
                 warn: Callable[[str], None], counted: tuple[Counted, ...] = ()) -> None:
        self.workload_counters = workload_counters
        self.counted = (TPM, *counted)  # the step figures: the core's, then the workload's
        self.warn = warn
        self.ctl: asyncmy.Connection | None = None
        self.step_start: CounterReading | None = None
        self.step_end: CounterReading | None = None
        self.lock = asyncio.Lock()  # one query at a time on the connection
        self.opened = False
        self._dsn: Dsn | None = None
        self.answered = time.monotonic()  # when the server last answered on it
        self._ping: asyncio.Task[None] | None = None
        self.status_names: tuple[str, ...] = ()
        self._status: tuple[float, dict[str, float]] | None = None  # the newest reading
        self._taken: tuple[float, dict[str, float]] | None = None  # the one the last tick ended at
        self._states: dict[str, int] | None = None  # the processlist's sessions by state, read with it
        self._rtt_ms: float | None = None  # a ping's round trip, just before it
        self.sessions = os.environ.get(SAMPLE_SESSIONS, "1").strip() != "0"  # ping and processlist read

    async def open(self, dsn: Dsn) -> None:
        self._dsn = dsn
        with contextlib.suppress(Exception):
            self.ctl = await connect(dsn, dsn.database)
        self.opened = self.ctl is not None
        self.answered = time.monotonic()
        await self.rebase_status()

    async def rebase_status(self) -> None:
        """A status reading now, and the next tick's sample starts from it: a measured phase's
        figures begin where it begins, not at the last reading of the phase before."""
        await self.refresh_status()
        self._taken = self._status

    async def refresh_status(self) -> None:
        """A status reading now (a phase's last tick ends at it, not up to a second before)."""
        if self.ctl is None or not self.status_names:
            return
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._select_1(self.ctl), ANSWER_TIMEOUT)
    def poke(self) -> None:
        """`SELECT 1`, unless one is still waiting for its answer. A user's transaction may rightly
        take long; this query never should. A connection given up on (a read that timed out) is
        opened again: one slow answer must not leave the server's silence counting for good."""
        if self._ping is not None and not self._ping.done():
            return
        if self.ctl is not None and not self.lock.locked():
            self._ping = asyncio.create_task(self._select_1(self.ctl))
        elif self.ctl is None and self.opened and self._dsn is not None:
            self._ping = asyncio.create_task(self._reopen(self._dsn))

    async def _reopen(self, dsn: Dsn) -> None:
        with contextlib.suppress(Exception):
            self.ctl = await connect(dsn, dsn.database, timeout=5)
            self.answered = time.monotonic()

    async def _select_1(self, ctl: asyncmy.Connection) -> None:
        async with self.lock:
            try:
                async with ctl.cursor() as cur:
                    if self.status_names:
                        # a round trip that asks the server for nothing (COM_PING: no statement, so
                        # in no Com_* counter nor Questions): the least of a step's is the network's
                        # (a busy event loop only ever adds to one)
                        if self.sessions:
                            sent = time.monotonic()
                            await ctl.ping(reconnect=False)
                            self._rtt_ms = 1000.0 * (time.monotonic() - sent)
                        # the reading's moment is when it was asked for: the server reads its counters
                        # at once, while the answer may wait for a busy event loop to be taken in
                        asked = time.monotonic()
                        await cur.execute("SHOW GLOBAL STATUS WHERE Variable_name IN ("
                                          + ", ".join(["%s"] * len(self.status_names)) + ")", self.status_names)
                        rows = await cur.fetchall()
                        status = {str(k).lower(): float(v) for k, v in rows if _numeric(v)}
                        self._status = (asked, status)
                        if self.sessions:
                            self._states = await _states(cur, ctl.thread_id())
                    else:
                        await cur.execute("SELECT 1")
                        await cur.fetchall()
                self.answered = time.monotonic()
            except Exception:
                pass  # not the judge of a lost server: the users' health is

    def take_status(self) -> StatusSample | None:
        """What the status variables did since the reading the last tick took (None: no newer
        reading, e.g. the server is slow to answer; the next tick's sample covers the gap)."""
        now = self._status
        if now is None or (self._taken is not None and now[0] <= self._taken[0]):
            return None
        before, self._taken = self._taken, now
        if before is None:
            return None  # the first reading: nothing to subtract it from yet
        # a counter that went down is a server restarted or FLUSH STATUS: no growth to tell
        grew = {k: v - before[1][k] for k, v in now[1].items() if k in before[1] and v >= before[1][k]}
        return StatusSample(now[0] - before[0], grew, dict(now[1]), now[0], GAUGES, self._states, self._rtt_ms)

    def silent_s(self) -> float:
        """Seconds the server has answered nothing on this connection (0 if it never had one; a
        connection given up on keeps counting from the server's last answer)."""
        return time.monotonic() - self.answered if self.opened else 0.0

    def close(self, final: bool = False) -> None:
        """`final`: the run's end; otherwise the next poke opens the connection again."""
        if final:
            self._dsn = None
        if self._ping is not None and not self._ping.done():
            self._ping.cancel()
        if self.ctl is not None:
            with contextlib.suppress(Exception):
                self.ctl.close()
            self.ctl = None

    async def read(self) -> CounterReading | None:
        """The counters now (None when unreadable, said as a warning; the connection is opened
        again by the next ping)."""
        if self.ctl is None:
            return None
        if (silent := self.silent_s()) > ANSWER_TIMEOUT:
            # answered nothing for longer than a reading waits (a hung server): waiting again would
            # only hold the run's end, and what was measured, by as long
            self.warn(f"could not read the server's counters: it has answered nothing for {silent:.0f}s")
            self.close()
            return None
        ctl = self.ctl

        async def read() -> dict[str, int]:
            async with self.lock, ctl.cursor() as cur:  # the wait for a hung ping is in the timeout too
                await cur.execute("SHOW GLOBAL STATUS WHERE Variable_name IN ('Com_commit', 'Com_rollback')")
                counters = {"commits_rollbacks": sum(int(v) for _, v in await cur.fetchall())}
                return counters | await self.workload_counters(ctl)
        try:
            counters = await asyncio.wait_for(read(), ANSWER_TIMEOUT)
            self.answered = time.monotonic()
        except Exception as exc:
            why = f"no answer in {ANSWER_TIMEOUT:g}s" if isinstance(exc, TimeoutError) else str(exc)
            self.warn(f"could not read the server's counters: {why}")
            self.close()
            return None
        return time.monotonic(), counters

    async def begin_step(self) -> None:
        self.step_start = await self.read()
        self.step_end = None

    async def end_step(self) -> None:
        """At the step's last tick: the server's counters at the same moment as the client's."""
        self.step_end = await self.read()

    async def step_figures(self) -> dict[str, Any] | None:
        """Per minute over the step, from the counters read when it began and ended (or now, for a
        step cut short)."""
        before = self.step_start
        after = self.step_end or await self.read()
        self.step_end = None
        if before is None or after is None or after[0] <= before[0]:
            return None
        minutes = (after[0] - before[0]) / 60
        out: dict[str, Any] = {SECONDS.name: round(after[0] - before[0], 3)}
        for c in self.counted:
            if c.counter in after[1] and c.counter in before[1]:
                out[c.figure.name] = round((after[1][c.counter] - before[1][c.counter]) / minutes, c.figure.digits)
        return out

    def compared(self, server: dict[str, Any], client: dict[str, Any]) -> dict[str, Any]:
        """A step's server figures with, for each that has a client's figure of the same thing, how
        far apart the two are (% of the server's; null when the server counted none)."""
        out = dict(server)
        for c in self.counted:
            mine, theirs = server.get(c.figure.name), client.get(c.client) if c.client else None
            if mine is not None and theirs:
                out[f"{c.figure.name}_client_vs_server_pct"] = (round(100.0 * (theirs - mine) / mine, 2)
                                                                 if mine else None)
        return out

    def figures(self) -> tuple[Figure, ...]:
        """What a step's "server" holds (core.figures)."""
        return (SECONDS, *(f for c in self.counted for f in c.figures()))


async def _states(cur: Any, own_id: int | None) -> dict[str, int] | None:
    """The processlist's sessions by state; None when it cannot be read (the status readings go on)."""
    try:
        await cur.execute(processlist.QUERY)
        return processlist.states_of(list(await cur.fetchall()), own_id)
    except Exception:
        return None


def _numeric(v: object) -> bool:
    try:
        float(v)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return False
    return True


async def unknown_status(dsn: Dsn, names: list[str]) -> dict[str, str]:
    """Of `names`, those the server's SHOW GLOBAL STATUS does not have, each with what to write
    instead: the counter that replaced one MariaDB removed, else the closest names it has."""
    if not names:
        return {}
    conn = await connect(dsn, dsn.database)
    try:
        async with conn.cursor() as cur:
            await cur.execute("SHOW GLOBAL STATUS")
            have = sorted(str(k) for k, _ in await cur.fetchall())
            await cur.execute("SELECT VERSION()")
            (version,) = await cur.fetchone()
    finally:
        conn.close()
    lower = {h.lower() for h in have}
    out = {}
    for n in names:
        if n.lower() in lower:
            continue
        if "mariadb" in str(version).lower() and (instead := REMOVED_BY_MARIADB.get(n.lower())) is not None:
            out[n] = (f"MariaDB removed the Innodb_rows_* and Innodb_system_rows_* counters MySQL still has: "
                      f"status({instead[0]}) counts the {instead[1]}")
            continue
        close = difflib.get_close_matches(n, have, n=3, cutoff=0.6)
        out[n] = f"did you mean {' or '.join(close)}?" if close else "SHOW GLOBAL STATUS lists them"
    return out
