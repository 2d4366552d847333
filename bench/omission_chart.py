"""The coordinated-omission chart of bench/omission.py: per report interval, the p99 and max of the
open-loop run's response time (from the due moment) and service time (from the send), the
closed-loop run's latency beside it, the server's stop shaded; the report's house style
(bench_dsl/results/report/charts.py: its font, colours and sizes), written by vl-convert."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import altair as alt

from bench_dsl.results.report.charts import FONT, P95_COLOUR, SMALL_HEIGHT, SMALL_WIDTH, STOP_COLOUR, TPS_COLOUR

SERIES = {  # (run, key) -> what the legend says; drawn in this order (the response time on top)
    ("open", "service_ms"): "service time (open loop, from the send)",
    ("open", "latency_ms"): "response time (open loop, from the due moment)",
    ("closed", "latency_ms"): "latency (closed loop)",
}
COLOURS = [TPS_COLOUR, P95_COLOUR, "#2ca02c"]


def rows(r: dict[str, Any]) -> list[dict[str, Any]]:
    """Long rows, in ms: per interval, run, series and statistic (p99 or max), a point at each end of
    the interval, so that each interval draws as a flat segment over the time it covers (an interval
    in which no transaction ended has no latency, and no segment)."""
    out = []
    for (run, key), name in SERIES.items():
        for i in r[run]["timeline"]:
            for stat in ("p99", "max"):
                v = i.get(f"{key}_{stat}")
                if v is not None and v > 0:
                    out += [{"panel": run, "t": i[end], "series": name, "stat": stat, "ms": v, "interval":
                             f"{i['start']:.2f}-{i['end']:.2f} s"} for end in ("start", "end")]
    return out


def chart(r: dict[str, Any]) -> alt.ConcatChart:
    data = rows(r)
    colour = alt.Color("series:N", scale=alt.Scale(domain=list(SERIES.values()), range=COLOURS),
                       legend=alt.Legend(title=None, orient="bottom", direction="vertical", labelLimit=600))
    # no legend for the dashes: the subtitle says which is which
    dash = alt.StrokeDash("stat:N", scale=alt.Scale(domain=["p99", "max"], range=[[1, 0], [5, 3]]), legend=None)
    top = max([d["ms"] for d in data] + [1.0])
    y = alt.Y("ms:Q", title="milliseconds (log scale)", scale=alt.Scale(type="log", domain=[0.05, top * 1.5]))
    panels = []
    for run, title in (("open", f"Open loop: {r['rate']:,.0f} tps, users max {r['users']} queue {r['queue']:,}"),
                       ("closed", f"Closed loop: users {r['closed_users']}")):
        one = r[run]
        band = alt.Chart(alt.InlineData(values=[{"start": one["stop_at_s"], "end": one["stop_at_s"] + one["stopped_s"],
                                                 "label": f"server stopped {one['stopped_s']:.2f} s"}]))
        shade = band.mark_rect(color=STOP_COLOUR, opacity=0.12).encode(x="start:Q", x2="end:Q",
                                                                        tooltip=["label:N"])
        words = band.mark_text(align="left", baseline="bottom", dx=3, dy=-3, fontSize=9, color=STOP_COLOUR).encode(
            x="start:Q", y=alt.value(SMALL_HEIGHT), text="label:N")
        lines = alt.Chart(alt.InlineData(values=[d for d in data if d["panel"] == run])).mark_line(
            strokeWidth=1.8).encode(
            x=alt.X("t:Q", title="seconds into the measured window", scale=alt.Scale(nice=False, zero=True)),
            y=y, color=colour, strokeDash=dash,
            detail=["stat:N", "interval:N"],  # one flat segment per interval: none drawn where nothing ended
            tooltip=[alt.Tooltip("series:N"), alt.Tooltip("stat:N"), alt.Tooltip("interval:N"),
                     alt.Tooltip("ms:Q", format=",.2f")])
        sub = (f"{one['slow']:,} slower than 1 s (rate x (stop - 1 s) = {one['expected']:,.0f})" if run == "open"
               else f"{one['slow']:,} slower than 1 s ({one['per_user']:g} per user)")
        panels.append(alt.layer(shade, lines, words).properties(
            width=SMALL_WIDTH, height=SMALL_HEIGHT, title=alt.TitleParams(title, subtitle=sub, fontSize=12,
                                                                        anchor="start")))
    head = alt.TitleParams(f"A server stopped for {r['stall_asked_s']:g} s: what an open loop records, and what a "
                           "closed loop hides",
                           subtitle="each 1 s report interval's p99 (solid) and max (dashed) of the transactions "
                                    "that ended in it (none where none ended); shaded: the server stopped (SIGSTOP "
                                    "... SIGCONT)", anchor="start", fontSize=14)
    return alt.hconcat(*panels).resolve_scale(y="shared").properties(title=head)


def write_chart(r: dict[str, Any], directory: Path, name: str) -> list[Path]:
    import vl_convert as vlc

    from bench_dsl.results.files import write_atomically
    from bench_dsl.results.report.html import PNG_SCALE, vl_version

    spec = chart(r).configure(font=FONT).configure_title(subtitleFont=FONT).to_dict()
    svg, png = Path(directory) / f"{name}.svg", Path(directory) / f"{name}.png"
    write_atomically(svg, vlc.vegalite_to_svg(spec, vl_version=vl_version()).encode("utf-8"))
    write_atomically(png, vlc.vegalite_to_png(spec, vl_version=vl_version(), scale=PNG_SCALE))
    return [svg, png]
