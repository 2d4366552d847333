"""`workload custom`: the user's own schema (setup) and transactions."""

from __future__ import annotations

import asyncio
import random
from typing import Any

import asyncmy

from bench_dsl.dsn import Dsn
from bench_dsl.generators import Gen, compile_value
from bench_dsl.model import CustomWorkload, Fill, Scenario, SetupSql, WorkloadSpec
from bench_dsl.rawexec import BEGIN, COMMIT, Program, Statement
from bench_dsl.server import connect
from bench_dsl.workloads.base import Progress, Session, Workload, rollback_quietly

BATCH = 1000
PARALLEL = 4


class Custom(Workload):
    raw = True

    def __init__(self, spec: CustomWorkload, setup: tuple[Fill | SetupSql, ...], seed: int) -> None:
        self.spec = spec
        self.setup = setup
        self.seed = seed
        self.names = spec.transaction_names
        self.weights = tuple(t.weight for t in spec.transactions)
        self.retries = tuple(t.retries for t in spec.transactions)
        self.retry_on = tuple(t.retry_on for t in spec.transactions)
        # sequence() in a transaction is shared by all users: unique keys for inserts
        self._gens = [[(name, compile_value(g, seed)) for name, g in t.lets] for t in spec.transactions]

    def description(self) -> dict[str, object]:
        steps = [s.sql if isinstance(s, SetupSql) else (s.table, s.rows, repr(s.columns)) for s in self.setup]
        # not the seed: data filled with another seed serves as well, and runs without `seed` reuse it
        return {"workload": "custom", "setup": steps}

    def marker_name(self) -> str:
        tables = sorted({s.table for s in self.setup if isinstance(s, Fill)})
        return ("custom:" + ",".join(tables))[:64]

    async def still_there(self, cur: Any) -> bool:
        for s in self.setup:
            if isinstance(s, Fill):
                await cur.execute("SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() "
                                  "AND TABLE_NAME = %s", (s.table,))
                (n,) = await cur.fetchone()
                if not n:
                    return False
        return True

    async def load(self, dsn: Dsn, progress: Progress) -> int:
        total = 0
        conn = await connect(dsn, dsn.database)
        try:
            for step in self.setup:
                if isinstance(step, SetupSql):
                    progress(f"sql: {' '.join(step.sql.split())[:70]}")
                    async with conn.cursor() as cur:
                        await cur.execute(step.sql)
                else:
                    async with conn.cursor() as cur:
                        await cur.execute(f"TRUNCATE TABLE `{step.table}`")
                    total += await self._fill(dsn, step, progress)
        finally:
            conn.close()
        return total

    async def _fill(self, dsn: Dsn, fill: Fill, progress: Progress) -> int:
        cols = ", ".join(f"`{c}`" for c, _ in fill.columns)
        sql = f"INSERT INTO `{fill.table}` ({cols}) VALUES ({', '.join(['%s'] * len(fill.columns))})"
        chunk = -(-fill.rows // PARALLEL)
        written = [0] * PARALLEL

        async def part(k: int) -> int:
            lo, hi = k * chunk, min(fill.rows, (k + 1) * chunk)
            if lo >= hi:
                return 0
            rng = random.Random(self.seed * 7919 + k)
            gens = [compile_value(g, self.seed, offset=lo) for _, g in fill.columns]
            conn = await connect(dsn, dsn.database)
            try:
                async with conn.cursor() as cur:
                    for b in range(lo, hi, BATCH):
                        rows = [tuple(g(rng) for g in gens) for _ in range(min(BATCH, hi - b))]
                        await cur.executemany(sql, rows)
                        written[k] += len(rows)
                        progress.rows(sum(written), fill.rows)
            finally:
                conn.close()
            return hi - lo

        done = sum(await asyncio.gather(*(part(k) for k in range(PARALLEL))))
        progress(f"fill {fill.table}: {done} rows")
        return done

    def session(self, rng: random.Random, user: int) -> Session:
        return _CustomSession(self, rng)


class _CustomSession(Session):
    def __init__(self, wl: Custom, rng: random.Random) -> None:
        self.wl = wl
        self.rng = rng
        self.stmts: dict[str, Any] = {}
        self.plans: list[tuple[list[tuple[str, Gen]], list[tuple[str, tuple[str, ...]]], bool]] = [
            (wl._gens[i], [(q.sql_native, q.params) for q in t.queries], len(t.queries) > 1)
            for i, t in enumerate(wl.spec.transactions)
        ]

    def forget(self) -> None:
        self.stmts.clear()

    async def run(self, conn: asyncmy.Connection, tx: int) -> int:
        gens, queries, trx = self.plans[tx]
        rng = self.rng
        values = {name: g(rng) for name, g in gens}
        if trx:
            await conn.begin()
        try:
            for sql, params in queries:
                st = self.stmts.get(sql)
                if st is None:
                    st = await conn.prepare(sql)
                    self.stmts[sql] = st
                await st.execute(tuple(values[p] for p in params))
            if trx:
                await conn.commit()
        except BaseException:
            if trx:
                await rollback_quietly(conn)
            raise
        return len(queries) + (2 if trx else 0)

    async def raw_program(self, conn: asyncmy.Connection) -> Program | None:
        # custom transactions never read their results: all of them can run on the raw executor
        plans: list[tuple[list[tuple[str, Gen]], list[tuple[Statement, tuple[str, ...]]], bool]] = []
        for gens, queries, trx in self.plans:
            steps = []
            for sql, params in queries:
                st = self.stmts.get(sql)
                if st is None:
                    st = self.stmts[sql] = await conn.prepare(sql)
                steps.append((Statement.of(st), params))
            plans.append((gens, steps, trx))
        rng = self.rng

        def transaction(tx: int) -> list[bytes]:
            gens, steps, trx = plans[tx]
            values = {name: g(rng) for name, g in gens}
            packets = [BEGIN] if trx else []
            packets += [st.packet(*[values[p] for p in params]) for st, params in steps]
            if trx:
                packets.append(COMMIT)
            return packets
        return transaction


def make_workload(sc: Scenario) -> Workload:
    return build_workload(sc.workload, sc.setup, sc.seed)


def build_workload(spec: WorkloadSpec, setup: tuple[Fill | SetupSql, ...], seed: int) -> Workload:
    """The workload of a scenario from just the parts a worker process needs to be sent."""
    from bench_dsl.workloads.sysbench import Sysbench

    if spec.kind == "sysbench":
        return Sysbench(spec, seed)
    if spec.kind == "tpcc":
        from bench_dsl.workloads.tpcc import Tpcc

        return Tpcc(spec, seed)
    return Custom(spec, setup, seed)
