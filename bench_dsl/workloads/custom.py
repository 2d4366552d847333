"""`workload custom`: the user's own schema (setup) and transactions. The plugin of the kind
`custom`: its spec (CustomWorkload), its validation (transactions, their `let` values and queries,
`:name` parameters rewritten to `?` placeholders), its line in `bench check --plan`, and what runs it."""

from __future__ import annotations

import asyncio
import difflib
import random
import re
from dataclasses import dataclass
from typing import Any, Literal

import asyncmy

from bench_dsl import syntax as ast
from bench_dsl.dsn import Dsn, quote_identifier
from bench_dsl.errors import Span
from bench_dsl.generators import Gen, compile_value, native_draw
from bench_dsl.model import Fill, Generator, SetupSql
from bench_dsl.mysql_errors import RETRY_NAMES
from bench_dsl.server import connect
from bench_dsl.statements import Execute, Step, Transaction, Transactions
from bench_dsl.validate_values import Checker, name_span, offset, offset_end, span_of
from bench_dsl.workloads.base import Progress, Session, Workload, rollback_quietly
from bench_dsl.workloads.plugin import WorkloadPlugin


@dataclass(frozen=True, slots=True)
class Query:
    """One `query "..."` of a transaction."""

    sql: str  # as written, with :name parameters
    sql_native: str  # the same with ? placeholders, sent as a server-side prepared statement
    params: tuple[str, ...]
    span: Span | None = None


@dataclass(frozen=True, slots=True)
class TransactionSpec:
    """One `transaction NAME [weight W] [retry N on ...] { let ...  query ... }`."""

    name: str
    weight: float
    lets: tuple[tuple[str, Generator | int | float | str], ...]
    queries: tuple[Query, ...]
    retries: int = 0
    retry_on: frozenset[int] = frozenset()
    span: Span | None = None


@dataclass(frozen=True, slots=True)
class CustomWorkload:
    """The spec of `workload custom { transaction ... }`."""

    transactions: tuple[TransactionSpec, ...]
    kind: Literal["custom"] = "custom"

    @property
    def transaction_names(self) -> tuple[str, ...]:
        return tuple(t.name for t in self.transactions)


# What `retry N on ...` names, and the MySQL error it retries.
RETRYABLE = RETRY_NAMES


# a quoted string, quoted name or comment (kept as written), or a :name parameter outside them
_PARAM = re.compile(r"""('(?:[^'\\]|\\.|'')*'|"(?:[^"\\]|\\.)*"|`[^`]*`|--[^\n]*|/\*.*?\*/)|(?<![:\w]):([A-Za-z_]\w*)""",
                    re.DOTALL)


def _inside_string(text: str, span: Span | None, index: int, length: int) -> Span | None:
    """Where the characters index..index+length of a string's value are in the file."""
    if span is None:
        return None
    start = offset(text, span)
    raw = text[start:offset_end(text, span)]
    if raw.startswith('"""'):
        pos = 3 + index  # a """ string has no escapes: the value is the text
    else:
        pos = 1
        for _ in range(index):
            pos += 2 if raw[pos] == "\\" else 1  # an escape is two characters in the file, one in the value
    at = start + pos
    line = text.count("\n", 0, at) + 1
    col = at - text.rfind("\n", 0, at)
    return Span(span.file, line, col, line, col + length)


def native_sql(sql: str) -> tuple[str, tuple[str, ...]]:
    """`:name` parameters -> `?` placeholders (outside quotes and comments), in order of use."""
    names: list[str] = []

    def repl(mt: re.Match[str]) -> str:
        if mt.group(1) is not None:
            return mt.group(1)
        names.append(mt.group(2))
        return "?"

    return _PARAM.sub(repl, sql), tuple(names)


def validate(c: Checker, node: ast.Workload) -> CustomWorkload | None:
    if node.variant is not None:
        c.error("a custom workload has no test name", node.variant_span, "workload custom { transaction ... }")
    for st in node.settings:
        c.error(f"custom workloads take no option '{st.name}'", name_span(st.span, st.name),
                "a custom workload is its transactions; options belong to sysbench and tpcc")
    for mix in node.mixes:
        c.error("a custom workload gives each transaction a weight instead of a mix", mix.span,
                "transaction read weight 80 { ... }")
    if not node.transactions:
        c.error("a custom workload needs at least one transaction", node.span,
                'transaction read { query "SELECT 1" }')
        return None
    seen: set[str] = set()
    txs = []
    for tx in node.transactions:
        if tx.name in seen:
            c.error(f"transaction '{tx.name}' is defined twice", tx.span, "give each transaction a name of its own")
        seen.add(tx.name)
        t = _transaction(c, tx)
        if t is not None:
            txs.append(t)
    return CustomWorkload(tuple(txs)) if len(txs) == len(node.transactions) else None


def _transaction(c: Checker, tx: ast.Transaction) -> TransactionSpec | None:
    before = len(c.errors())
    weight = c.number(tx.weight, f"weight of {tx.name}", minimum=0, allow_units=("%",)) if tx.weight else 1.0
    if weight is not None and weight <= 0:
        c.error("a weight must be larger than 0", span_of(tx.weight), "weight 1 or more (weights are relative)")
    retries, retry_on = 0, frozenset[int]()
    if tx.retry is not None:
        r = c.number(tx.retry.count, "retry", integer=True, minimum=0)
        retries = int(r or 0)
        codes = set()
        for w in tx.retry.on:
            if w.name not in RETRYABLE:
                close = difflib.get_close_matches(w.name, list(RETRYABLE), n=1)
                c.error(f"cannot retry on '{w.name}'", w.span,
                        f"did you mean {close[0]}?" if close else "retry on deadlock, lock_wait_timeout")
            else:
                codes.add(RETRYABLE[w.name])
        retry_on = frozenset(codes)
    lets: list[tuple[str, Generator | int | float | str]] = []
    queries: list[Query] = []
    defined: set[str] = set()
    for st in tx.body:
        if isinstance(st, ast.Let):
            g = c.generator(st.value, "let")
            if g is not None:
                lets.append((st.name, g))
            defined.add(st.name)
        else:
            native, names = native_sql(st.sql)
            for mt in _PARAM.finditer(st.sql):
                n = mt.group(2)
                if n is not None and n not in defined:
                    close = difflib.get_close_matches(n, list(defined), n=1)
                    c.error(f"query parameter :{n} is not defined in transaction '{tx.name}'",
                            _inside_string(c.text, st.span, mt.start(2) - 1, len(n) + 1),
                            f"did you mean :{close[0]}?" if close else f"add before the query: let {n} = uniform(1, 100)")
            queries.append(Query(st.sql, native, names, st.span))
    if not queries:
        c.error(f"transaction '{tx.name}' runs no query", tx.span, 'add: query "SELECT ..."')
    if len(c.errors()) > before or weight is None:
        return None
    return TransactionSpec(tx.name, float(weight), tuple(lets), tuple(queries), retries, retry_on, tx.span)


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
            out.append(Transaction((Step(1, 1, draws, executes),), explicit=len(t.queries) > 1))
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
                        await cur.execute(f"TRUNCATE TABLE {quote_identifier(step.table)}")
                    total += await self._fill(dsn, step, progress)
        finally:
            conn.close()
        return total

    async def _fill(self, dsn: Dsn, fill: Fill, progress: Progress) -> int:
        cols = ", ".join(quote_identifier(c) for c, _ in fill.columns)
        sql = f"INSERT INTO {quote_identifier(fill.table)} ({cols}) VALUES ({', '.join(['%s'] * len(fill.columns))})"
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



def plan_lines(spec: CustomWorkload) -> list[str]:
    mix = ", ".join(f"{t.name} {t.weight:g}" for t in spec.transactions)
    return [f"  workload: custom ({mix})"]


def build(spec: CustomWorkload, setup: tuple[Fill | SetupSql, ...], seed: int) -> Custom:
    return Custom(spec, setup, seed)


PLUGIN = WorkloadPlugin("custom", validate, ast.transactions_named, plan_lines, build, takes_setup=True)


def _plain(value: Generator | int | float | str) -> object:
    return {"generator": value.name, "args": list(value.args)} if isinstance(value, Generator) else value
