"""What runs a custom workload against a server: its setup (SQL and generated fills, loaded in
parallel) and a user's session on asyncmy (the C executor runs the statements the plugin
describes). Loaded when a run builds the workload, never by `bench check`."""

from __future__ import annotations

import asyncio
import random
from typing import Any

import asyncmy

from bench_dsl.core.dsn import Dsn, quote_identifier
from bench_dsl.language.generators import Gen, compile_value, native_draw
from bench_dsl.language.model import Fill, Generator, SetupSql
from bench_dsl.language.statements import Execute, StatementStep, Transaction, Transactions
from bench_dsl.server.connect import connect
from bench_dsl.workloads.base import BULK_ROWS, Bulk, Progress, Session, TransactionScope, Workload
from bench_dsl.workloads.custom.plugin import (
    CustomWorkload,
)

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

    def statements(self) -> Transactions:
        # custom transactions never read their results: all of them can run on the C executor. A
        # transaction's lets are drawn once, then given to its queries by name.
        out = []
        for t in self.spec.transactions:
            index = {name: k for k, (name, _) in enumerate(t.lets)}
            draws = tuple(native_draw(g, self.seed) for _, g in t.lets)
            executes = tuple(Execute((q.sql_native,), tuple((index[p], 0) for p in q.params)) for q in t.queries)
            out.append(Transaction((StatementStep(1, 1, draws, executes),), explicit=len(t.queries) > 1))
        return Transactions(tuple(out))

    def description(self) -> dict[str, object]:
        # plain data, never a repr: a repr carries where in the file a generator was written
        steps = [s.sql if isinstance(s, SetupSql) else (s.table, s.rows, [(c, _plain(g)) for c, g in s.columns])
                 for s in self.setup]
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

    async def load(self, dsn: Dsn, progress: Progress, bulk: Bulk | None = None) -> int:
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
                        await cur.execute(f"TRUNCATE TABLE {quote_identifier(step.table)}")
                    total += await self._fill(dsn, step, progress, bulk)
        finally:
            conn.close()
        return total

    async def _fill(self, dsn: Dsn, fill: Fill, progress: Progress, bulk: Bulk | None) -> int:
        """PARALLEL parts of the rows, each on a connection of its own; written by `bulk` (the rows
        drawn in C) when every column's generator has a draw there."""
        cols = ", ".join(quote_identifier(c) for c, _ in fill.columns)
        sql = f"INSERT INTO {quote_identifier(fill.table)} ({cols}) VALUES ({', '.join(['%s'] * len(fill.columns))})"
        chunk = -(-fill.rows // PARALLEL)
        written = [0] * PARALLEL
        try:
            [native_draw(g, self.seed) for _, g in fill.columns]
        except ValueError:  # a generator the C draws do not have
            bulk = None

        async def part(k: int) -> int:
            lo, hi = k * chunk, min(fill.rows, (k + 1) * chunk)
            if lo >= hi:
                return 0
            if bulk is not None:
                for b in range(lo, hi, BULK_ROWS):  # a call per batch: the progress moves
                    n = min(BULK_ROWS, hi - b)
                    draws = [native_draw(g, self.seed, offset=b) for _, g in fill.columns]
                    await bulk.rows(dsn, fill.table, [c for c, _ in fill.columns], draws, n, self.seed * 7919 + b)
                    written[k] += n
                    progress.rows(sum(written), fill.rows)
                return hi - lo
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
        progress(f"fill {fill.table}: {done} rows" + (", drawn by the C loader" if bulk is not None else ""))
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
        async with TransactionScope(conn, trx):
            for sql, params in queries:
                st = self.stmts.get(sql)
                if st is None:
                    st = await conn.prepare(sql)
                    self.stmts[sql] = st
                await st.execute(tuple(values[p] for p in params))
        return len(queries) + (2 if trx else 0)


def _plain(value: Generator | int | float | str) -> object:
    return {"generator": value.name, "args": list(value.args)} if isinstance(value, Generator) else value
