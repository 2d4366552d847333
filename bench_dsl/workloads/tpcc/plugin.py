"""The plugin of the kind `tpcc`: its spec (TpccWorkload), its validation (options, and the mix
against clause 5.2.3's minimums), its lines in `bench check --plan`, and what builds what runs it
(bench_dsl/workloads/tpcc/workload.py, loaded only then)."""

from __future__ import annotations

import argparse
import difflib
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from bench_dsl.core.aio import run_loop
from bench_dsl.core.dsn import Dsn
from bench_dsl.core.errors import ExitCode
from bench_dsl.core.figures import Counted, Figure
from bench_dsl.language import syntax as ast
from bench_dsl.language.metric_decls import MetricDecl, per_watt
from bench_dsl.language.model import Fill, SetupSql
from bench_dsl.language.values import Checker, Quantity, name_span, num, span_of
from bench_dsl.workloads.plugin import (
    DataTool,
    WorkloadPlugin,
    duplicate_settings,
    mix_share,
    on_off,
    unknown_option,
)
from bench_dsl.workloads.tpcc.data import NEW_ORDER_ROLLBACK

if TYPE_CHECKING:
    from bench_dsl.workloads.tpcc.workload import Tpcc


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


# TPC-C clause 5.2.3: the least share of each transaction but new_order, which takes what is left.
_MINIMUM_SHARE = {"payment": 43.0, "order_status": 4.0, "delivery": 4.0, "stock_level": 4.0}


_OPTIONS = ["warehouses", "keying_time", "procedures", "loader_connections", "retries"]


def validate(c: Checker, node: ast.WorkloadNode) -> TpccWorkload | None:
    before = c.error_count
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
    if c.error_count > before:
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
        if v.value > 100:  # two shares of 10^308% added up to "inf%"
            c.wrong(v, f"a share of the mix is at most 100%, not {num(v.value)}%", "shares are percentages of the "
                    "transactions run, adding up to 100%: new_order 45%  payment 43% ...")
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
        given = next((e for e in node.entries if e.name == name), None)
        share = shares.get(name, 0.0)
        if share >= least:
            continue
        hint = "the run goes ahead, but its figures do not compare with TPC-C results"
        if given is None:
            c.warning(f"{name} is not in the mix: it is not run (TPC-C's minimum is {num(least)}%, clause 5.2.3)",
                      name_span(node.span, "mix"), hint)
        else:
            c.warning(f"{name} {num(share)}% is below TPC-C's minimum of {num(least)}% (clause 5.2.3)",
                      span_of(given.value), hint)
    # every transaction, in the order of the specification; one left out of the mix is not run
    return tuple((name, shares.get(name, 0.0)) for name in TPCC_TRANSACTIONS)


def declared_transactions(node: ast.WorkloadNode) -> tuple[str, ...]:
    return TPCC_TRANSACTIONS


def plan_lines(spec: TpccWorkload) -> list[str]:
    mix = ", ".join(f"{name} {num(share)}%" for name, share in spec.mix)
    return [f"  workload: tpcc, {spec.warehouses} warehouse(s) ({mix})",
            f"            keying and think times {'on' if spec.keying_time else 'off'}, "
            f"{'stored procedures' if spec.procedures else 'statements from the client'}, "
            f"{spec.retries} retries on deadlock or lock wait timeout"]


def share(spec: TpccWorkload, transaction: str | None, committed: bool) -> float | None:
    """The share of the transactions run that are `transaction` (and commit): each user picks each
    transaction by the scenario's mix, whether it runs closed loop or serves arrivals."""
    return mix_share(dict(spec.mix), transaction, {"new_order": NEW_ORDER_ROLLBACK} if committed else None)


def refuses_rate(spec: TpccWorkload) -> tuple[str, str] | None:
    if not spec.keying_time:
        return None
    return ("keying_time = on paces each terminal by its keying and think times (a closed loop); "
            "an open-loop rate paces the transactions itself",
            "keying_time = off with a rate, or users N for terminals that key and think")


def build(spec: TpccWorkload, setup: tuple[Fill | SetupSql, ...], seed: int) -> Tpcc:
    from bench_dsl.workloads.tpcc.workload import Tpcc  # the driver only for a run

    return Tpcc(spec, seed)


CHECK_EPILOG = """exit status: 0 every condition holds, 3 a condition fails, 2 bad usage or scenario,
4 the server cannot be reached. It may run while a run goes on: every condition is read from one
consistent snapshot of the data."""


def _check_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print the conditions as JSON on stdout")


def _check(args: argparse.Namespace, dsn: Dsn, say: Callable[[str], None]) -> int:
    """`bench tpcc check`: the consistency conditions 1 to 12 of clause 3.3.2, each passed or failed."""
    from bench_dsl.workloads.tpcc.workload import (
        check,  # the driver only when the command runs
    )

    conditions = run_loop(check(dsn))
    if args.json:
        print(json.dumps({"target": dsn.redacted(), "passed": all(c.passed for c in conditions),
                          "conditions": [c.to_json() for c in conditions]}, indent=2))
    say(f"TPC-C consistency conditions (clause 3.3.2) on {dsn.redacted()}")
    for c in conditions:
        verdict = "passed" if c.passed else "FAILED"
        extra = f", {c.violations} violation{'s' if c.violations != 1 else ''}" if c.violations else ""
        say(f"  {c.number}  {verdict:6}  {c.text}  ({c.checked} checked{extra})")
        for d in c.details:
            say(f"             {d}")
    failed = [c.number for c in conditions if not c.passed]
    say(f"all {len(conditions)} conditions hold" if not failed else
        f"{len(failed)} of {len(conditions)} conditions failed: {', '.join(map(str, failed))}")
    return int(ExitCode.EXPECT_FAILED) if failed else int(ExitCode.OK)


CHECK = DataTool("check", "check the consistency conditions of TPC-C clause 3.3.2",
                 "Check the consistency conditions 1 to 12 of TPC-C clause 3.3.2 on the data of a scenario's target "
                 "(or --target) and report each as passed or failed.", CHECK_EPILOG, _check_arguments, _check,
                 example_define="warehouses=4")

# New orders per minute (TPC-C's tpmC): committed new_order transactions only, rollbacks excluded.
NOPM = MetricDecl("nopm", "throughput", "nopm", "own", title="NOPM", example="{label} {op} {value} {name}",
                  arg="none", arg_error=("nopm always counts new_order: it takes no (transaction)", "nopm"),
                  needs="new_order", needs_error=(
                      "nopm counts new orders: the workload has no transaction 'new_order'",
                      "use tpm, or a tpcc workload (or a custom one with a transaction named new_order)"),
                  counts="committed", per=60.0, transaction="new_order", live=True, higher_is_better=True,
                  summarized=True, compared=True, gated=True, compare_unit="new orders/min", exhibit="throughput")

# The storage brief's "NOPM per watt": NOPM over the mean power of the server's machine (its `power`)
NOPM_PER_WATT = MetricDecl("nopm_per_watt", "gauge", "nopm/W", "plain", title="NOPM per watt", condition=False,
                           reads="power", derive=per_watt("nopm"), higher_is_better=True, summarized=True,
                           compared=True, charted=True, exhibit="per_watt",
                           description="New orders per minute per watt the server's machine drew (NOPM over mean W)")

# HammerDB's NOPM as the server counts it: every committed new order moved its district's d_next_o_id
# on by one (Tpcc.server_counters reads the sum as "new_orders"); each step compares the client's with it
SERVER_NOPM = Counted(Figure("nopm", "nopm", "rate", "recompute", "workload", "server",
                             "delta of SUM(d_next_o_id), as HammerDB", title="server NOPM"), "new_orders",
                      client=NOPM.name)

PLUGIN = WorkloadPlugin("tpcc", validate, declared_transactions, plan_lines, build, tools=(CHECK,),
                        metrics=(NOPM, NOPM_PER_WATT), counted=(SERVER_NOPM,), share=share, refuses_rate=refuses_rate)
