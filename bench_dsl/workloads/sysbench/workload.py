"""What runs sysbench's OLTP tests against a server: its tables and data, loaded as sysbench's
oltp_common.lua loads them, and a user's session on asyncmy (the C executor runs the statements
the plugin describes). Loaded when a run builds the workload, never by `bench check`."""

from __future__ import annotations

import asyncio
import math
import random
from collections.abc import Callable
from functools import partial
from typing import Any, cast

import asyncmy

from bench_dsl.core.dsn import Dsn
from bench_dsl.core.mysql_errors import RETRYABLE
from bench_dsl.language.generators import special, zipf
from bench_dsl.language.statements import Draw, Transactions
from bench_dsl.server.connect import connect
from bench_dsl.workloads.base import BULK_ROWS, Bulk, Progress, Session, TransactionScope, Workload
from bench_dsl.workloads.sysbench.plugin import (
    PARETO_H,
    STATEMENTS,
    ZIPFIAN_EXP,
    SysbenchWorkload,
    groups,
    in_transaction,
    statement_kinds,
    transactions,
)

CREATE = """CREATE TABLE sbtest{t}(
  id INTEGER NOT NULL AUTO_INCREMENT,
  k INTEGER DEFAULT '0' NOT NULL,
  c CHAR(120) DEFAULT '' NOT NULL,
  pad CHAR(60) DEFAULT '' NOT NULL,
  PRIMARY KEY (id)
) ENGINE = InnoDB"""


BATCH = 1000


def _digit_groups(rng: random.Random, groups: int) -> str:
    # one big random number cut into groups of 11 digits: the same uniform digits as drawing each
    # group on its own, at a third of the cost (this runs for every row loaded and every update)
    s = f"{rng.randrange(10 ** (11 * groups)):0{11 * groups}d}"
    return "-".join([s[i:i + 11] for i in range(0, 11 * groups, 11)])


def c_value(rng: random.Random) -> str:
    """10 groups of 11 random digits joined by dashes (119 characters), as sysbench's c column."""
    return _digit_groups(rng, 10)


def pad_value(rng: random.Random) -> str:
    """5 groups of 11 random digits (59 characters), as sysbench's pad column."""
    return _digit_groups(rng, 5)


def _drawn(first: int, table_size: int) -> tuple[Draw, ...]:
    """A row of sbtest from `first` on, as sysbench's prepare draws it: id, k, c, pad."""
    return (Draw("sequence", (first,)), Draw("uniform", (1, table_size)), Draw("digits", (10,)), Draw("digits", (5,)))


class Sysbench(Workload):
    raw = True

    def __init__(self, spec: SysbenchWorkload, seed: int) -> None:
        self.spec = spec
        self.seed = seed
        self.names = (spec.test,)
        self.weights = (1.0,)
        self.retries = (spec.retries,)
        # sysbench's default --mysql-ignore-errors: deadlock, record changed, lock wait timeout
        self.retry_on = (RETRYABLE,)  # as sysbench: deadlock, lock wait timeout, record changed

    def description(self) -> dict[str, object]:
        s = self.spec
        return {"workload": f"sysbench-{s.tables}x{s.table_size}", "tables": s.tables, "table_size": s.table_size,
                "create_secondary": s.create_secondary}

    def marker_name(self) -> str:
        return "sysbench"  # one marker for the sbtestN tables, whatever their shape: a new shape reloads

    async def still_there(self, cur: Any) -> bool:
        await cur.execute("SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() "
                          "AND TABLE_NAME LIKE 'sbtest%%'")
        (n,) = await cur.fetchone()
        return int(n) >= self.spec.tables

    async def load(self, dsn: Dsn, progress: Progress, bulk: Bulk | None = None) -> int:
        """Each table on a connection of its own, its rows first and its secondary index after them
        (faster than keeping the index up to date row by row), as sysbench's prepare does; the rows
        drawn and sent by `bulk` where there is one (the C executor's loader), else here."""
        s = self.spec
        progress(f"creating {s.tables} table(s) of {s.table_size} rows")
        loaded = 0
        total = s.tables * s.table_size
        sem = asyncio.Semaphore(4)

        async def one(t: int) -> None:
            nonlocal loaded
            async with sem:
                rng = random.Random(self.seed * 1000 + t)
                conn = await connect(dsn, dsn.database)
                try:
                    async with conn.cursor() as cur:
                        await cur.execute(f"DROP TABLE IF EXISTS sbtest{t}")
                        await cur.execute(CREATE.format(t=t))
                        sql = f"INSERT INTO sbtest{t} (id, k, c, pad) VALUES (%s, %s, %s, %s)"
                        batch = BULK_ROWS if bulk is not None else BATCH
                        for lo in range(1, s.table_size + 1, batch):
                            hi = min(lo + batch, s.table_size + 1)
                            if bulk is not None:
                                await bulk.rows(dsn, f"sbtest{t}", ("id", "k", "c", "pad"), _drawn(lo, s.table_size),
                                                hi - lo, self.seed * 1000 + t + lo)
                            else:
                                await cur.executemany(sql, [(i, rng.randint(1, s.table_size), c_value(rng),
                                                             pad_value(rng)) for i in range(lo, hi)])
                            loaded += hi - lo
                            progress.rows(loaded, total)
                        if s.create_secondary:
                            await cur.execute(f"CREATE INDEX k_{t} ON sbtest{t}(k)")
                finally:
                    conn.close()
                progress(f"sbtest{t}: {s.table_size} rows")

        await asyncio.gather(*(one(t) for t in range(1, s.tables + 1)))
        return loaded

    def session(self, rng: random.Random, user: int) -> Session:
        return _SysbenchSession(self.spec, rng)

    def statements(self) -> Transactions:
        return transactions(self.spec)

    def rates(self, tps: float) -> dict[str, float] | None:
        reads, writes, other = statement_kinds(self.spec)
        return {"reads_per_s": round(tps * reads, 2), "writes_per_s": round(tps * writes, 2),
                "other_per_s": round(tps * other, 2)}


class _SysbenchSession(Session):
    def __init__(self, spec: SysbenchWorkload, rng: random.Random) -> None:
        self.spec = spec
        self.rng = rng
        self.stmts: dict[tuple[str, int], Any] = {}
        n = spec.table_size
        self.get_id: Callable[[], int]
        match spec.rand_type:
            case "uniform":
                self.get_id = partial(rng.randint, 1, n)
            case "zipfian":
                z = zipf(1, n, ZIPFIAN_EXP)
                self.get_id = cast(Callable[[], int], partial(z, rng))  # zipf draws whole numbers
            case "pareto":
                power = math.log(PARETO_H) / math.log(1 - PARETO_H)  # sb_rand_pareto
                self.get_id = lambda: 1 + int(n * rng.random() ** power)
            case "gaussian":
                iters = spec.rand_spec_iter  # sb_rand_gaussian: --rand-spec-iter uniform draws
                self.get_id = lambda: 1 + int(sum(rng.random() * n for _ in range(iters)) / iters)
            case _:
                draw = special(1, n, spec.rand_spec_pct, spec.rand_spec_res, spec.rand_spec_iter)
                self.get_id = cast(Callable[[], int], partial(draw, rng))  # special draws whole numbers

        self.tables = spec.tables
        # oltp_point_select is one statement a transaction: its own short path (no BEGIN, no loops)
        self.point_only = spec.test == "oltp_point_select" and spec.point_selects == 1
        self.points: list[Any] = [None] * (spec.tables + 1)

    def forget(self) -> None:
        self.stmts.clear()
        self.points = [None] * (self.spec.tables + 1)

    async def _stmt(self, conn: asyncmy.Connection, key: str, t: int) -> Any:
        st = self.stmts.get((key, t))
        if st is None:
            st = await conn.prepare(STATEMENTS[key].format(t=t))
            self.stmts[(key, t)] = st
        return st

    def _table(self) -> int:
        # sysbench.rand.uniform(1, tables); randint is the slow path of random
        return 1 if self.tables == 1 else 1 + int(self.rng.random() * self.tables)

    def _plan(self, tx: int = 0) -> list[tuple[tuple[str, int], tuple[int | str, ...]]]:
        """One transaction's statements ((statement, table), parameters), BEGIN and COMMIT aside.
        `tx` is always 0 (one transaction type): the driver path's plan, drawn in Python."""
        get_id = self.get_id
        size = self.spec.range_size
        out: list[tuple[tuple[str, int], tuple[int | str, ...]]] = []
        for key, count in groups(self.spec):
            t = self._table()
            for _ in range(count):
                if key in ("point_selects", "index_updates"):
                    out.append(((key, t), (get_id(),)))
                elif key == "non_index_updates":
                    out.append(((key, t), (c_value(self.rng), get_id())))
                elif key == "delete_inserts":
                    i, k = get_id(), get_id()
                    out.append((("deletes", t), (i,)))
                    out.append((("inserts", t), (i, k, c_value(self.rng), pad_value(self.rng))))
                else:
                    lo = get_id()
                    out.append(((key, t), (lo, lo + size - 1)))
        return out

    async def run(self, conn: asyncmy.Connection, tx: int) -> int:
        if self.point_only:
            t = self._table()
            st = self.points[t]
            if st is None:
                st = self.points[t] = await self._stmt(conn, "point_selects", t)
            await st.execute((self.get_id(),))
            return 1
        trx = in_transaction(self.spec)
        plan = self._plan()
        async with TransactionScope(conn, trx):
            for (key, t), params in plan:
                st = await self._stmt(conn, key, t)
                await st.execute(params)
        return len(plan) + (2 if trx else 0)
