"""The report's charts, as Vega-Altair charts (Vega-Lite specifications) built from data.py's rows.

Every chart colours a configuration the same way (one colour scale with every label in its domain),
so a reader follows one configuration from chart to chart. Each chart has a title that says what it
shows and axes that say their units; tooltips carry the exact numbers in the HTML report.

The charts "against users" are against the results' load axis (data.axis): users for closed-loop
results, the offered rate for rate results, whose charts and images are named and titled so
("throughput-vs-rate", "Throughput against offered rate").
"""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import altair as alt

from bench_dsl.core.axis import LoadAxis
from bench_dsl.engine.profiles.registry import DEFAULT_AXIS, axis_of
from bench_dsl.engine.stopping import StopReason
from bench_dsl.language.metric_decls import MetricDecl
from bench_dsl.results.fold import FoldedConfiguration
from bench_dsl.results.report import data
from bench_dsl.workloads import registry

# what .properties() gives back, by altair's own type hints
Panel = alt.LayerChart | alt.FacetChart
WIDTH, HEIGHT = 560, 320
SMALL_WIDTH, SMALL_HEIGHT = 420, 240
FONT = "Liberation Sans, Arial, Helvetica, sans-serif"
TPS_COLOUR, P95_COLOUR, STOP_COLOUR, STEP_COLOUR = "#1f77b4", "#ff7f0e", "#d62728", "#7f7f7f"
# the ticks of the spectrum's axis: x = 1/(1-p), so 10 is the 90th percentile, 1000 the 99.9th
NINES = [1, 10, 100, 1000, 10_000, 100_000, 1_000_000]
NINES_LABEL = ("datum.value <= 1 ? '0%' : datum.value <= 10 ? '90%' : datum.value <= 100 ? '99%' : "
               "datum.value <= 1000 ? '99.9%' : datum.value <= 10000 ? '99.99%' : "
               "datum.value <= 100000 ? '99.999%' : '99.9999%'")


@dataclass(frozen=True, slots=True)
class ReportChart:
    """One chart of the report: `name` is its image's file name, `caption` what to read in it."""

    name: str
    title: str
    caption: str
    chart: Panel | alt.ConcatChart | alt.HConcatChart

    def spec(self) -> dict[str, Any]:
        # one sans-serif face for every text: Vega leaves subtitles to the renderer's default (a serif)
        return self.chart.configure(font=FONT).configure_title(subtitleFont=FONT).to_dict()


def figures(configs: list[FoldedConfiguration]) -> list[ReportChart]:
    """Every chart of the report that has something to draw, in the order the report shows them
    (a run that measured no step, a target lost at once, has no curve: its chart is left out)."""
    single = all(len(c.results) == 1 for c in configs)
    spread = "" if single else " Points are the median over the repeats; bars span their min to max."
    ax = data.axis(configs)
    point = ax.point_meaning
    out: list[ReportChart] = []
    if rows := data.exhibits(configs, registry.METRICS):  # the study's headline figures
        lead, per_watt = data.exhibited(registry.METRICS) or (None, None)
        assert lead is not None
        rate, watt = lead.heading, per_watt.heading if per_watt is not None else f"{lead.heading} per W"
        missing = "".join(f" No power figure for {r['configuration']}: {r['no_power']}." for r in rows
                          if r["no_power"]) + "".join(f" {r['configuration']}: {r['power_note']}." for r in rows
                                                      if r["power_note"])
        out.append(ReportChart(
            "exhibits", f"Exhibits per configuration: {rate}, response time, {watt}",
            f"At each configuration's saturation point ({point}): (a) {rate} ({lead.row_unit}); (b) the mean "
            "response time of all transactions, the bar spanning one standard deviation either side (its "
            f"consistency), p99/p50 written above it; (c) {watt}, {rate} over the mean power the server's "
            "machine drew over that step, drawn only where power was read."
            + ("" if single else " Each figure is the median of the repeats at their own saturation points; "
               "black bars span their min to max.") + missing,
            exhibits(configs, rows, lead, watt)))
    if data.by_users(configs, data.tps):
        out.append(ReportChart(
            f"throughput-vs-{ax.name}", f"Throughput against {ax.heading}",
            "Transactions per second of each step's measured window, per configuration; the diamond is "
            f"the saturation point ({point})." + spread,
            throughput_vs_users(configs)))
    if [r for r in data.by_users(configs, data.latency("p99")) if r["value"] > 0]:
        out.append(ReportChart(
            f"latency-vs-{ax.name}", f"p90 and p99 latency against {ax.heading}",
            "Latency percentiles of all transactions in each step's measured window (log scale)"
            + ax.latency_from + "." + spread,
            latency_vs_users(configs)))
    if any(data.timeline(c.docs[0], c.label)[0] for c in configs):
        out.append(ReportChart(
            "timeline", "Throughput and p95 over time",
            "Each report interval of the run (warm-up and settling included); the shaded spans are the "
            f"steps' measured windows, grey lines mark where a step changed the {ax.heading}, the red line the "
            "moment the stop condition fired." + ("" if single else " One run per configuration: its first repeat."),
            timeline(configs)))
    if data.spectrum(configs):
        out.append(ReportChart(
            "latency-spectrum", "Latency percentile spectrum per step",
            "The latency at each percentile from the steps' HDR histograms (every transaction"
            + ("" if single else " and every repeat") + "); each nine gets the same width.",
            spectrum(configs)))
    if data.by_users(configs, data.cpu("server")) or data.by_users(configs, data.cpu("client")):
        out.append(ReportChart(
            f"cpu-vs-{ax.name}", f"Server and client CPU against {ax.heading}",
            "CPU use over each step's measured window, in % of the whole machine: the server process "
            "(solid) and bench-dsl's own processes (dashed)." + spread,
            cpu_vs_users(configs)))
    # each declared figure the report draws (consistency) and each derived from the server's status
    for d in registry.METRICS:
        if (d.charted or d.derive is not None) and d.summarized and data.by_users(configs, d.path):
            out.append(ReportChart(
                f"{d.figure_name.replace('_', '-')}-vs-{ax.name}", f"{d.heading} against {ax.heading}",
                f"{d.description or d.heading}, over each step's measured window, per configuration." + spread,
                declared_vs_users(configs, d)))
    return out


def _colour(configs: Sequence[FoldedConfiguration]) -> alt.Scale:
    labels = [c.label for c in configs]
    # ten colours, then twenty
    return alt.Scale(domain=labels, scheme="category10") if len(labels) <= 10 else alt.Scale(domain=labels,
                                                                                           scheme="tableau20")


def _legend() -> alt.Legend:
    # configuration labels are long (every varied setting): below the chart, one per line
    return alt.Legend(title="configuration", orient="bottom", direction="vertical", labelLimit=700)


def _colour_by(configs: Sequence[FoldedConfiguration]) -> alt.Color:
    # every layer the same legend: layers whose legends differ (one None) make Vega warn in the page
    return alt.Color("configuration:N", scale=_colour(configs), legend=_legend())


def _users_x(rows: list[data.Row], ax: LoadAxis = DEFAULT_AXIS) -> alt.X:
    """The x axis of a chart against the load: users counts, or offered rates (tps)."""
    users = sorted({int(r[ax.key]) if ax.whole else float(r[ax.key]) for r in rows}) or [1]
    # steps that double (x2) bunch up at the left of a linear axis; a log axis spaces them evenly
    log = users[0] > 0 and users[-1] / users[0] >= 8
    if log and ax.log_if_multiplying:
        # a rate climbs by +N tps as often as by xN (examples/rate-saturation.bench): a log axis
        # only for rates that multiply, else it crowds the high rates where the saturation point is
        log = statistics.median(b / a for a, b in itertools.pairwise(users)) >= 1.5
    scale = alt.Scale(type="log", base=2, nice=False, padding=12) if log else alt.Scale(zero=False, nice=False,
                                                                                          padding=12)
    axis = alt.Axis(title=ax.title + (", log scale" if log else ""), format="d" if ax.whole else "~g",
                    values=users if len(users) <= 16 else alt.Undefined, grid=True)
    return alt.X(f"{ax.key}:Q", scale=scale, axis=axis)


def _x_tip(ax: LoadAxis) -> alt.Tooltip:
    return alt.Tooltip(f"{ax.key}:Q", title=ax.key if ax.whole else f"{ax.heading} ({ax.unit})")


# No legend for the dashes: the subtitles say which is which (a legend of lines that carry points
# draws two identical dots, not the two dashes).


def _by_users_layers(rows: list[data.Row], configs: Sequence[FoldedConfiguration], title: str, scale: alt.Scale,
                     dash: alt.StrokeDash | None = None) -> list[alt.Chart]:
    base = alt.Chart(alt.InlineData(values=rows))
    y = alt.Y("value:Q", title=title, scale=scale)
    ax = data.axis(list(configs))
    x = _users_x(rows, ax)
    colour = _colour_by(configs)
    tips = [alt.Tooltip("configuration:N"), alt.Tooltip("series:N", title="what"), _x_tip(ax),
            alt.Tooltip("value:Q", title="median", format=",.2f"), alt.Tooltip("min:Q", format=",.2f"),
            alt.Tooltip("max:Q", format=",.2f"), alt.Tooltip("runs:Q", title="runs"),
            alt.Tooltip("note:N", title="note")]
    enc: dict[str, Any] = {"x": x, "y": y, "color": colour, "tooltip": tips}
    detail = alt.Detail("series:N")
    if dash is not None:
        enc["strokeDash"] = dash
    line = base.mark_line(point=alt.OverlayMarkDef(size=40, filled=True), strokeWidth=2).encode(**enc, detail=detail)
    layers = [line]
    if any(r["runs"] > 1 for r in rows):
        bars = base.transform_filter("datum.runs > 1").mark_errorbar(ticks=True).encode(
            x=x, y=alt.Y("min:Q", title=title, scale=scale), y2="max:Q",
            color=_colour_by(configs), detail=detail)
        layers.insert(0, bars)
    return layers


def _saturation_layers(rows: list[data.Row], configs: Sequence[FoldedConfiguration], x: alt.X,
                       y: alt.Y) -> list[alt.Chart]:
    if not rows:
        return []
    base = alt.Chart(alt.InlineData(values=rows))
    tips = [alt.Tooltip("about:N", title="saturation point"), alt.Tooltip("value:Q", title="tps", format=",.1f")]
    marker = base.mark_point(shape="diamond", size=260, filled=True, stroke="black", strokeWidth=1.5,
                             opacity=1).encode(
        x=x, y=y, color=_colour_by(configs), tooltip=tips)
    text = base.mark_text(dy=-16, fontWeight="bold", fontSize=11).encode(
        x=x, y=y, text="label:N", color=_colour_by(configs))
    return [marker, text]


def throughput_vs_users(configs: list[FoldedConfiguration]) -> Panel:
    rows = data.by_users(configs, data.tps, "tps")
    ax = data.axis(configs)
    title, scale = "throughput (transactions/s)", alt.Scale(zero=True)
    layers = _by_users_layers(rows, configs, title, scale)
    sat = data.saturation_rows(configs, data.tps)
    layers += _saturation_layers(sat, configs, _users_x(rows, ax), alt.Y("value:Q", title=title, scale=scale))
    return alt.layer(*layers).properties(
        width=WIDTH, height=HEIGHT,
        title=alt.TitleParams(f"Throughput against {ax.heading}",
                              subtitle="a diamond marks the saturation point of each configuration"))


def latency_vs_users(configs: list[FoldedConfiguration]) -> Panel:
    rows = data.by_users(configs, data.latency("p90"), "p90") + data.by_users(configs, data.latency("p99"), "p99")
    rows = [r for r in rows if r["value"] > 0 and r["min"] > 0]  # a log axis has no place for 0
    dash = alt.StrokeDash("series:N", title="percentile", legend=None,  # the subtitle says which is which
                         scale=alt.Scale(domain=["p90", "p99"], range=[[1, 0], [6, 3]]))
    layers = _by_users_layers(rows, configs, "latency (ms, log scale)", alt.Scale(type="log"), dash)
    ax = data.axis(configs)
    said = ax.latency_from.removeprefix(",")
    subtitle = "solid: p90, dashed: p99" + (f"; response time{said}" if said else "")
    return alt.layer(*layers).properties(
        width=WIDTH, height=HEIGHT,
        title=alt.TitleParams(f"p90 and p99 latency against {ax.heading}", subtitle=subtitle))


def cpu_vs_users(configs: list[FoldedConfiguration]) -> Panel:
    rows = data.by_users(configs, data.cpu("server"), "server") + data.by_users(configs, data.cpu("client"), "client")
    dash = alt.StrokeDash("series:N", title="process", legend=None,  # the subtitle says which is which
                         scale=alt.Scale(domain=["server", "client"], range=[[1, 0], [6, 3]]))
    layers = _by_users_layers(rows, configs, "CPU (% of the machine)", alt.Scale(domain=[0, 100]), dash)
    return alt.layer(*layers).properties(
        width=WIDTH, height=HEIGHT,
        title=alt.TitleParams(f"Server and client CPU against {data.axis(configs).heading}",
                              subtitle="solid: the server process, dashed: bench-dsl (the client)"))


def declared_vs_users(configs: list[FoldedConfiguration], d: MetricDecl) -> Panel:
    """A declared figure (MetricDecl) of each step against the load axis."""
    rows = data.by_users(configs, d.path)
    title = f"{d.heading} ({d.unit})" if d.unit and d.unit not in d.heading else d.heading
    layers = _by_users_layers(rows, configs, title, alt.Scale(zero=True))
    return alt.layer(*layers).properties(
        width=WIDTH, height=HEIGHT, title=alt.TitleParams(f"{d.heading} against {data.axis(configs).heading}"))


EXHIBIT_WIDTH = 240


def exhibits(configs: list[FoldedConfiguration], rows: list[data.Row], lead: MetricDecl,
             watt: str) -> alt.HConcatChart:
    """data.exhibits' rows as three panels side by side, a bar (a mark) per configuration: `lead`,
    the throughput declared to lead them (MetricDecl.exhibit), `watt` its per watt's heading."""
    base = alt.Chart(alt.InlineData(values=rows))
    x = alt.X("configuration:N", sort=[c.label for c in configs],
              axis=alt.Axis(title=None, labelAngle=-30, labelLimit=220))
    colour = alt.Color("configuration:N", scale=_colour(configs), legend=None)  # the x axis names them
    repeats = any(r["runs"] > 1 for r in rows)
    tips = [alt.Tooltip("configuration:N"), alt.Tooltip("point:N", title="saturation point"),
            alt.Tooltip("runs:Q", title="runs")]

    def spread(y: str, title: str) -> list[alt.Chart]:  # the repeats' min to max
        return [base.transform_filter("datum.runs > 1").mark_errorbar(ticks=True, color="black").encode(
            x=x, y=alt.Y(f"{y}_min:Q", title=title), y2=f"{y}_max:Q")] if repeats else []

    def panel(layers: list[alt.Chart], title: str, subtitle: str) -> Panel:
        return alt.layer(*layers).properties(width=EXHIBIT_WIDTH, height=HEIGHT, title=alt.TitleParams(
            title, subtitle=subtitle, fontSize=12, anchor="start"))

    title = f"{lead.heading} ({lead.row_unit})"
    rate = panel([base.mark_bar().encode(x=x, y=alt.Y("throughput:Q", title=title), color=colour, tooltip=[
        *tips, alt.Tooltip("throughput:Q", title=lead.heading, format=",.0f"),
        alt.Tooltip("throughput_min:Q", title="min", format=",.0f"),
        alt.Tooltip("throughput_max:Q", title="max", format=",.0f")]), *spread("throughput", title),
        base.mark_text(dy=-8, fontSize=10).encode(x=x, y=alt.Y("throughput_max:Q", title=title), text="point:N")],
        f"(a) {lead.heading} at saturation", lead.row_unit)
    timed = base.transform_filter("isValid(datum.mean_ms)")
    title = "response time (ms)"
    latency = panel([
        timed.mark_errorbar(ticks=True).encode(x=x, y=alt.Y("low_ms:Q", title=title), y2="high_ms:Q", color=colour),
        timed.mark_point(filled=True, size=90, opacity=1).encode(x=x, y=alt.Y("mean_ms:Q", title=title), color=colour,
                                                                 tooltip=[*tips,
            alt.Tooltip("mean_ms:Q", title="mean (ms)", format=",.2f"),
            alt.Tooltip("stddev_ms:Q", title="standard deviation (ms)", format=",.2f"),
            alt.Tooltip("p99_p50:Q", title="p99/p50", format=",.2f")]),
        timed.mark_text(dy=-10, fontSize=10).encode(x=x, y=alt.Y("high_ms:Q", title=title), text="tail:N")],
        "(b) Mean response time", "point: the mean; bar: ± one standard deviation")
    title = watt
    read = [r for r in rows if r.get("per_watt") is not None]
    layers = [alt.Chart(alt.InlineData(values=read)).mark_bar().encode(
        x=x, y=alt.Y("per_watt:Q", title=title), color=colour, tooltip=[
            *tips, alt.Tooltip("per_watt:Q", title=watt, format=",.2f"),
            alt.Tooltip("power_note:N", title="note")])] if read else []
    if read and repeats:
        layers += [alt.Chart(alt.InlineData(values=read)).transform_filter("datum.runs > 1").mark_errorbar(
            ticks=True, color="black").encode(x=x, y=alt.Y("per_watt_min:Q", title=title), y2="per_watt_max:Q")]
    unread = [r for r in rows if r["no_power"]]
    if unread:  # said in words in its place: no bar of 0, which would read as a measurement
        layers.append(alt.Chart(alt.InlineData(values=unread)).mark_text(
            angle=270, align="left", baseline="middle", fontSize=11, color=STEP_COLOUR).encode(
            x=x, y=alt.value(HEIGHT - 6), text=alt.value("no power figure"),
            tooltip=[alt.Tooltip("configuration:N"), alt.Tooltip("no_power:N", title="no power figure")]))
    per_watt = panel(layers, f"(c) {watt}", f"{lead.heading} over the server machine's mean power")
    return alt.hconcat(rate, latency, per_watt, spacing=24)


def _grid(charts: list[Panel], title: str, subtitle: str) -> alt.ConcatChart:
    top = alt.TitleParams(title, subtitle=subtitle, anchor="start", fontSize=14)
    return alt.concat(*charts, columns=2).properties(title=top)


def timeline(configs: list[FoldedConfiguration]) -> alt.ConcatChart:
    panels: list[Panel] = []
    shown = [c for c in configs if data.timeline(c.docs[0], c.label)[0]]
    for c in shown:
        points, bounds, stops = data.timeline(c.docs[0], c.label)
        base = alt.Chart(alt.InlineData(values=points))
        x = alt.X("t:Q", title="time since the run started (s)", scale=alt.Scale(nice=False, zero=False))
        tips = [alt.Tooltip("t:Q", title="t (s)", format=".1f"), alt.Tooltip("users:Q"), alt.Tooltip("phase:N"),
                alt.Tooltip("tps:Q", format=",.1f"), alt.Tooltip("p95:Q", title="p95 (ms)", format=",.2f")]
        ax = axis_of(c.docs[0])
        if ax.asked is not None:  # what the load asked beside what ran (a rate's offered)
            tips.insert(3, alt.Tooltip(f"{ax.asked}:Q", title=f"{ax.heading} ({ax.unit})", format=",.1f"))
        tps_line = base.mark_line(color=TPS_COLOUR, strokeWidth=2, point=alt.OverlayMarkDef(size=14,
                                                                                            color=TPS_COLOUR)).encode(
            x=x, y=alt.Y("tps:Q", title="throughput (transactions/s)",
                         axis=alt.Axis(titleColor=TPS_COLOUR, labelColor=TPS_COLOUR)), tooltip=tips)
        p95_line = base.transform_filter("datum.p95 != null").mark_line(
            color=P95_COLOUR, strokeWidth=1.5, strokeDash=[4, 2]).encode(
            x=x, y=alt.Y("p95:Q", title="p95 latency (ms)", axis=alt.Axis(titleColor=P95_COLOUR,
                                                                          labelColor=P95_COLOUR)), tooltip=tips)
        layers: list[alt.Chart] = [alt.layer(tps_line, p95_line).resolve_scale(y="independent")]
        windows = data.measured_windows(c.docs[0])
        if windows:
            shade = alt.Chart(alt.InlineData(values=windows)).mark_rect(color=STEP_COLOUR, opacity=0.12)
            layers.insert(0, shade.encode(x="start:Q", x2="end:Q",
                                          tooltip=[alt.Tooltip("label:N", title="measured window")]))
        for rows, colour, width in ((bounds, STEP_COLOUR, 1), (stops, STOP_COLOUR, 2)):
            if not rows:
                continue
            marks = alt.Chart(alt.InlineData(values=rows))
            layers.append(marks.mark_rule(color=colour, strokeWidth=width,
                                          strokeDash=[] if colour == STOP_COLOUR else [3, 3]).encode(
                x="t:Q", tooltip=[alt.Tooltip("label:N", title="event"), alt.Tooltip("t:Q", title="t (s)")]))
            layers.append(marks.mark_text(angle=270, align="right", baseline="bottom", dx=-4, dy=-2, fontSize=9,
                                          color=colour).encode(x="t:Q", y=alt.value(0), text="label:N"))
        title = alt.TitleParams(c.label, subtitle=_run_subtitle(c.docs[0]), fontSize=12, anchor="start")
        panels.append(alt.layer(*layers).properties(width=SMALL_WIDTH if len(shown) > 1 else WIDTH,
                                                     height=SMALL_HEIGHT if len(shown) > 1 else HEIGHT,
                                                     title=title))
    return _grid(panels, "Throughput and p95 over time",
                 "solid blue: tps (left axis), dashed orange: p95 in ms (right axis); shaded: measured "
                 "windows, grey lines: step changes, red: the stop condition fired")


def _run_subtitle(doc: dict[str, Any]) -> str:
    stop = StopReason.from_json(doc.get("stop"))
    sat, ax = doc.get("saturation") or {}, axis_of(doc)
    said = "no stop condition fired: every planned step ran" if stop is None else (
        f"stopped by {stop.condition}" if stop.condition else f"ended: {stop.kind}")
    point = f"saturation point {ax.words(sat[ax.key])}" if sat.get(ax.key) is not None else "no saturation point"
    return f"{point}, {said}"


def spectrum(configs: list[FoldedConfiguration]) -> alt.ConcatChart:
    rows = data.spectrum(configs)
    ax = data.axis(configs)
    users = sorted({r[ax.key] for r in rows})
    top = max((r["x"] for r in rows), default=10.0)
    ticks = [v for v in NINES if v <= top * 10] or NINES[:2]
    panels: list[Panel] = []
    shown = [c for c in configs if any(r["configuration"] == c.label for r in rows)]
    for c in shown:
        mine = [r for r in rows if r["configuration"] == c.label]
        base = alt.Chart(alt.InlineData(values=mine))
        panels.append(base.mark_line(strokeWidth=2, interpolate="step-after").encode(
            x=alt.X("x:Q", title="percentile (log scale of 1/(1-p): each nine equally wide)",
                    scale=alt.Scale(type="log", domain=[1, ticks[-1]], nice=False),
                    axis=alt.Axis(values=ticks, labelExpr=NINES_LABEL, grid=True)),
            y=alt.Y("latency_ms:Q", title="latency (ms, log scale)", scale=alt.Scale(type="log")),
            color=alt.Color(f"{ax.key}:O", title=f"step ({'users' if ax.name == 'users' else 'offered tps'})",
                            scale=alt.Scale(domain=users, scheme="viridis"),
                            legend=alt.Legend(orient="right")),
            tooltip=[alt.Tooltip("step:N"), alt.Tooltip("percentile:Q", title="percentile (%)", format=".4~f"),
                     alt.Tooltip("latency_ms:Q", title="latency (ms)", format=",.3f")],
        ).properties(width=SMALL_WIDTH if len(shown) > 1 else WIDTH,
                     height=SMALL_HEIGHT if len(shown) > 1 else HEIGHT,
                     title=alt.TitleParams(c.label, fontSize=12, anchor="start")))
    return _grid(panels, "Latency percentile spectrum per step",
                 "from the stored HDR histograms, all transactions of the step")
