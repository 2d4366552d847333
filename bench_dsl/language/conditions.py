"""The conditions of `stop when { }` and `expect { }` as validation reads them: the metric (and the
transaction or CPU it names), the limit in the metric's unit, the `for` window, and the condition's
text with each $name and env() replaced by its value."""

from __future__ import annotations

import difflib
import re

from bench_dsl.language import model as m
from bench_dsl.language import syntax as ast
from bench_dsl.language.values import TIME_UNITS, Checker, Quantity, num, offset, offset_end, plain, span_of

_RATE_METRICS = {"tps", "tpm", "qps", "nopm"}
_METRICS = ["p50", "p90", "p95", "p99", "p99.9", "avg", "max", "min", "tps", "tpm", "qps", "nopm",
            "error_rate", "cpu", "status", "replication_lag", "disk_util", "disk_iops", "disk_await", "stall",
            "saturation"]
_CPU_SOURCES = ("server", "host", "client")


def condition(c: Checker, node: ast.Condition, txs: tuple[str, ...], ramp: m.Ramp | None,
               expect: bool) -> m.Condition | None:
    ref = node.metric
    name, arg = ref.name, ref.arg
    metric: m.Metric | None = None
    pm = re.fullmatch(r"p(\d+(?:\.\d+)?)", name)
    known = _METRICS if expect else [x for x in _METRICS if x != "saturation"]
    if ref.per_second and name != "status":
        c.error(f"/s makes a rate of a server counter: status(NAME)/s; {name} is not one", ref.span,
                "status(Innodb_buffer_pool_reads)/s > 5000")
        return None
    if pm:
        p = float(pm.group(1))
        if not 0 < p < 100:
            c.error(f"{name}: a percentile is between p0 and p100 (exclusive)", ref.span, "p50, p90, p95, p99, p99.9")
            return None
        metric = m.Metric("latency", "p", p, arg)
    elif name in ("avg", "max", "min"):
        metric = m.Metric("latency", name, None, arg)
    elif name == "nopm":
        if "new_order" not in txs:
            c.error("nopm counts new orders: the workload has no transaction 'new_order'", ref.span,
                    "use tpm, or a tpcc workload (or a custom one with a transaction named new_order)")
            return None
        if arg is not None:
            c.error("nopm always counts new_order: it takes no (transaction)", ref.arg_span or ref.span, "nopm")
            return None
        metric = m.Metric("nopm")
    elif name in _RATE_METRICS:
        metric = m.Metric(name, None, None, arg)
    elif name == "error_rate":
        metric = m.Metric("error_rate", None, None, arg)
    elif name == "cpu":
        if arg not in _CPU_SOURCES:
            c.error(f"cpu({arg or ''}): say whose CPU", ref.arg_span or ref.span,
                    "cpu(server), cpu(host) or cpu(client)")
            return None
        metric = m.Metric("cpu", source=arg)
    elif name == "status":
        if arg is None:
            c.error("status(NAME): say which server status variable", ref.span,
                    "status(Threads_running) > 32, or a counter as a rate: status(Innodb_buffer_pool_reads)/s > 5000")
            return None
        metric = m.Metric("status", "rate" if ref.per_second else "value", source=arg)
    elif name in ("disk_util", "disk_iops", "disk_await"):
        if arg != "server":
            c.error(f"{name}({arg or ''}): the disks of the server's host: {name}(server)", ref.arg_span or ref.span,
                    f"{name}(server)")
            return None
        metric = m.Metric(name, source="server")
    elif name == "replication_lag":
        if arg is not None:
            c.error("replication_lag is the worst replica's: it takes no (name)", ref.arg_span or ref.span,
                    "replication_lag > 5s")
            return None
        # over a `for` window the lag must stay above the limit (its lowest); otherwise the lag at
        # the window's end (a step's, an interval's)
        metric = m.Metric("replication_lag", "min" if node.window is not None else "last")
    elif name == "stall":
        if arg is not None:
            c.error("stall is the whole run's (no user finished a transaction): it takes no (name)",
                    ref.arg_span or ref.span, "stall > 1s")
            return None
        metric = m.Metric("stall")
    elif name == "saturation" and expect:
        metric = m.Metric("saturation")
    else:
        close = difflib.get_close_matches(name, known, n=1, cutoff=0.5)
        hint = f"did you mean {close[0]}{'(' + arg + ')' if arg else ''}?" if close else "metrics: " + ", ".join(known)
        c.error(f"unknown metric '{name}'", ref.span, hint)
        return None
    if metric.transaction is not None and metric.transaction not in txs:
        close = difflib.get_close_matches(metric.transaction, list(txs), n=1, cutoff=0.4)
        hint = (f"did you mean {name}({close[0]})?" if close else
                "transactions of this workload: " + ", ".join(txs))
        c.error(f"the workload has no transaction '{metric.transaction}'", ref.arg_span or ref.span, hint)
        return None

    # limit and unit ---------------------------------------------------------------------------
    expected, example = _limit_kind(node.kind, metric)
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
    limit: float
    unit: str
    if node.kind == "plateau":
        if metric.name not in _RATE_METRICS:
            c.error(f"plateau applies to throughput (tps, tpm, qps, nopm), not {metric.label()}", ref.span,
                    "tps plateau 5%" + (f"; for a latency, a kink: {metric.label()} kink 3x"
                                        if metric.name == "latency" else ""))
            return None
        if v.unit != "%":
            c.wrong(v, "a plateau is given in percent", f"{name} plateau 5%")
            return None
        limit, unit = v.value, "%"
    elif node.kind == "kink":
        if metric.name != "latency":
            c.error(f"kink applies to latency (p90, p99, avg ...), not {metric.label()}", ref.span,
                    "p90 kink 3x; for throughput, a plateau: tps plateau 5%")
            return None
        if v.unit not in ("x", None):
            c.wrong(v, "a kink is a factor", f"{name} kink 3x")
            return None
        if v.value <= 1:
            c.wrong(v, "a kink factor must be larger than 1",
                    f"{name} kink 3x: the run stops when {name} grows to more than 3 times its value at the step "
                    "before")
            return None
        limit, unit = v.value, "x"
    elif metric.name == "latency":
        if v.unit not in TIME_UNITS:
            left = node.text.split(node.op or ">")[0].strip()
            c.wrong(v, f"{metric.label()} is a time: give the limit a unit", f"{left} {node.op} 250ms")
            return None
        limit, unit = v.value * TIME_UNITS[v.unit], "ms"
    elif metric.name in _RATE_METRICS:
        if v.unit not in (None, metric.name):
            c.wrong(v, f"{metric.name} is compared with a plain number or {metric.name}",
                    f"{metric.label()} {node.op} {num(v.value)} {metric.name}")
            return None
        limit, unit = v.value, metric.name
    elif metric.name == "disk_util":
        if v.unit != "%" or not 0 <= v.value <= 100:
            c.wrong(v, "disk_util(server) is a percentage from 0% to 100% (of the time the disk was busy)",
                    "disk_util(server) > 90%")
            return None
        limit, unit = v.value, "%"
    elif metric.name == "disk_iops":
        if v.unit is not None:
            c.wrong(v, "disk_iops(server) is compared with a plain number", "disk_iops(server) > 5000")
            return None
        limit, unit = v.value, "iops"
    elif metric.name == "disk_await":
        if v.unit not in TIME_UNITS:
            c.wrong(v, "disk_await(server) is a time: give the limit a unit", "disk_await(server) > 20ms")
            return None
        limit, unit = v.value * TIME_UNITS[v.unit] * 1000, "ms"  # the disks' figure is in ms
    elif metric.name in ("replication_lag", "stall"):
        if v.unit not in TIME_UNITS:
            c.wrong(v, f"{metric.name} is a time: give the limit a unit",
                    "replication_lag > 5s" if metric.name == "replication_lag" else "stall > 1s")
            return None
        limit, unit = v.value * TIME_UNITS[v.unit], "s"
    elif metric.name == "status":
        if v.unit is not None:
            c.wrong(v, f"{metric.label()} is compared with a plain number", f"{metric.label()} {node.op} 32")
            return None
        limit, unit = v.value, "/s" if metric.stat == "rate" else ""
    elif metric.name in ("error_rate", "cpu"):
        if v.unit != "%":
            c.wrong(v, f"{metric.label()} is a percentage", f"{metric.label()} {node.op} 80%")
            return None
        if not 0 <= v.value <= 100:  # a share of the machine, of the transactions: never past 100%
            c.wrong(v, f"{metric.label()} is between 0% and 100%: {num(v.value)}% can never be reached",
                    f"{metric.label()} {node.op} 80%")
            return None
        limit, unit = v.value, "%"
    else:  # saturation
        if v.unit not in (None, "users"):
            c.wrong(v, "saturation is a number of users", "saturation >= 32 users")
            return None
        limit, unit = v.value, "users"

    if node.kind in ("plateau", "kink") and expect:
        c.error(f"{node.kind} compares steps while the run goes: it belongs in 'stop when'", node.span,
                "move it into stop when { ... }; expect judges the whole run: e.g. saturation >= 32 users")
        return None
    if node.kind in ("plateau", "kink") and ramp is not None and not isinstance(ramp, m.StepRamp):
        c.error(f"{node.kind} compares one step with the one before: it needs 'ramp step'", node.span,
                "ramp step { start 8 users  step x2  settle 5s  hold 30s  max 256 users }")
        return None
    if node.window is not None and window is None:
        return None
    return m.Condition(node.kind, metric, node.op, limit, unit, window, node.text, node.span,  # type: ignore[arg-type]
                       _resolved(c, node))


def _limit_kind(kind: str, metric: m.Metric) -> tuple[str, str]:
    """What a limit is, and an example, for a message about an env() that holds something else."""
    if kind == "plateau":
        return "a percentage", "5%"
    if kind == "kink":
        return "a factor", "3x"
    if metric.name in ("latency", "replication_lag", "stall"):
        return "a duration", "250ms"
    if metric.name in ("error_rate", "cpu", "disk_util"):
        return "a percentage", "80%"
    if metric.name == "disk_await":
        return "a duration", "20ms"
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
    if isinstance(ramp, m.StepRamp) and window > ramp.hold:
        c.error(f"the window ({num(window)}s) is longer than each step's hold ({num(ramp.hold)}s): "
                "it could never fire", span, "a sustained condition is judged within one step's hold: "
                f"for {num(ramp.hold)}s at most, or a longer hold")
        return None
    if isinstance(ramp, (m.ConstantRamp, m.LinearRamp)) and window > ramp.duration:
        c.error(f"the window ({num(window)}s) is longer than the run ({num(ramp.duration)}s): it could never fire",
                span, f"for {num(ramp.duration)}s at most, or a longer duration")
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


def _resolved(c: Checker, node: ast.Condition) -> str:
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
