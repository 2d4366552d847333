"""How many users a scenario runs, and for how long, as validation reads it: `users` with a
`duration`, `ramp step { }` or `ramp linear`, and the `warmup` and `report every` around them."""

from __future__ import annotations

from bench_dsl.core.errors import Span
from bench_dsl.language import model as m
from bench_dsl.language import syntax as ast
from bench_dsl.language.values import MAX_SECONDS, Checker, num

MAX_STEPS = 10_000  # steps of a ramp; with a settle and a hold each, 20,000 phases to plan


def warmup(c: Checker, item: ast.Item | None) -> float:
    if item is None:
        return 0.0
    return c.duration(item.value, "warmup", allow_zero=True) or 0.0


def report_every(c: Checker, item: ast.Item | None) -> float:
    if item is None:
        return 10.0
    seconds = c.duration(item.value, "report every")
    if seconds is None:
        return 10.0
    if seconds < 1 or not float(seconds).is_integer():
        c.error("report every must be a whole number of seconds", item.value.span,
                "report every 10s")
        return 10.0
    return seconds


def ramp(c: Checker, users_item: ast.Item | None, ramp_node: ast.RampStep | ast.RampLinear | None,
         duration_item: ast.Item | None, scenario: ast.ScenarioNode) -> m.Ramp | None:
    """The ramp of `users` + `duration`, `ramp step` or `ramp linear`; None after reporting why not."""
    duration = c.duration(duration_item.value, "duration") if duration_item else None
    if users_item is not None and ramp_node is not None:
        c.error("give either 'users' or a 'ramp', not both", users_item.span,
                "users N with duration D for a constant load; a ramp for users that change")
    elif users_item is not None:
        users = c.users(users_item.value, "users")
        if duration is None and duration_item is None:
            c.error("a run with a fixed number of users needs a duration", users_item.span, "add: duration 60s")
        elif users is not None and duration is not None:
            return m.ConstantRamp(users, duration)
    elif isinstance(ramp_node, ast.RampStep):
        if duration_item is not None:
            c.error("'duration' has no meaning with 'ramp step': each step lasts settle + hold", duration_item.span,
                    "remove it, or set hold")
        return _step_ramp(c, ramp_node)
    elif isinstance(ramp_node, ast.RampLinear):
        return _linear_ramp(c, ramp_node, duration, duration_item)
    else:
        c.error("the scenario does not say how many users to run", scenario.span,
                "add 'users 8' with a 'duration', or a 'ramp step { ... }'")
    return None


def _linear_ramp(c: Checker, node: ast.RampLinear, duration: float | None,
                 duration_item: ast.Item | None) -> m.LinearRamp | None:
    a = c.users(node.start, "ramp from")
    b = c.users(node.end, "ramp to")
    over = c.duration(node.over, "ramp over")
    if a is None or b is None or over is None:
        return None
    total = duration if duration is not None else over
    if total < over:
        c.error(f"duration ({num(total)}s) is shorter than the ramp ({num(over)}s)",
                duration_item.span if duration_item else None,
                f"duration {num(over)}s or more (the users stay at the ramp's end after it), or leave it out")
    return m.LinearRamp(a, b, over, total)


Items = dict[str, tuple[ast.Expr, Span]]


def step_items(c: Checker, what: str, items: tuple[tuple[str, ast.Expr, Span], ...], span: Span,
               examples: tuple[str, str, str, str]) -> Items | None:
    """The items of a step block (`ramp step { }`, `rate step { }`) by name, `step` either `add`
    or `mul` (its kind under "_kind"); None after saying which of start, step, hold and max is
    missing (`examples`: how each is written) or given twice."""
    got: Items = {}
    for kind, value, at in items:
        key = "step" if kind in ("add", "mul") else kind
        if key in got:
            c.error(f"'{key}' is given twice in the {what}", at, "keep one")
        got[key] = (value, at)
        if kind in ("add", "mul"):
            got["_kind"] = (ast.Word(kind, at), at)
    for need, example in zip(("start", "step", "hold", "max"), examples, strict=True):
        if need not in got:
            c.error(f"{what} step needs '{need}'", span, f"add: {example}")
    return None if any(n not in got for n in ("start", "step", "hold", "max")) else got


def multiplier(c: Checker, got: Items, hint: str) -> float | None:
    """`step xN` of a step block: more than 1."""
    mul = c.number(got["step"][0], "step", allow_units=("x",))
    if mul is not None and mul <= 1:
        c.error("step xN must multiply by more than 1", got["step"][1], hint)
        return None
    return mul


def settle_hold(c: Checker, got: Items) -> tuple[float | None, float | None]:
    settle = c.duration(got["settle"][0], "settle", allow_zero=True) if "settle" in got else 0.0
    return settle, c.duration(got["hold"][0], "hold")


def _step_ramp(c: Checker, node: ast.RampStep) -> m.StepRamp | None:
    got = step_items(c, "ramp", node.items, node.span, ("start 8 users", "step +8 users", "hold 60s", "max 256 users"))
    if got is None:
        return None
    start = c.users(got["start"][0], "start")
    mx = c.users(got["max"][0], "max")
    add = mul = None
    if got["_kind"][0].name == "add":  # type: ignore[union-attr]
        add = c.users(got["step"][0], "step")
    else:
        mul = multiplier(c, got, "step x2 doubles the users at each step; or add a number: step +4 users")
    settle, hold = settle_hold(c, got)
    if start is not None and mx is not None and mx < start:
        c.error(f"max ({mx}) is below start ({start})", got["max"][1],
                f"max is the most users the ramp reaches: {start} or more")
        return None
    if None in (start, mx, hold, settle) or (add is None and mul is None):
        return None
    ramp = m.StepRamp(start, add, mul, settle or 0.0, hold, mx)  # type: ignore[arg-type]
    steps = ramp.step_count()
    if steps > MAX_STEPS:
        c.error(f"the ramp has {steps:,} steps; a run has at most {MAX_STEPS:,}", got["step"][1],
                "a larger step (step +N users, or step xN)")
        return None
    return ramp




def lasts(load: m.Ramp, warmup: float) -> float:
    """The seconds a load's phases add up to, warmup included, as validation counts them (the
    engine's plan rounds each phase to whole seconds): counted, never listed."""
    return load.seconds(warmup)


def bounded_run(c: Checker, load: m.Ramp | None, warmup: float, span: Span | None) -> m.Ramp | None:
    """`load`, or None when its run would last longer than any duration may (10,000 steps of 60
    days' settle and hold planned 1,643 years)."""
    if load is None or (seconds := lasts(load, warmup)) <= MAX_SECONDS:
        return load
    c.error(f"the run would last {num(round(seconds / 86400, 1))} days; a run lasts at most "
            f"{MAX_SECONDS // 86400} days", span, "fewer steps, a shorter settle and hold, or a shorter duration")
    return None
