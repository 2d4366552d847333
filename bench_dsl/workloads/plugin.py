"""What a workload kind provides to the rest of bench-dsl (its plugin), and the checks of `name =
value` options that the kinds share. The plugins themselves are listed in registry.py."""

from __future__ import annotations

import argparse
import difflib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, TypeVar

from bench_dsl.core.dsn import Dsn
from bench_dsl.core.figures import Counted
from bench_dsl.language import syntax as ast
from bench_dsl.language.metric_decls import MetricDecl
from bench_dsl.language.model import Fill, SetupSql, WorkloadSpec
from bench_dsl.language.values import Checker, name_span, span_of

if TYPE_CHECKING:
    from bench_dsl.workloads.base import Workload

Spec = TypeVar("Spec", bound=WorkloadSpec)


@dataclass(frozen=True, slots=True)
class WorkloadPlugin(Generic[Spec]):
    """One kind of workload (`workload KIND ... { }`): how its block is validated, how it is shown
    by `bench check --plan`, and what runs it."""

    kind: str
    # the block's options as the kind's spec, reported through the Checker; None when it has errors
    validate: Callable[[Checker, ast.WorkloadNode], Spec | None]
    # the transaction names a block declares even when it has errors: what conditions are checked
    # against then, so that one mistake is reported once
    declared_transactions: Callable[[ast.WorkloadNode], tuple[str, ...]]
    # the "  workload: ..." lines of `bench check --plan`
    plan_lines: Callable[[Spec], list[str]]
    # what runs it, from just what a worker process is sent: the spec, the setup and the seed
    build: Callable[[Spec, tuple[Fill | SetupSql, ...], int], Workload]
    takes_setup: bool = False  # a `setup { }` block prepares its data (else the workload prepares its own)
    # commands of its own, on the data a target holds: `bench KIND NAME [FILE] [--target DSN]`
    tools: tuple[DataTool, ...] = ()
    # metrics of its own (bench_dsl/language/metric_decls.py), beside the core ones: conditions, the
    # grammar's units, the result and compare know them whatever the workload (a custom workload
    # with the transaction they need has them too); registry.METRICS holds them all
    metrics: tuple[MetricDecl, ...] = ()
    # step figures the server counts (core.figures.Counted), from the counters its workload's
    # server_counters reads: TPC-C's nopm as HammerDB counts it, beside the client's
    counted: tuple[Counted, ...] = ()
    # What turns a rate written in one of its throughputs (`rate 20000 nopm`) into the rate of all
    # its transactions, which is what is scheduled: (spec, transaction, committed) -> the share of
    # the transactions its users run that are `transaction` (None: any) and, when `committed`, commit
    # (TPC-C rolls 1% of new orders back on purpose). None, or it returns None: it cannot say, and
    # only a workload of that one transaction takes such a rate (bench_dsl/language/rate.py)
    share: Callable[[Spec, str | None, bool], float | None] | None = None
    # why a spec cannot run at an open-loop rate, as (message, hint); None: it can (TPC-C's keying
    # and think times pace closed-loop terminals, and an arrival schedule paces the transactions)
    refuses_rate: Callable[[Spec], tuple[str, str] | None] | None = None
    # `share` for a study's configuration whose workload the language took place by place (its
    # places quiet at the configuration's values, its transactions the file's spec's): (the file's
    # spec, its block, what the place of an expression gives at the configuration's lets (a
    # weight), transaction, committed), without building the configuration's spec; None: it is built
    share_at: Callable[[Spec, ast.WorkloadNode, Callable[[ast.Expr], object], str | None, bool],
                       float | None] | None = None


@dataclass(frozen=True, slots=True)
class DataTool:
    """A command a workload kind adds to `bench`, run on the data a server holds (`bench tpcc
    check`). The command line (FILE or --target, -D) is the CLI's; the tool gets the server's
    address, its own options, and `say` for the lines a person reads (stdout is data)."""

    name: str
    help: str  # the line of `bench KIND --help`
    description: str
    epilog: str  # its exit statuses
    # its own options, added to its argparse parser
    add_arguments: Callable[[argparse.ArgumentParser], None]
    # (options, target, say) -> exit status; may raise BenchError (a target it cannot reach: exit 4)
    run: Callable[[argparse.Namespace, Dsn, Callable[[str], None]], int]
    example_define: str = "name=value"  # -D's example in its --help: a `let` its scenarios have


def mix_share(mix: Mapping[str, float], transaction: str | None,
              rolled_back: Mapping[str, float] | None = None) -> float | None:
    """The share of a mix of weights (any scale) that `transaction` is (None: every one), less what
    of each rolls back on purpose when `rolled_back` is given; None for a mix of no weight."""
    total = sum(mix.values())
    if total <= 0:
        return None
    names = list(mix) if transaction is None else [transaction]
    gone = rolled_back or {}
    return sum(mix.get(n, 0.0) * (1.0 - gone.get(n, 0.0)) for n in names) / total


def duplicate_settings(c: Checker, settings: tuple[ast.Setting, ...]) -> None:
    seen: set[str] = set()
    for st in settings:
        if st.name in seen:
            c.error(f"'{st.name}' is given twice", name_span(st.span, st.name), "keep one")
        seen.add(st.name)


def on_off(c: Checker, st: ast.Setting) -> bool | None:
    v = c.value(st.value)
    if not (isinstance(v, str) and v.lower() in ("on", "off")):
        c.error(f"{st.name} is on or off", span_of(st.value), f"{st.name} = on")
        return None
    return v.lower() == "on"


def unknown_option(c: Checker, st: ast.Setting, workload: str, allowed: list[str]) -> None:
    close = difflib.get_close_matches(st.name, allowed, n=1)
    c.error(f"{workload} has no option '{st.name}'", name_span(st.span, st.name),
            f"did you mean {close[0]}?" if close else "options: " + ", ".join(allowed))
