"""sysbench 1.0's OLTP tests: the same tables, statements and random distributions as its
oltp_common.lua, so figures compare with sysbench's own. The plugin of the kind `sysbench`: its
spec (SysbenchWorkload, with sysbench's option names and defaults), their validation, its line in
`bench check --plan`, and what runs it."""

from __future__ import annotations

import difflib
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Literal

from bench_dsl.language import syntax as ast
from bench_dsl.language.model import Fill, SetupSql
from bench_dsl.language.statements import Draw, Execute, StatementStep, Transaction, Transactions
from bench_dsl.language.values import Checker, span_of
from bench_dsl.workloads.plugin import (
    WorkloadPlugin,
    duplicate_settings,
    on_off,
    unknown_option,
)

if TYPE_CHECKING:
    from bench_dsl.workloads.sysbench.workload import Sysbench

SYSBENCH_TESTS = ("oltp_point_select", "oltp_read_only", "oltp_read_write", "oltp_write_only")


@dataclass(frozen=True, slots=True)
class SysbenchWorkload:
    """The OLTP tests of sysbench 1.0, with its option names and defaults."""

    test: str
    tables: int = 1
    table_size: int = 10000
    range_size: int = 100
    point_selects: int = 10
    simple_ranges: int = 1
    sum_ranges: int = 1
    order_ranges: int = 1
    distinct_ranges: int = 1
    index_updates: int = 1
    non_index_updates: int = 1
    delete_inserts: int = 1
    range_selects: bool = True
    skip_trx: bool = False
    create_secondary: bool = True
    rand_type: str = "special"  # sysbench 1.0's default --rand-type
    rand_spec_pct: float = 1.0
    rand_spec_res: float = 75.0
    rand_spec_iter: int = 12
    retries: int = 100  # sysbench restarts an event on 1213/1020/1205 without limit
    kind: Literal["sysbench"] = "sysbench"

    @property
    def transaction_names(self) -> tuple[str, ...]:
        return (self.test,)


# the options validation reads as numbers (K and M allowed), and as on / off
_NUMBER_OPTIONS = {f.name for f in fields(SysbenchWorkload) if f.type in ("int", "float")} - {"retries"}
_ON_OFF_OPTIONS = {"range_selects", "skip_trx", "create_secondary"}

STATEMENTS = {
    "point_selects": "SELECT c FROM sbtest{t} WHERE id=?",
    "simple_ranges": "SELECT c FROM sbtest{t} WHERE id BETWEEN ? AND ?",
    "sum_ranges": "SELECT SUM(k) FROM sbtest{t} WHERE id BETWEEN ? AND ?",
    "order_ranges": "SELECT c FROM sbtest{t} WHERE id BETWEEN ? AND ? ORDER BY c",
    "distinct_ranges": "SELECT DISTINCT c FROM sbtest{t} WHERE id BETWEEN ? AND ? ORDER BY c",
    "index_updates": "UPDATE sbtest{t} SET k=k+1 WHERE id=?",
    "non_index_updates": "UPDATE sbtest{t} SET c=? WHERE id=?",
    "deletes": "DELETE FROM sbtest{t} WHERE id=?",
    "inserts": "INSERT INTO sbtest{t} (id, k, c, pad) VALUES (?, ?, ?, ?)",
}


def statement_kinds(s: SysbenchWorkload) -> tuple[int, int, int]:
    """One transaction's reads (SELECTs), writes (UPDATE, DELETE, INSERT) and other statements
    (BEGIN, COMMIT), as sysbench counts them for its "r/w/o" figures."""
    reads = writes = 0
    if s.test != "oltp_write_only":
        reads += s.point_selects
        if s.test != "oltp_point_select" and s.range_selects:
            reads += s.simple_ranges + s.sum_ranges + s.order_ranges + s.distinct_ranges
    if s.test in ("oltp_read_write", "oltp_write_only"):
        writes += s.index_updates + s.non_index_updates + 2 * s.delete_inserts
    other = 2 if not s.skip_trx and s.test != "oltp_point_select" else 0
    return reads, writes, other


def in_transaction(s: SysbenchWorkload) -> bool:
    return not s.skip_trx and s.test != "oltp_point_select"


def groups(s: SysbenchWorkload) -> list[tuple[str, int]]:
    """The statement groups of one transaction, in sysbench's order (oltp_common.lua): each group
    runs `count` times on one table drawn for the group."""
    out: list[tuple[str, int]] = []
    if s.test != "oltp_write_only":
        out.append(("point_selects", s.point_selects))
        if s.test != "oltp_point_select" and s.range_selects:
            ranges = ("simple_ranges", "sum_ranges", "order_ranges", "distinct_ranges")
            out += [(key, getattr(s, key)) for key in ranges]
    if s.test in ("oltp_read_write", "oltp_write_only"):
        out += [("index_updates", s.index_updates), ("non_index_updates", s.non_index_updates),
                ("delete_inserts", s.delete_inserts)]
    return [(key, n) for key, n in out if n]


# sysbench's --rand-pareto-h and (1.1's) --rand-zipfian-exp defaults
PARETO_H = 0.2
ZIPFIAN_EXP = 0.8


def key_draw(s: SysbenchWorkload) -> Draw:
    """sysbench.rand.default(1, table_size) under --rand-type, as the C executor draws it."""
    n = s.table_size
    match s.rand_type:
        case "uniform":
            return Draw("uniform", (1, n))
        case "gaussian":
            return Draw("gaussian", (1, n, s.rand_spec_iter))
        case "pareto":
            return Draw("pareto", (1, n, PARETO_H))
        case "zipfian":
            return Draw("zipf", (1, n, ZIPFIAN_EXP))
    return Draw("special", (1, n, s.rand_spec_pct, s.rand_spec_res, s.rand_spec_iter))


def transactions(s: SysbenchWorkload) -> Transactions:
    """The test's one transaction as the C executor runs it: the groups of statements, a table
    drawn per group, keys from --rand-type, c and pad strings as sysbench's (10 and 5 groups of 11
    digits)."""
    key = key_draw(s)

    def sql(name: str) -> tuple[str, ...]:
        return tuple(STATEMENTS[name].format(t=t) for t in range(1, s.tables + 1))

    steps = []
    for name, count in groups(s):
        if name in ("point_selects", "index_updates"):
            steps.append(StatementStep(count, s.tables, (key,), (Execute(sql(name), ((0, 0),)),)))
        elif name == "non_index_updates":
            steps.append(StatementStep(count, s.tables, (Draw("digits", (10,)), key),
                                       (Execute(sql(name), ((0, 0), (1, 0))),)))
        elif name == "delete_inserts":
            draws = (key, key, Draw("digits", (10,)), Draw("digits", (5,)))  # i, k, c, pad
            steps.append(StatementStep(count, s.tables, draws, (
                Execute(sql("deletes"), ((0, 0),)), Execute(sql("inserts"), ((0, 0), (1, 0), (2, 0), (3, 0))))))
        else:  # the ranges: (lo, lo + range_size - 1)
            steps.append(StatementStep(count, s.tables, (key,),
                                       (Execute(sql(name), ((0, 0), (0, s.range_size - 1))),)))
    return Transactions((Transaction(tuple(steps), in_transaction(s)),))


def validate(c: Checker, node: ast.WorkloadNode) -> SysbenchWorkload | None:
    if node.variant not in SYSBENCH_TESTS:
        close = difflib.get_close_matches(node.variant or "", list(SYSBENCH_TESTS), n=1)
        where = node.variant_span or node.kind_span  # no test name: point at 'sysbench'
        c.error(f"unknown sysbench test '{node.variant}'" if node.variant else "workload sysbench needs a test name",
                where,
                f"did you mean {close[0]}?" if close else "tests: " + ", ".join(SYSBENCH_TESTS))
        return None
    if node.transactions:
        c.error("a sysbench workload has its own transactions", node.transactions[0].span,
                "use 'workload custom { ... }' for your own")
    for mix in node.mixes:
        c.error("a sysbench test runs one transaction: it has no mix", mix.span,
                "for a mix of your own, use 'workload custom' with a weight per transaction")
    duplicate_settings(c, node.settings)
    opts: dict[str, object] = {}
    allowed = sorted(_NUMBER_OPTIONS | _ON_OFF_OPTIONS | {"rand_type"})
    for st in node.settings:
        if st.name in _ON_OFF_OPTIONS:
            if (flag := on_off(c, st)) is not None:
                opts[st.name] = flag
        elif st.name == "rand_type":
            v = c.value(st.value)
            if v not in ("uniform", "special", "gaussian", "pareto", "zipfian"):
                c.error("rand_type is uniform, special, gaussian, pareto or zipfian", span_of(st.value),
                        "rand_type = uniform")
                continue
            opts[st.name] = v
        elif st.name in _NUMBER_OPTIONS:
            minimum = 1 if st.name in ("tables", "table_size", "range_size") else 0
            n = c.count(st.value, st.name, minimum=minimum, integer=not st.name.startswith("rand_spec"))
            if n is not None:
                opts[st.name] = n
        else:
            unknown_option(c, st, "sysbench", allowed)
    if node.variant == "oltp_point_select":
        opts.setdefault("point_selects", 1)  # as oltp_point_select.lua does
    return SysbenchWorkload(test=node.variant, **opts)  # type: ignore[arg-type]


def declared_transactions(node: ast.WorkloadNode) -> tuple[str, ...]:
    # a misspelt test: judge the conditions against the test it most likely means, so the typo is
    # reported once, not again as the "transaction" every condition should name
    return tuple(difflib.get_close_matches(node.variant or "", SYSBENCH_TESTS, n=1)) or SYSBENCH_TESTS


def plan_lines(spec: SysbenchWorkload) -> list[str]:
    return [f"  workload: sysbench {spec.test}, {spec.tables} table(s) x {spec.table_size} rows"]


def build(spec: SysbenchWorkload, setup: tuple[Fill | SetupSql, ...], seed: int) -> Sysbench:
    from bench_dsl.workloads.sysbench.workload import (
        Sysbench,  # the driver only for a run
    )

    return Sysbench(spec, seed)


PLUGIN = WorkloadPlugin("sysbench", validate, declared_transactions, plan_lines, build)
