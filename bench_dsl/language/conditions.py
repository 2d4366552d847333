"""The conditions of `stop when { }` and `expect { }` as validation reads them: the metric (and the
transaction or CPU it names), the limit in the metric's unit, the `for` window, and the condition's
text with each $name and env() replaced by its value."""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping

from bench_dsl.core.errors import Span
from bench_dsl.language import model as m
from bench_dsl.language import syntax as ast
from bench_dsl.language.comparisons import Comparison
from bench_dsl.language.metric_decls import MetricDecl
from bench_dsl.language.values import TIME_UNITS, Checker, Quantity, num, offset, offset_end, plain, span_of


def condition(c: Checker, node: ast.ConditionNode, txs: tuple[str, ...], ramp: m.Ramp | None,
              expect: bool) -> m.Condition | None:
    ref = node.metric
    name, arg = ref.name, ref.arg
    comparison = _comparison(c, node) if node.kind != "threshold" else None  # said with an unknown metric too
    table = c.metrics
    decl = table.get(name)
    if decl is not None and not decl.condition:
        decl = None
    pm = re.fullmatch(r"p(\d+(?:\.\d+)?)", name)
    known = table.names(expect=expect)
    if ref.per_second and not (decl is not None and decl.per_second_ok):
        c.error(f"/s makes a rate of a server counter: status(NAME)/s; {name} is not one", ref.span,
                "status(Innodb_buffer_pool_reads)/s > 5000")
        return None
    if decl is None and pm:  # any percentile, not only the declared ones: a latency like them
        p = float(pm.group(1))
        if not 0 < p < 100:
            c.error(f"{name}: a percentile is between p0 and p100 (exclusive)", ref.span, "p50, p90, p95, p99, p99.9")
            return None
        decl = next(d for d in table.measuring("latency") if d.stat == "p")
        metric = m.Metric("latency", "p", p, arg, declared=decl)
    elif decl is not None and (expect or not decl.expect_only):
        if (built := _metric(c, decl, ref, txs, node.window is not None)) is None:
            return None
        metric = built
    else:
        close = difflib.get_close_matches(name, known, n=1, cutoff=0.5)
        hint = f"did you mean {close[0]}{'(' + arg + ')' if arg else ''}?" if close else "metrics: " + ", ".join(known)
        c.error(f"unknown metric '{name}'", ref.span, hint)
        return None
    if decl.open_loop and ramp is not None and not ramp.open_loop:
        c.error(f"{name} is a figure of an open-loop rate's arrivals; this scenario runs users", ref.span,
                "add a rate (rate 1000 tps, users max 64), or name a figure of every run: p99, tps, error_rate")
        return None
    if metric.transaction is not None and metric.transaction not in txs:
        close = difflib.get_close_matches(metric.transaction, list(txs), n=1, cutoff=0.4)
        hint = (f"did you mean {name}({close[0]})?" if close else
                "transactions of this workload: " + ", ".join(txs))
        c.error(f"the workload has no transaction '{metric.transaction}'", ref.arg_span or ref.span, hint)
        return None

    if node.kind != "threshold" and comparison is None:
        return None
    # limit and unit ---------------------------------------------------------------------------
    expected, example = _limit_kind(comparison, decl)
    v = c.numeric(node.limit, f"the limit of {metric.label()}", expected, example)
    if v is None:
        return None
    if not isinstance(v, Quantity):
        c.error("a limit is a number with its unit", span_of(node.limit), "p90 > 250ms, tps < 100, cpu(server) > 80%")
        return None
    window = None
    if node.window is not None:
        if node.kind != "threshold" or expect:
            c.error("'for' applies to stop thresholds only", span_of(node.window),
                    "stop when { p90 > 250ms for 10s }; expect judges the whole run, plateau and kink whole steps")
        window = _window(c, node.window, ramp)
    if comparison is not None:
        if (got := _compared(c, comparison, decl, metric.label(), v, ref.span)) is None:
            return None
        limit, unit = got
    else:
        left = node.text.split(node.op or ">")[0].strip()
        words = {"label": metric.label(), "name": decl.name, "op": node.op, "left": left, "value": num(v.value)}
        units = ramp.point_units() if decl.name == "saturation" and ramp is not None else None
        got = _point(c, v, units) if units is not None else _limit(c, decl, metric, v, words)
        if got is None:
            return None
        limit, unit = got

    if comparison is not None and expect:
        c.error(f"{node.kind} compares steps while the run goes: it belongs in 'stop when'", node.span,
                "move it into stop when { ... }; expect judges the whole run: e.g. saturation >= 32 users")
        return None
    if comparison is not None and ramp is not None and not ramp.steps_compared:
        c.error(f"{node.kind} compares one step with the one before: it needs 'ramp step'", node.span,
                "ramp step { start 8 users  step x2  settle 5s  hold 30s  max 256 users }")
        return None
    if node.window is not None and window is None:
        return None
    return m.Condition(node.kind, metric, node.op, limit, unit, window, node.text, node.span, _resolved(c, node),
                       comparison)


def _comparison(c: Checker, node: ast.ConditionNode) -> Comparison | None:
    """The comparison a condition's word names (plateau, kink, a plugin's), or an error."""
    found = c.metrics.comparisons.get(node.kind)
    if found is None:
        words = list(c.metrics.comparisons)
        close = difflib.get_close_matches(node.kind, words, n=1, cutoff=0.5)
        c.error(f"'{node.kind}' is no comparison: after a metric comes a comparison (>, <, >=, <=, ==, !=) or one "
                f"of {', '.join(words)}", node.kind_span or node.span,
                f"did you mean {close[0]}?" if close else "p90 > 250ms, tps plateau 5%, p90 kink 3x")
    return found


def _compared(c: Checker, cmp: Comparison, d: MetricDecl, label: str, v: Quantity,
              where: Span) -> tuple[float, str] | None:
    """A comparison's limit (a percentage, or a factor), on a metric it applies to, or an error."""
    if d.measures not in cmp.applies_to:
        takes = [e.name for e in c.metrics if e.condition and e.measures in cmp.applies_to]
        other = next((o for o in c.metrics.comparisons.values() if d.measures in o.applies_to), None)
        c.error(f"{cmp.name} applies to {' and '.join(cmp.applies_to)} ({', '.join(takes[:8])}), not {label}", where,
                cmp.example + (f"; for {label}, {other.name}: {other.example}" if other is not None else ""))
        return None
    if v.unit not in (("%",) if cmp.unit == "%" else ("x", None)):
        c.wrong(v, f"a {cmp.name} is given {'in percent' if cmp.unit == '%' else 'as a factor'}", cmp.example)
        return None
    if cmp.above is not None and v.value <= cmp.above:
        c.wrong(v, f"a {cmp.name} {'factor' if cmp.unit == 'x' else 'limit'} must be larger than {num(cmp.above)}",
                f"{cmp.example}: the run stops on {cmp.description}")
        return None
    return v.value, cmp.unit


def _metric(c: Checker, d: MetricDecl, ref: ast.MetricRef, txs: tuple[str, ...], windowed: bool) -> m.Metric | None:
    """The model's Metric of a declared metric as the condition names it, or an error about its (arg)."""
    arg = ref.arg
    if d.needs is not None and d.needs not in txs:
        c.error(d.needs_error[0], ref.span, d.needs_error[1])
        return None
    if (arg is not None) if d.arg == "none" else (arg is None) if d.arg == "name" else (
            d.arg == "source" and arg not in d.sources):
        message, hint = (w.format(name=d.name, arg=arg or "") for w in d.arg_error)
        c.error(message, ref.arg_span or ref.span, hint)
        return None
    stat = d.stat
    if stat == "/s":
        stat = "rate" if ref.per_second else "value"
    elif stat == "for":
        # over a `for` window the lag must stay above the limit (its lowest); otherwise the lag at
        # the window's end (a step's, an interval's)
        stat = "min" if windowed else "last"
    return m.Metric(d.model_name, stat, d.percentile, arg if d.arg == "transaction" else None,
                    arg if d.arg in ("source", "name") else None, declared=d)


def _limit(c: Checker, d: MetricDecl, metric: m.Metric, v: Quantity,
           words: Mapping[str, object]) -> tuple[float, str] | None:
    """A threshold's limit in the metric's unit, and the unit, or an error in the metric's words."""
    label, example = metric.label(), d.example.format(**words)
    if d.limit == "time":
        if v.unit not in TIME_UNITS:
            c.wrong(v, f"{label} is a time: give the limit a unit", example)
            return None
        return v.value * TIME_UNITS[v.unit] * d.seconds_to, d.unit
    if d.limit == "own":
        if v.unit not in (None, d.unit):
            c.wrong(v, f"{d.name} is compared with a plain number or {d.unit}", example)
            return None
        return v.value, d.unit
    if d.limit == "power":
        if v.unit not in (None, "W", "kW") or v.value < 0:
            c.wrong(v, f"{label} is a power: a number of watts (W or kW)", example)
            return None
        return v.value * (1000.0 if v.unit == "kW" else 1.0), "W"
    if d.limit == "percent":
        if d.wording is not None and (v.unit != "%" or not 0 <= v.value <= 100):
            c.wrong(v, d.wording, example)
            return None
        if v.unit != "%":
            c.wrong(v, f"{label} is a percentage", example)
            return None
        if not 0 <= v.value <= 100:  # a share of the machine, of the transactions: never past 100%
            c.wrong(v, f"{label} is between 0% and 100%: {num(v.value)}% can never be reached", example)
            return None
        return v.value, d.unit
    if d.limit == "plain":
        if v.unit is not None:
            c.wrong(v, f"{label} is compared with a plain number", example)
            return None
        return v.value, "/s" if metric.stat == "rate" else d.unit  # status(NAME)/s: a counter per second
    if v.unit not in (None, "users"):  # users
        c.wrong(v, f"{d.name} is a number of users", example)
        return None
    if v.value < 0:  # saturation >= -5 users holds whatever the run does
        c.wrong(v, f"{d.name} is a number of users: {num(v.value)} can never be", example)
        return None
    return v.value, "users"


def _point(c: Checker, v: Quantity, units: m.PointUnits) -> tuple[float, str] | None:
    """A saturation limit of a load whose point is not a users count (a rate's), in its unit."""
    if v.unit not in units.per:
        c.wrong(v, f"this scenario runs {units.what}: its saturation point is {units.what}, not {v.unit}",
                units.example)
        return None
    if v.value < 0:  # saturation >= -5 tps holds whatever the run does
        c.wrong(v, f"a saturation point is {units.what}: {num(v.value)} {v.unit or units.plain} can never be",
                units.example)
        return None
    return v.value * units.per[v.unit], units.unit


def _limit_kind(cmp: Comparison | None, d: MetricDecl) -> tuple[str, str]:
    """What a limit is, and an example, for a message about an env() that holds something else."""
    if cmp is not None:
        return ("a percentage", "5%") if cmp.unit == "%" else ("a factor", "3x")
    if d.limit == "time":
        return "a duration", d.sample or "250ms"
    if d.limit == "percent":
        return "a percentage", "80%"
    if d.limit == "power":
        return "a power", d.sample
    return "a number", "1000"


def _window(c: Checker, e: ast.Expr, ramp: m.Ramp | None) -> float | None:
    """The seconds of `for D`, when a window that long can fire in this run."""
    window = c.duration(e, "for")
    span = span_of(e)
    if window is None:
        return None
    if window < 1:
        # the engine samples once a second: a shorter window would hold less than one sample
        c.error(f"a 'for' window of {num(window)}s is shorter than one sample: conditions are judged once a second",
                span, "for 1s or longer")
        return None
    if ramp is not None:
        longest, what, hint = ramp.window()
        if window > longest:
            c.error(f"the window ({num(window)}s) is longer than {what} ({num(longest)}s): it could never fire",
                    span, hint)
            return None
    return window


def _refs(e: ast.Expr | None) -> list[ast.Var | ast.Call]:
    """The $names and env() calls in a value: what a resolved text replaces."""
    match e:
        case ast.Var():
            return [e]
        case ast.Call(name="env"):
            return [e]
        case ast.WithUnit(inner=inner):
            return _refs(inner)
        case ast.Call(args=args):
            return [v for a in args for v in _refs(a)]
    return []


def _resolved(c: Checker, node: ast.ConditionNode) -> str:
    """The condition as written, with each $name and env() replaced by its value: "p90 > $limit" -> "p90 > 250ms"."""
    values = [(r.span, c.lets.get(r.name) if isinstance(r, ast.Var) else c.value(r))
              for r in _refs(node.limit) + _refs(node.window)]
    if not values:
        return node.text
    base = offset(c.text, node.span)
    src = c.source(node.span)
    for span, value in sorted(values, key=lambda sv: offset(c.text, sv[0]), reverse=True):
        if value is not None:
            a, b = offset(c.text, span) - base, offset_end(c.text, span) - base
            src = src[:a] + str(plain(value)) + src[b:]
    return " ".join(src.split())


def unsourced(c: Checker, conditions: Iterable[m.Condition], replicas: bool, power: bool) -> None:
    """A condition on a figure the scenario reads from nothing: the replicas' lag without replicas,
    the power without a power source."""
    for cond in conditions:
        if cond.metric.name == "replication_lag" and not replicas:
            c.error("replication_lag needs replicas", cond.span,
                    'server { replicas = 1 } (throwaway ones), or replica "mysql://user@host:3306/db"')
        elif (d := cond.metric.declaration) is not None and d.reads == "power" and not power:
            c.error(f"{cond.metric.label()} needs a power source: the scenario has no `power`", cond.span,
                    'power rapl (this machine\'s RAPL), power node_exporter (the monitor\'s), '
                    'power prometheus "URL" "METRIC", or power command "ipmitool dcmi power reading"')
