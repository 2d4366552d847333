"""`workload custom`: the user's own schema (setup) and transactions. The plugin of the kind
`custom`: its spec (CustomWorkload), its validation (transactions, their `let` values and queries,
`:name` parameters rewritten to `?` placeholders), its line in `bench check --plan`, and what runs it."""

from __future__ import annotations

import difflib
import functools
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from bench_dsl.core.errors import Span, span_at
from bench_dsl.core.mysql_errors import RETRY_NAMES
from bench_dsl.core.numbers import num
from bench_dsl.language import syntax as ast
from bench_dsl.language.model import Fill, Generator, SetupSql
from bench_dsl.language.parser import written_at
from bench_dsl.language.values import Checker, name_span, offset, offset_end, span_of
from bench_dsl.workloads.plugin import WorkloadPlugin, mix_share

if TYPE_CHECKING:
    from bench_dsl.workloads.custom.workload import Custom


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
_PARAM = re.compile(r"""('(?:[^'\\]|\\.|'')*'|"(?:[^"\\]|\\.)*"|`[^`]*`|--[^\n]*|/\*.*?\*/)"""
                    r"""|(?<![:\w]):([A-Za-z_]\w*)""", re.DOTALL)


def _inside_string(text: str, span: Span | None, index: int, length: int) -> Span | None:
    """Where the characters index..index+length of a string's value are in the file."""
    if span is None:
        return None
    start = offset(text, span)
    raw = text[start:offset_end(text, span)]
    return span_at(span.file, text, start + written_at(raw, index), length)


def native_sql(sql: str) -> tuple[str, tuple[str, ...]]:
    """`:name` parameters -> `?` placeholders (outside quotes and comments), in order of use."""
    names: list[str] = []

    def repl(mt: re.Match[str]) -> str:
        if mt.group(1) is not None:
            return mt.group(1)
        names.append(mt.group(2))
        return "?"

    return _PARAM.sub(repl, sql), tuple(names)


def validate(c: Checker, node: ast.WorkloadNode) -> CustomWorkload | None:
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


def _transaction(c: Checker, tx: ast.TransactionNode) -> TransactionSpec | None:
    before = c.error_count
    weight = c.place(("weight",), (tx.weight,), lambda k: _weight(k, tx)) if tx.weight else 1.0
    retries, retry_on = 0, frozenset[int]()
    if tx.retry is not None:
        count = tx.retry.count
        r = c.place(("retry",), (count,), lambda k: k.number(count, "retry", integer=True, minimum=0))
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
            g = c.place(("let",), (st.value,), functools.partial(Checker.generator, e=st.value, where="let"))
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
                            f"did you mean :{close[0]}?" if close else
                            f"add before the query: let {n} = uniform(1, 100)")
            queries.append(Query(st.sql, native, names, st.span))
    if not queries:
        c.error(f"transaction '{tx.name}' runs no query", tx.span, 'add: query "SELECT ..."')
    if c.error_count > before or weight is None:
        return None
    return TransactionSpec(tx.name, float(weight), tuple(lets), tuple(queries), retries, retry_on, tx.span)


def _weight(c: Checker, tx: ast.TransactionNode) -> float | None:
    weight = c.number(tx.weight, f"weight of {tx.name}", minimum=0, allow_units=("%",))
    if weight is not None and weight <= 0:
        c.error("a weight must be larger than 0", span_of(tx.weight), "weight 1 or more (weights are relative)")
    return weight


def plan_lines(spec: CustomWorkload) -> list[str]:
    mix = ", ".join(f"{t.name} {num(t.weight)}" for t in spec.transactions)
    return [f"  workload: custom ({mix})"]


def build(spec: CustomWorkload, setup: tuple[Fill | SetupSql, ...], seed: int) -> Custom:
    from bench_dsl.workloads.custom.workload import Custom  # the driver only for a run

    return Custom(spec, setup, seed)


def share(spec: CustomWorkload, transaction: str | None, committed: bool) -> float | None:
    """A transaction's share of those run: its weight's (a custom workload rolls none back on purpose)."""
    return mix_share({t.name: t.weight for t in spec.transactions}, transaction)


def share_at(spec: CustomWorkload, node: ast.WorkloadNode, value: Callable[[ast.Expr], object], transaction: str | None,
             committed: bool) -> float | None:
    """`share` of the spec `node` makes with its weights at `value` (a study's configuration)."""
    return mix_share({tx.name: float(value(tx.weight)) if tx.weight else 1.0  # type: ignore[arg-type]
                      for tx in node.transactions}, transaction)


PLUGIN = WorkloadPlugin("custom", validate, ast.transactions_named, plan_lines, build, takes_setup=True, share=share,
                        share_at=share_at)


