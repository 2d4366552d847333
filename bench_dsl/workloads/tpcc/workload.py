"""TPC-C (the specification's clauses 1 to 5) as tpcc-mysql and HammerDB run it on MySQL: nine
tables, a parallel loader, the five transactions with NURand inputs, home warehouses, 1% of new
orders rolled back, and the counters NOPM is computed from. The plugin of the kind `tpcc`: its spec
(TpccWorkload), its validation (options and the mix against clause 5.2.3's minimums), its lines in
`bench check --plan`, and what runs it.

Client-side mode sends each transaction as a few server-side prepared statements chosen to keep
round trips low (one IN (...) query for all of an order's items, one for its stocks, the order
lines in one bulk insert, updates of hot rows placed just before COMMIT so their locks are held for
one round trip). `procedures = on` sends one CALL per transaction instead (tpcc_procs)."""

from __future__ import annotations

import asyncio
import hashlib
import json
import random
from typing import Any

import asyncmy

from bench_dsl.core.dsn import Dsn
from bench_dsl.core.errors import BenchError, TargetError, error_reason
from bench_dsl.core.mysql_errors import RETRYABLE
from bench_dsl.core.prepare_report import PrepareReport
from bench_dsl.language.statements import Pause, Transactions
from bench_dsl.server.connect import connect, connect_explained
from bench_dsl.workloads.base import Bulk, Progress, Session, Workload
from bench_dsl.workloads.tpcc import client_sql, load
from bench_dsl.workloads.tpcc import procs as tpcc_procs
from bench_dsl.workloads.tpcc.consistency import ConsistencyCondition, check_consistency
from bench_dsl.workloads.tpcc.data import (
    DISTRICTS_PER_WAREHOUSE,
    RunConstants,
    run_constants,
)
from bench_dsl.workloads.tpcc.plugin import TPCC_TRANSACTIONS, TpccWorkload
from bench_dsl.workloads.tpcc.schema import CONSTANTS_TABLE, SCHEMA_VERSION, TABLES
from bench_dsl.workloads.tpcc.session import (
    KEYING_S,
    THINK_CUT,
    THINK_MEAN_S,
    Inputs,
    TpccSession,
    keying_time,
    think_time,
)

__all__ = ["KEYING_S", "THINK_MEAN_S", "ConsistencyCondition", "Inputs", "Tpcc", "TpccWorkload", "check",
           "check_consistency", "keying_time", "think_time"]


# Deadlock, lock wait timeout, record changed: the transaction is retried (as HammerDB does).
RETRY_ON = RETRYABLE  # deadlock, lock wait timeout, record changed

# Clause 5.2.5.3: the 90th percentile response time each transaction must stay within.
P90_LIMIT_S = {"new_order": 5.0, "payment": 5.0, "order_status": 5.0, "delivery": 5.0, "stock_level": 20.0}


class Tpcc(Workload):
    def __init__(self, spec: TpccWorkload, seed: int) -> None:
        self.spec = spec
        self.seed = seed
        self.names = TPCC_TRANSACTIONS
        mix = dict(spec.mix)
        self.weights = tuple(float(mix.get(n, 0.0)) for n in self.names)
        self.retries = (spec.retries,) * len(self.names)
        self.retry_on = (RETRY_ON,) * len(self.names)
        self.constants: RunConstants | None = None
        self._procedures_ready = False
        self._procedures_lock = asyncio.Lock()
        # both modes run on the C executor (procs.statements, client_sql.statements); where a statement
        # cannot be prepared there (no JSON_TABLE), the terminals run on asyncmy
        self.raw = True

    # data ----------------------------------------------------------------------------------------
    def description(self) -> dict[str, object]:
        s = self.spec
        return {"workload": "tpcc", "warehouses": s.warehouses, "procedures": s.procedures,
                "keying_time": s.keying_time, "mix": dict(s.mix), "schema": SCHEMA_VERSION,
                "loader_connections": s.loader_connections or load.default_connections()}

    def fingerprint(self) -> str:
        # Only what shapes the data: a run with procedures, keying times or another mix reuses it.
        data = {"workload": "tpcc", "warehouses": self.spec.warehouses, "schema": SCHEMA_VERSION}
        return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:32]

    def marker_name(self) -> str:
        return "tpcc"

    async def still_there(self, cur: Any) -> bool:
        await cur.execute("SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() "
                          f"AND TABLE_NAME IN ({', '.join(['%s'] * (len(TABLES) + 1))})", (*TABLES, CONSTANTS_TABLE))
        (n,) = await cur.fetchone()
        if int(n) != len(TABLES) + 1:
            return False
        await cur.execute("SELECT COUNT(*) FROM warehouse")
        (w,) = await cur.fetchone()
        return int(w) == self.spec.warehouses

    async def load(self, dsn: Dsn, progress: Progress, bulk: Bulk | None = None) -> int:
        return await load.load(dsn, self.spec.warehouses, self.seed, progress, self.spec.loader_connections)

    async def prepare(self, dsn: Dsn, progress: Progress, force: bool = False,
                      bulk: Bulk | None = None) -> PrepareReport:
        out = await super().prepare(dsn, progress, force, bulk)
        fresh = await self._ready(dsn)
        if self.spec.procedures:
            progress("stored procedures " + ("installed" if fresh else "already installed")
                     + " (procedures = on: one CALL per transaction)")
        return out

    def statements(self) -> Transactions | None:
        if self.constants is None:
            return None
        pauses = tuple(Pause(KEYING_S[i], THINK_MEAN_S[i], THINK_CUT * THINK_MEAN_S[i]) for i in range(len(self.names)))
        describe = tpcc_procs.statements if self.spec.procedures else client_sql.statements
        return describe(self.constants, self.spec.warehouses, self.names, pauses if self.spec.keying_time else ())

    async def ready(self, dsn: Dsn) -> None:
        await self._ready(dsn)

    async def _ready(self, dsn: Dsn) -> bool:
        """The run's constants read and, procedures = on, the procedures there (prepare and each
        worker process): True when they had to be (re)created."""
        if self.constants is not None and (self._procedures_ready or not self.spec.procedures):
            return False
        conn = await connect(dsn, dsn.database)
        try:
            await self._load_constants(conn)
            return self.spec.procedures and await self.ensure_procedures(conn)
        finally:
            conn.close()

    async def ensure_procedures(self, conn: asyncmy.Connection) -> bool:
        """Make sure this version of the stored procedures is on the server (prepare installs them;
        worker processes only check). True when they had to be (re)created."""
        async with self._procedures_lock:
            if self._procedures_ready:
                return False
            fresh = await tpcc_procs.install(conn)
            self._procedures_ready = True
            return fresh

    async def _load_constants(self, conn: asyncmy.Connection) -> RunConstants:
        """C_RUN for C_LAST must differ from the load's C_LOAD as clause 2.1.6.1 says, so it is
        chosen against the constant stored with the data."""
        if self.constants is None:
            async with conn.cursor() as cur:
                await cur.execute(f"SELECT value FROM {CONSTANTS_TABLE} WHERE name = 'c_last'")
                row = await cur.fetchone()
            if row is None:
                raise BenchError("the TPC-C data has no load constants (table tpcc_constants): load it again with "
                                 "bench prepare --force-prepare")
            self.constants = run_constants(int(row[0]), random.Random(self.seed * 1_000_003 + 11))
        return self.constants

    async def server_counters(self, conn: asyncmy.Connection) -> dict[str, int]:
        # HammerDB's NOPM: every committed new order moved its district's d_next_o_id on by one.
        async with conn.cursor() as cur:
            await cur.execute("SELECT SUM(d_next_o_id) FROM district")
            (n,) = await cur.fetchone()
        return {"new_orders": int(n or 0)}

    def report(self, summary: dict[str, Any]) -> dict[str, Any]:
        """The mix actually run and each transaction's p90 against clause 5.2.5.3's limits."""
        txs = summary["transactions"]
        total = sum(t["count"] for t in txs.values()) or 1
        asked = dict(self.spec.mix)
        return {
            "nopm": summary.get("nopm"),
            "mix": {n: {"asked_pct": asked.get(n, 0.0), "run_pct": round(100.0 * txs[n]["count"] / total, 2)}
                    for n in self.names},
            "p90_limits": {n: {"p90_ms": txs[n]["latency_ms"]["p90"], "limit_ms": P90_LIMIT_S[n] * 1000,
                               "within": (txs[n]["latency_ms"]["p90"] is not None
                                          and txs[n]["latency_ms"]["p90"] <= P90_LIMIT_S[n] * 1000)}
                           for n in self.names},
        }

    # users ---------------------------------------------------------------------------------------
    def session(self, rng: random.Random, user: int) -> Session:
        # Users spread evenly over warehouses, as in tpcc-mysql and HammerDB; within a warehouse each
        # of the first ten users has its own district for Stock-Level (clause 2.8.1.1).
        w = user % self.spec.warehouses + 1
        d = (user // self.spec.warehouses) % DISTRICTS_PER_WAREHOUSE + 1
        session: Session = (tpcc_procs.ProcedureSession(self, rng, w, d) if self.spec.procedures
                             else TpccSession(self, rng, w, d))
        # keying_time = on: the engine awaits pause() before each transaction, outside its response time
        session.paced = self.spec.keying_time
        session.values = (w, d)  # the C executor's user(0) and user(1) (tpcc_procs.statements)
        return session


async def check(dsn: Dsn, numbers: tuple[int, ...] | None = None) -> list[ConsistencyCondition]:
    """The consistency conditions of clause 3.3.2 (all, or those numbered) on the data at `dsn`."""
    conn = await connect_explained(dsn, dsn.database, timeout=10)
    try:
        async with conn.cursor() as cur:
            await cur.execute("SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE()")
            present = {str(r[0]).lower() for r in await cur.fetchall()}
        missing = [t for t in TABLES if t not in present]
        if missing:
            what = "tables" if len(missing) == len(TABLES) else f"table {', '.join(missing)}"
            raise BenchError(f"{dsn.redacted()} has no TPC-C data (no {what}): load it with `bench prepare FILE` "
                             "on a scenario with this target")
        return await check_consistency(conn, numbers)
    except asyncmy.errors.MySQLError as exc:
        raise TargetError(f"checking {dsn.redacted()} failed: {error_reason(exc)}") from None
    finally:
        conn.close()


