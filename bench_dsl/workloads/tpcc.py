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
import difflib
import hashlib
import json
import random
from dataclasses import dataclass
from typing import Any, Literal

import asyncmy

from bench_dsl import syntax as ast
from bench_dsl.dsn import Dsn
from bench_dsl.errors import BenchError, TargetError
from bench_dsl.model import Fill, SetupSql
from bench_dsl.mysql_errors import RETRYABLE
from bench_dsl.server import connect, connect_explained, error_reason
from bench_dsl.validate_values import Checker, Quantity, name_span, num, span_of
from bench_dsl.workloads import tpcc_load, tpcc_procs
from bench_dsl.workloads.base import Progress, Session, Workload
from bench_dsl.workloads.plugin import WorkloadPlugin, duplicate_settings, on_off, unknown_option
from bench_dsl.workloads.tpcc_check import Condition, check_consistency
from bench_dsl.workloads.tpcc_data import DISTRICTS_PER_WAREHOUSE, RunConstants, run_constants
from bench_dsl.workloads.tpcc_schema import CONSTANTS_TABLE, SCHEMA_VERSION, TABLES
from bench_dsl.workloads.tpcc_session import KEYING_S, THINK_MEAN_S, Inputs, TpccSession, keying_time, think_time

__all__ = ["KEYING_S", "THINK_MEAN_S", "Condition", "Inputs", "Tpcc", "TpccWorkload", "check", "check_consistency",
           "keying_time", "think_time"]

TPCC_TRANSACTIONS = ("new_order", "payment", "order_status", "delivery", "stock_level")
# TPC-C clause 5.2.3: the minimum mix; new_order takes what is left (45% here, as HammerDB and tpcc-mysql).
TPCC_DEFAULT_MIX = (("new_order", 45.0), ("payment", 43.0), ("order_status", 4.0), ("delivery", 4.0),
                    ("stock_level", 4.0))


@dataclass(frozen=True, slots=True)
class TpccWorkload:
    """TPC-C (clauses 1 to 5 of the specification), as tpcc-mysql and HammerDB run it on MySQL."""

    warehouses: int = 1
    mix: tuple[tuple[str, float], ...] = TPCC_DEFAULT_MIX  # percent per transaction, sums to 100
    keying_time: bool = False  # keying and think times of clause 5.2.5; off as in HammerDB
    procedures: bool = False  # the five transactions as stored procedures, one round trip each
    loader_connections: int | None = None  # None: chosen from the machine's cores
    retries: int = 10  # on deadlock (1213) and lock wait timeout (1205)
    kind: Literal["tpcc"] = "tpcc"

    @property
    def transaction_names(self) -> tuple[str, ...]:
        return TPCC_TRANSACTIONS


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

    # data ----------------------------------------------------------------------------------------
    def description(self) -> dict[str, object]:
        s = self.spec
        return {"workload": "tpcc", "warehouses": s.warehouses, "procedures": s.procedures,
                "keying_time": s.keying_time, "mix": dict(s.mix), "schema": SCHEMA_VERSION,
                "loader_connections": s.loader_connections or tpcc_load.default_connections()}

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

    async def load(self, dsn: Dsn, progress: Progress) -> int:
        return await tpcc_load.load(dsn, self.spec.warehouses, self.seed, progress, self.spec.loader_connections)

    async def prepare(self, dsn: Dsn, progress: Progress, force: bool = False) -> dict[str, object]:
        out = await super().prepare(dsn, progress, force)
        conn = await connect(dsn, dsn.database)
        try:
            await self._load_constants(conn)
            if self.spec.procedures:
                fresh = await self.ensure_procedures(conn)
                progress("stored procedures " + ("installed" if fresh else "already installed")
                         + " (procedures = on: one CALL per transaction)")
        finally:
            conn.close()
        return out

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
        return session


async def check(dsn: Dsn, numbers: tuple[int, ...] | None = None) -> list[Condition]:
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


# TPC-C clause 5.2.3: the least share of each transaction but new_order, which takes what is left.
_MINIMUM_SHARE = {"payment": 43.0, "order_status": 4.0, "delivery": 4.0, "stock_level": 4.0}
_OPTIONS = ["warehouses", "keying_time", "procedures", "loader_connections", "retries"]


def validate(c: Checker, node: ast.Workload) -> TpccWorkload | None:
    before = len(c.errors())
    if node.variant is not None:
        c.error("a tpcc workload has no test name", node.variant_span, "workload tpcc { warehouses = 10 }")
    if node.transactions:
        c.error("a tpcc workload has its own five transactions", node.transactions[0].span,
                "set their shares with mix { new_order 45%  payment 43% ... }, or use 'workload custom'")
    duplicate_settings(c, node.settings)
    opts: dict[str, object] = {}
    for st in node.settings:
        if st.name == "warehouses":
            n = c.number(st.value, "warehouses", integer=True, minimum=1)
            if n is not None:
                opts["warehouses"] = int(n)
        elif st.name in ("keying_time", "procedures"):
            if (flag := on_off(c, st)) is not None:
                opts[st.name] = flag
        elif st.name == "loader_connections":
            n = c.number(st.value, "loader_connections", integer=True, minimum=1)
            if n is not None:
                opts["loader_connections"] = int(n)
        elif st.name == "retries":
            n = c.number(st.value, "retries", integer=True, minimum=0)
            if n is not None:
                opts["retries"] = int(n)
        else:
            unknown_option(c, st, "tpcc", _OPTIONS)
    for extra in node.mixes[1:]:
        c.error("'mix' is given more than once", extra.span, "keep one")
    if node.mixes:
        mix = _mix(c, node.mixes[0])
        if mix is not None:
            opts["mix"] = mix
    if len(c.errors()) > before:
        return None
    return TpccWorkload(**opts)  # type: ignore[arg-type]


def _mix(c: Checker, node: ast.Mix) -> tuple[tuple[str, float], ...] | None:
    shares: dict[str, float] = {}
    ok = True
    for entry in node.entries:
        if entry.name not in TPCC_TRANSACTIONS:
            close = difflib.get_close_matches(entry.name, list(TPCC_TRANSACTIONS), n=1, cutoff=0.5)
            c.error(f"tpcc has no transaction '{entry.name}'", name_span(entry.span, entry.name),
                    f"did you mean {close[0]}?" if close else "transactions: " + ", ".join(TPCC_TRANSACTIONS))
            ok = False
            continue
        if entry.name in shares:
            c.error(f"{entry.name} is given twice in the mix", name_span(entry.span, entry.name), "keep one")
            ok = False
            continue
        v = c.numeric(entry.value, f"mix {entry.name}", "a percentage", "45%")
        if not isinstance(v, Quantity) or v.unit != "%":
            if v is not None:
                shown = num(v.value) if isinstance(v, Quantity) else "45"
                c.error("a share of the mix is a percentage" + getattr(v, "origin", ""), span_of(entry.value),
                        f"{entry.name} {shown}%")
            ok = False
            continue
        if v.value < 0:
            c.wrong(v, "a share of the mix cannot be negative", "shares are percentages of 0% or more")
            ok = False
            continue
        shares[entry.name] = v.value
    if not ok:
        return None
    total = sum(shares.values())
    if abs(total - 100.0) > 1e-6:
        c.error(f"the mix adds up to {num(round(total, 6))}%, not 100%", name_span(node.span, "mix"),
                "TPC-C's minimum mix: new_order 45%  payment 43%  order_status 4%  delivery 4%  stock_level 4%")
        return None
    for name, least in _MINIMUM_SHARE.items():
        entry = next((e for e in node.entries if e.name == name), None)
        share = shares.get(name, 0.0)
        if share >= least:
            continue
        hint = "the run goes ahead, but its figures do not compare with TPC-C results"
        if entry is None:
            c.warning(f"{name} is not in the mix: it is not run (TPC-C's minimum is {num(least)}%, clause 5.2.3)",
                      name_span(node.span, "mix"), hint)
        else:
            c.warning(f"{name} {num(share)}% is below TPC-C's minimum of {num(least)}% (clause 5.2.3)",
                      span_of(entry.value), hint)
    # every transaction, in the order of the specification; one left out of the mix is not run
    return tuple((name, shares.get(name, 0.0)) for name in TPCC_TRANSACTIONS)


def declared_transactions(node: ast.Workload) -> tuple[str, ...]:
    return TPCC_TRANSACTIONS


def plan_lines(spec: TpccWorkload) -> list[str]:
    mix = ", ".join(f"{name} {share:g}%" for name, share in spec.mix)
    return [f"  workload: tpcc, {spec.warehouses} warehouse(s) ({mix})",
            f"            keying and think times {'on' if spec.keying_time else 'off'}, "
            f"{'stored procedures' if spec.procedures else 'statements from the client'}, "
            f"{spec.retries} retries on deadlock or lock wait timeout"]


def build(spec: TpccWorkload, setup: tuple[Fill | SetupSql, ...], seed: int) -> Tpcc:
    return Tpcc(spec, seed)


PLUGIN = WorkloadPlugin("tpcc", validate, declared_transactions, plan_lines, build)
