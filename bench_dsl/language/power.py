"""`power SOURCE ...`: where the power the server's machine draws is read, as validation checks it.

    power rapl                                   this machine's RAPL counters (/sys/class/powercap)
    power rapl "/other/powercap"                 another powercap tree
    power node_exporter                          the monitor's node_exporter: its rapl, else hwmon, figures
    power prometheus "http://pdu:9290/metrics" "ipmi_dcmi_power_consumption_watts"   any metric [W|kW|J|Wh|kWh]
    power command "ipmitool dcmi power reading"  a command that prints watts (split as a shell would, run without one)

Each value may be an env(); the source's word too (`power env("BENCH_POWER", "rapl")`)."""

from __future__ import annotations

import re
import shlex

from bench_dsl.core.dsn import redact
from bench_dsl.core.errors import Span
from bench_dsl.language import syntax as ast
from bench_dsl.language.power_source import JOULES, POWER_KINDS, WATTS, PowerSource
from bench_dsl.language.values import Checker, span_of

EXAMPLES = ('power rapl', 'power node_exporter', 'power prometheus "http://ipmi:9290/metrics" '
            '"ipmi_dcmi_power_consumption_watts"', 'power command "ipmitool dcmi power reading"')
# a metric and its labels, as a Prometheus selector writes them: name{label="value", ...}
SELECTOR = re.compile(r'[a-zA-Z_:][a-zA-Z0-9_:]*(\{\s*([a-zA-Z_][a-zA-Z0-9_]*\s*=\s*"[^"]*"\s*,?\s*)*\})?')
# the units a metric's name says: energy counters, then power gauges
NAMED_UNITS = (("_kilowatt_hours_total", "kWh"), ("_watt_hours_total", "Wh"), ("_joules_total", "J"),
               ("_joules", "J"), ("_kilowatts", "kW"), ("_watts", "W"), ("_watt", "W"))


def unit_of(metric: str) -> str | None:
    """The unit a metric's name says (ipmi_dcmi_power_consumption_watts: W), or None."""
    name = metric.split("{", 1)[0]
    return next((u for suffix, u in NAMED_UNITS if name.endswith(suffix)), None)


def source(c: Checker, item: ast.Item | None, monitor: str | None) -> PowerSource | None:
    if item is None:
        return None
    exprs = (item.value, *item.rest)
    values = [c.value(e) for e in exprs]
    if values[0] is None:
        return None  # env() unset and no default: no power source, as a monitor
    kind = values[0]
    if kind not in POWER_KINDS:
        c.error(f"power: {kind!s} is no power source: one of {', '.join(POWER_KINDS)}", span_of(exprs[0]),
                " or ".join(EXAMPLES[:2]))
        return None
    args, spans = values[1:], [span_of(e) for e in exprs[1:]]
    for i, (a, e) in enumerate(zip(args, exprs[1:], strict=True)):
        if not isinstance(a, str) or (isinstance(e, ast.Word) and not (kind == "prometheus" and i == 2)):  # a unit word
            c.error(f"power {kind}: its settings are text in double quotes", spans[i], _example(kind))
            return None
    text = [str(a) for a in args]
    wanted = {"rapl": (0, 1), "node_exporter": (0, 0), "prometheus": (2, 3), "command": (1, 1)}[kind]
    if not wanted[0] <= len(text) <= wanted[1]:
        where = spans[wanted[1]] if len(text) > wanted[1] else span_of(item)
        c.error(f"power {kind} takes {_count(*wanted)}", where, _example(kind))
        return None
    match kind:
        case "rapl":
            return PowerSource("rapl", at=text[0] if text else None)
        case "node_exporter":
            if monitor is None:
                c.error("power node_exporter reads the monitor's page: this scenario has no monitor", span_of(item),
                        'monitor "http://db1:9100/metrics", or power prometheus "http://db1:9100/metrics" "METRIC"')
                return None
            return PowerSource("node_exporter", at=monitor)
        case "prometheus":
            return _prometheus(c, text, spans)
    try:
        argv = tuple(shlex.split(text[0]))
    except ValueError as exc:
        c.error(f"power command: {exc}", spans[0], _example("command"))
        return None
    if not argv:
        c.error("power command: the command is empty", spans[0], _example("command"))
        return None
    return PowerSource("command", argv=argv)


def _prometheus(c: Checker, text: list[str], spans: list[Span | None]) -> PowerSource | None:
    url, metric = text[0], text[1].strip()
    if not re.fullmatch(r"https?://[^\s/?#]+(/[^\s]*)?", url, re.IGNORECASE):
        c.error(f"power prometheus: {redact(url)!r} is not an http:// address", spans[0], _example("prometheus"))
        return None
    if not SELECTOR.fullmatch(metric):
        c.error(f"power prometheus: {metric!r} is not a metric", spans[1],
                'a metric\'s name, with its labels if several series have it: "ipmi_dcmi_power_consumption_watts" '
                'or "pdu_outlet_watts{outlet=\\"3\\"}"')
        return None
    unit = text[2] if len(text) > 2 else None
    if unit is not None and unit not in (*WATTS, *JOULES):
        c.error(f"power prometheus: {unit} is no unit of power or energy", spans[2],
                f"one of {', '.join((*WATTS, *JOULES))}")
        return None
    if unit is None and unit_of(metric) is None:
        c.error(f"power prometheus: {metric.split('{')[0]}'s name does not say its unit", spans[1],
                "give it after the metric: W or kW for a reading of power, J, Wh or kWh for a counter of energy")
        return None
    return PowerSource("prometheus", at=url, metric=metric, unit=unit)


def _count(low: int, high: int) -> str:
    if high == 0:
        return "nothing more"
    return f"{low} value{'s' if low != 1 else ''}" if low == high else f"{low} to {high} values"


def _example(kind: str) -> str:
    return next((e for e in EXAMPLES if e.split()[1] == kind), EXAMPLES[0])
