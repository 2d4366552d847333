"""An open-loop load as validation reads it: `rate 5000 tps [poisson]`, `rate step { start 2000 tps
step +2000 tps settle 2s hold 10s max 60000 tps }` or `rate linear from 100 to 5000 tps [over 60s]`,
the pool that serves it (`users max 256 [queue [N]]`), and a warmup's own rate, written on the
warmup's line (`warmup 10s rate linear from 100 to 5000 tps`).

A rate is of transactions: per second (`tps`, or a plain number) or per minute (`tpm`), or in a
throughput a workload declares that counts some of its transactions (TPC-C's `nopm`: committed new
orders a minute). The model holds every rate in transactions of every kind per second, which is
what is scheduled; each user serving an arrival runs the transaction the workload's mix picks, as a
closed-loop user does, so a rate of new orders is the rate of all divided by new_order's share of
the mix (less its rollbacks): the workload kind says that share (WorkloadPlugin.share), and the
language knows no workload. The model keeps the unit asked and what one of it is (RateLoad.unit)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any, Protocol

from bench_dsl.language import model as m
from bench_dsl.language import syntax as ast
from bench_dsl.language.metric_decls import MetricDecl
from bench_dsl.language.ramp import MAX_STEPS, multiplier, settle_hold, step_items
from bench_dsl.language.values import Checker, Quantity, num, span_of

MAX_RATE = 10_000_000.0  # transactions per second a run may ask for
_PER_SECOND = {None: 1.0, "tps": 1.0, "tpm": 1 / 60}
MIN_RATE = 1 / 60 - 1e-12  # transactions per second: one a minute (less a rounding's worth)


def on_warmup_line(warmup: ast.Item | None, node: ast.Rate) -> bool:
    """Whether `node` is the warmup's own rate: on the warmup's line, after it."""
    return (warmup is not None and node.span.line == warmup.span.end_line
            and node.span.col >= warmup.span.end_col)


class RatedKind(Protocol):
    """What a rate asks of the workload's kind (bench_dsl.workloads.plugin.WorkloadPlugin is one)."""

    @property
    def share(self) -> Callable[[Any, str | None, bool], float | None] | None: ...
    @property
    def refuses_rate(self) -> Callable[[Any], tuple[str, str] | None] | None: ...


class Units:
    """The unit of one load's rates (all of transactions of every kind, in tps or tpm; or all in one
    throughput the workload declares), and what one of it is in transactions per second."""

    def __init__(self, c: Checker, spec: m.WorkloadSpec | None, kind: RatedKind | None,
                 written: tuple[str, ast.Expr] | None = None,
                 own: Callable[[], m.WorkloadSpec | None] | None = None,
                 own_share: Callable[[str | None, bool], float | None] | None = None) -> None:
        self.c, self.spec, self.kind = c, spec, kind
        self.own = own  # the configuration's spec when `spec` is the file's (read for its mix alone)
        self.own_share = own_share  # or its share, from its places' values (its names are the file's)
        # the load's first throughput of some transactions (nopm) and where: a plain number is in
        # it too (`from 6000 to 12000 nopm`); None: tps
        self.written = written
        self.plain = written[0] if written else None
        self.unit: str | None = None  # the first rate's: "tps" (for tps and tpm), or the throughput's
        self.tps_per_unit = 1.0
        self.counted = 1.0
        self.known = False  # counted and tps_per_unit are the unit's (said once when it has none)

    def of(self, e: ast.Expr, what: str) -> float | None:
        """A rate in transactions of every kind per second, or None after saying why not."""
        c = self.c
        v = c.numeric(e, what, "a rate", "5000 tps")
        if v is None:
            return None
        unit = getattr(v, "unit", None) or (self.plain if isinstance(v, Quantity) else None)
        if isinstance(v, Quantity) and unit in _PER_SECOND:
            if not self._one_unit(e, what, "tps", unit or "tps"):
                return None
            return self._bounded(v, v.value * _PER_SECOND[unit], what)
        decl = _counting(c, unit) if isinstance(v, Quantity) else None
        if decl is None:
            c.error(f"{what} must be a rate of transactions" + (f", not {unit}" if unit else ""), span_of(e),
                    "transactions per second or per minute: 5000 tps, 300000 tpm; or a throughput the "
                    "workload counts, as TPC-C's nopm")
            return None
        assert isinstance(v, Quantity) and unit is not None
        if self.own is not None and self.own_share is None:
            self.spec, self.own = self.own(), None
        if self.spec is None or not self._one_unit(e, what, unit, unit):
            return None  # no spec: the workload's own errors are said, and what it counts is not known
        if self.counted <= 0:
            return None  # why was said at the load's first rate
        if not self.known:
            where = self.written[1] if self.written and self.written[0] == unit else e
            counted = self._counted(where, unit, decl.transaction, decl.counts == "committed", decl.needs,
                                    decl.needs_error)
            self.known, self.counted = True, counted or 0.0
            if counted is None:
                return None
            self.tps_per_unit = 1 / decl.per / counted
        return self._bounded(v, v.value * self.tps_per_unit, what)

    def _bounded(self, v: Quantity, tps: float, what: str) -> float | None:
        # the least rate is one transaction a minute, said so: 1/60 tps reads 0.016666666666666666
        # v.value first: 0 of a unit whose share is next to none is 0 x inf tps, no number at all
        if v.value <= 0 or (math.isfinite(tps) and tps < MIN_RATE):
            self.c.wrong(v, f"{what} must be at least 1 tpm (one transaction a minute)",
                         "5000 tps, 300000 tpm; a rate of 0 is no load: leave the rate out")
            return None
        return self.c.bounded(v, tps, what, maximum=MAX_RATE, shown_as=" tps")

    def _one_unit(self, e: ast.Expr, what: str, family: str, written: str) -> bool:
        if self.unit is None:
            self.unit = family
            return True
        if self.unit == family:
            return True
        self.c.error(f"{what} is in {written}, the load's first rate in {self.unit}: a load's rates are in "
                     "one unit", span_of(e), f"give every rate of the load in {self.unit}")
        return False

    def _counted(self, e: ast.Expr, unit: str, transaction: str | None, committed: bool,
                 needs: str | None, needs_error: tuple[str, str]) -> float | None:
        """The share of the transactions run that `unit` counts, or None after saying why not."""
        assert self.spec is not None
        names = self.spec.transaction_names
        if needs is not None and needs not in names:
            self.c.error(f"a rate in {unit}: {needs_error[0]}", span_of(e), needs_error[1])
            return None
        share = self.kind.share if self.kind is not None else None
        if self.own_share is not None:
            counted = self.own_share(transaction, committed)
        else:
            counted = share(self.spec, transaction, committed) if share is not None else None
        if counted is None and transaction in (None, *names) and len(names) == 1:
            counted = 1.0  # a workload of one transaction: every one counts
        if counted is None:
            self.c.error(f"a rate in {unit}: the {self.spec.kind} workload does not say what share of its "
                         f"transactions {unit} counts", span_of(e), "give the rate of all its transactions: 5000 tps")
            return None
        if counted <= 0:
            self.c.error(f"a rate in {unit}: none of the transactions the mix runs counts toward {unit}"
                         + (f" ({transaction} has no share of it)" if transaction else ""), span_of(e),
                         f"give {transaction} a share of the mix, or the rate of all transactions: 5000 tps"
                         if transaction else "the rate of all transactions: 5000 tps")
            return None
        return counted

    def said(self, tps: float) -> str:
        """A rate (tps) as the load's rates are written: "1000 tps", "20000 nopm"."""
        if self.unit in (None, "tps"):
            return f"{num(tps)} tps"
        return f"{num(round(tps / self.tps_per_unit, 6))} {self.unit}"

    def model(self, load: m.RateLoad) -> m.RateLoad:
        """`load` with the unit its rates were asked in (unchanged for tps and tpm)."""
        if self.unit in (None, "tps"):
            return load
        assert self.unit is not None
        return dataclasses.replace(load, unit=self.unit, tps_per_unit=self.tps_per_unit, counted=self.counted)


def pool(c: Checker, node: ast.UsersPool) -> m.Pool | None:
    users = c.users(node.max, "users max")
    queue = 0
    if node.queue:
        # `queue` alone: as many may wait as there are users to serve them
        queue = users or 0 if node.queue_size is None else (c.users(node.queue_size, "queue", minimum=1) or 0)
    return m.Pool(users, queue) if users is not None else None


def _counting(c: Checker, unit: str | None) -> MetricDecl | None:
    """The throughput of transactions `unit` names (nopm), one a rate may be written in."""
    decl = c.metrics.get(unit) if unit else None
    if decl is None or decl.measures != "throughput" or decl.limit != "own" or decl.counts == "statements":
        return None
    return decl


def _written(c: Checker, *nodes: ast.Rate | None) -> tuple[str, ast.Expr] | None:
    """The first throughput of some transactions a load's rates are written in (nopm), which its
    plain numbers are in too; None: they are in tps."""
    for node in nodes:
        for _, e, _ in node.items if node is not None else ():
            unit = getattr(e, "unit", None)
            if unit not in _PER_SECOND and _counting(c, unit) is not None:
                return str(unit), e
    return None


def load(c: Checker, node: ast.Rate, pool_node: ast.Item | ast.UsersPool | None, duration_item: ast.Item | None,
         warmup: ast.Rate | None, warmup_s: float, spec: m.WorkloadSpec | None,
         kind: RatedKind | None, own: Callable[[], m.WorkloadSpec | None] | None = None,
         own_share: Callable[[str | None, bool], float | None] | None = None) -> m.RateLoad | None:
    """The open-loop load of `node` served by `pool_node`, on the workload `spec` of `kind` (None:
    the workload has errors); None after reporting why not. `own`: the configuration's spec, built
    when the rate reads it, when `spec` is the file's (a study's workload taken place by place);
    `own_share`: its share (WorkloadPlugin.share_at), which a rate reads instead when given."""
    refuses = kind.refuses_rate if kind is not None and spec is not None else None
    if refuses is not None and own is not None:
        spec, own, own_share = own(), None, None
    if refuses is not None and spec is not None and (refused := refuses(spec)) is not None:
        c.error(refused[0], node.span, refused[1])
    units = Units(c, spec, kind, _written(c, warmup, node), own, own_share)
    built = _load(c, node, pool_node, duration_item, warmup, warmup_s, units)
    return units.model(built) if built is not None else None


def _load(c: Checker, node: ast.Rate, pool_node: ast.Item | ast.UsersPool | None, duration_item: ast.Item | None,
          warmup: ast.Rate | None, warmup_s: float, units: Units) -> m.RateLoad | None:
    if not isinstance(pool_node, ast.UsersPool):
        c.error("a rate needs the users that serve it: users max N", pool_node.span if pool_node else node.span,
                "users max 64 (arrivals that find every user busy are dropped and counted), "
                "or users max 64 queue (they wait, up to 64)")
        return None
    served = pool(c, pool_node)
    duration = c.duration(duration_item.value, "duration") if duration_item else None
    got = {kind: (value, span) for kind, value, span in node.items}
    poisson = node.arrivals == "poisson"
    before = _warmup(c, warmup, warmup_s, units)
    if node.shape == "fixed":
        rate = units.of(got["rate"][0], "rate")
        if duration_item is None:
            c.error("a fixed rate needs a duration", node.span, "add: duration 60s")
        if rate is None or duration is None or served is None:
            return None
        return m.RateLoad("fixed", rate, rate, served, poisson, duration=duration, warmup_from=before[0],
                          warmup_to=before[1])
    if node.shape == "linear":
        a, b = units.of(got["from"][0], "rate from"), units.of(got["to"][0], "rate to")
        over = c.duration(got["over"][0], "rate over") if "over" in got else duration
        if over is None and "over" not in got:
            c.error("a linear rate needs its length: over D, or a duration", node.span, "rate linear from 100 to "
                    "5000 tps over 60s")
        total = duration if duration is not None else over
        if over is not None and total is not None and total < over:
            c.error(f"duration ({num(total)}s) is shorter than the rate's ramp ({num(over)}s)",
                    duration_item.span if duration_item else None, f"duration {num(over)}s or more, or leave it out")
            return None
        if None in (a, b, over, total, served):
            return None
        return m.RateLoad("linear", a, b, served, poisson, over=over, duration=total,  # type: ignore[arg-type]
                          warmup_from=before[0], warmup_to=before[1])
    return _step(c, node, served, poisson, duration_item, before, units)


def _step(c: Checker, node: ast.Rate, served: m.Pool | None, poisson: bool, duration_item: ast.Item | None,
          before: tuple[float | None, float | None], units: Units) -> m.RateLoad | None:
    if duration_item is not None:
        c.error("'duration' has no meaning with 'rate step': each step lasts settle + hold", duration_item.span,
                "remove it, or set hold")
    got = step_items(c, "rate", node.items, node.span, ("start 1000 tps", "step +1000 tps", "hold 30s",
                                                          "max 20000 tps"))
    if got is None:
        return None
    start, end = units.of(got["start"][0], "start"), units.of(got["max"][0], "max")
    adds = got["_kind"][0].name == "add"  # type: ignore[union-attr]
    add = units.of(got["step"][0], "step") if adds else None
    mul = None if adds else multiplier(c, got, "step x2 doubles the rate at each step; or add one: step +1000 tps")
    settle, hold = settle_hold(c, got)
    if start is not None and end is not None and end < start:
        c.error(f"max ({units.said(end)}) is below start ({units.said(start)})", got["max"][1],
                f"max is the highest rate the ramp reaches: {units.said(start)} or more")
        return None
    if None in (start, end, hold, settle, served) or (add is None and mul is None):
        return None
    load = m.RateLoad("step", start, end, served, poisson, add=add, mul=mul, settle=settle or 0.0,  # type: ignore[arg-type]
                      hold=hold, warmup_from=before[0], warmup_to=before[1])  # type: ignore[arg-type]
    if load.step_count() > MAX_STEPS:
        c.error(f"the rate ramp has {load.step_count():,} steps; a run has at most {MAX_STEPS:,}",
                got["step"][1], "a larger step (step +N tps, or step xN)")
        return None
    return load


def _warmup(c: Checker, node: ast.Rate | None, warmup_s: float, units: Units) -> tuple[float | None, float | None]:
    """The warmup's rate, from and to (None, None: the first step's)."""
    if node is None:
        return None, None
    if warmup_s <= 0:
        c.error("a warmup rate needs a warmup: warmup D rate ...", node.span,
                "warmup 10s rate linear from 100 to 5000 tps")
    got = {kind: value for kind, value, _ in node.items}
    if node.shape == "fixed":
        r = units.of(got["rate"], "warmup rate")
        return r, r
    if node.shape == "linear" and "over" not in got:
        return units.of(got["from"], "warmup rate from"), units.of(got["to"], "warmup rate to")
    c.error("a warmup's rate is a rate or a linear one, over the warmup", node.span,
            "warmup 10s rate linear from 100 to 5000 tps")
    return None, None
