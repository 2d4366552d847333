"""An open-loop load as validation reads it: `rate 5000 tps [poisson]`, `rate step { start 2000 tps
step +2000 tps settle 2s hold 10s max 60000 tps }` or `rate linear from 100 to 5000 tps [over 60s]`,
the pool that serves it (`users max 256 [queue [N]]`), and a warmup's own rate, written on the
warmup's line (`warmup 10s rate linear from 100 to 5000 tps`).

A rate is of transactions: per second (`tps`, or a plain number) or per minute (`tpm`); the model
holds it per second."""

from __future__ import annotations

from bench_dsl.language import model as m
from bench_dsl.language import syntax as ast
from bench_dsl.language.ramp import MAX_STEPS, multiplier, settle_hold, step_items
from bench_dsl.language.values import Checker, Quantity, num, span_of

MAX_RATE = 10_000_000.0  # transactions per second a run may ask for
_PER_SECOND = {None: 1.0, "tps": 1.0, "tpm": 1 / 60}


def on_warmup_line(warmup: ast.Item | None, node: ast.Rate) -> bool:
    """Whether `node` is the warmup's own rate: on the warmup's line, after it."""
    return (warmup is not None and node.span.line == warmup.span.end_line
            and node.span.col >= warmup.span.end_col)


def rate_of(c: Checker, e: ast.Expr, what: str) -> float | None:
    """A rate in transactions per second."""
    v = c.numeric(e, what, "a rate", "5000 tps")
    if v is None:
        return None
    if not isinstance(v, Quantity) or v.unit not in _PER_SECOND:
        unit = getattr(v, "unit", None)
        hint = ("nopm is not a rate bench-dsl schedules yet: give the rate of all transactions in tps"
                if unit == "nopm" else "transactions per second or per minute: 5000 tps, 300000 tpm")
        c.error(f"{what} must be a rate of transactions" + (f", not {unit}" if unit else ""), span_of(e), hint)
        return None
    return c.bounded(v, v.value * _PER_SECOND[v.unit], what, minimum=1 / 60, maximum=MAX_RATE, shown_as=" tps")


def pool(c: Checker, node: ast.UsersPool) -> m.Pool | None:
    users = c.users(node.max, "users max")
    queue = 0
    if node.queue:
        # `queue` alone: as many may wait as there are users to serve them
        queue = users or 0 if node.queue_size is None else (c.users(node.queue_size, "queue", minimum=1) or 0)
    return m.Pool(users, queue) if users is not None else None


def load(c: Checker, node: ast.Rate, pool_node: ast.Item | ast.UsersPool | None, duration_item: ast.Item | None,
         warmup: ast.Rate | None, warmup_s: float) -> m.RateLoad | None:
    """The open-loop load of `node` served by `pool_node`; None after reporting why not."""
    if not isinstance(pool_node, ast.UsersPool):
        c.error("a rate needs the users that serve it: users max N", pool_node.span if pool_node else node.span,
                "users max 64 (arrivals that find every user busy are dropped and counted), "
                "or users max 64 queue (they wait, up to 64)")
        return None
    served = pool(c, pool_node)
    duration = c.duration(duration_item.value, "duration") if duration_item else None
    got = {kind: (value, span) for kind, value, span in node.items}
    poisson = node.arrivals == "poisson"
    before = _warmup(c, warmup, warmup_s)
    if node.shape == "fixed":
        rate = rate_of(c, got["rate"][0], "rate")
        if duration_item is None:
            c.error("a fixed rate needs a duration", node.span, "add: duration 60s")
        if rate is None or duration is None or served is None:
            return None
        return m.RateLoad("fixed", rate, rate, served, poisson, duration=duration, warmup_from=before[0],
                          warmup_to=before[1])
    if node.shape == "linear":
        a, b = rate_of(c, got["from"][0], "rate from"), rate_of(c, got["to"][0], "rate to")
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
    return _step(c, node, served, poisson, duration_item, before)


def _step(c: Checker, node: ast.Rate, served: m.Pool | None, poisson: bool, duration_item: ast.Item | None,
          before: tuple[float | None, float | None]) -> m.RateLoad | None:
    if duration_item is not None:
        c.error("'duration' has no meaning with 'rate step': each step lasts settle + hold", duration_item.span,
                "remove it, or set hold")
    got = step_items(c, "rate", node.items, node.span, ("start 1000 tps", "step +1000 tps", "hold 30s",
                                                          "max 20000 tps"))
    if got is None:
        return None
    start, end = rate_of(c, got["start"][0], "start"), rate_of(c, got["max"][0], "max")
    adds = got["_kind"][0].name == "add"  # type: ignore[union-attr]
    add = rate_of(c, got["step"][0], "step") if adds else None
    mul = None if adds else multiplier(c, got, "step x2 doubles the rate at each step; or add one: step +1000 tps")
    settle, hold = settle_hold(c, got)
    if start is not None and end is not None and end < start:
        c.error(f"max ({num(end)} tps) is below start ({num(start)} tps)", got["max"][1],
                f"max is the highest rate the ramp reaches: {num(start)} tps or more")
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


def _warmup(c: Checker, node: ast.Rate | None, warmup_s: float) -> tuple[float | None, float | None]:
    """The warmup's rate, from and to (None, None: the first step's)."""
    if node is None:
        return None, None
    if warmup_s <= 0:
        c.error("a warmup rate needs a warmup: warmup D rate ...", node.span,
                "warmup 10s rate linear from 100 to 5000 tps")
    got = {kind: value for kind, value, _ in node.items}
    if node.shape == "fixed":
        r = rate_of(c, got["rate"], "warmup rate")
        return r, r
    if node.shape == "linear" and "over" not in got:
        return rate_of(c, got["from"], "warmup rate from"), rate_of(c, got["to"], "warmup rate to")
    c.error("a warmup's rate is a rate or a linear one, over the warmup", node.span,
            "warmup 10s rate linear from 100 to 5000 tps")
    return None, None
