"""The numbers the charts draw, as plain rows (no plotting library): fold.py's figures of each
configuration, the same summary.json and `bench compare` give, so the three never disagree.

Each point of a curve is a figure's median over the repeats at a users count, with the min-max
range; the saturation point is fold's too, placed on the median curve (between two steps when the
repeats' middle falls between them). Latency spectra are the exception: a step's histograms of
every repeat are merged (HDR histograms add), which is the spectrum of all transactions measured at
that users count. The exhibits (exhibits()) take each repeat at its own saturation point instead, and
fold those figures over the repeats.

The x axis is the configurations' load axis (fold.load_axis, one for all: axis() refuses both): a
row holds its point under the axis' key, "users" for closed-loop results, "rate_tps" (the offered
rate) for rate results, and says it in the axis' unit ("8 users", "4000 tps").
"""

from __future__ import annotations

import itertools
import math
import statistics
from typing import Any

from hdrh.histogram import HdrHistogram

from bench_dsl.attribution.registry import title
from bench_dsl.core.axis import LoadAxis
from bench_dsl.engine.profiles.registry import AXES, axis_of
from bench_dsl.engine.stopping import StopReason
from bench_dsl.language.metric_decls import MetricDecl, Table
from bench_dsl.measure.txstats import new_histogram
from bench_dsl.results.fold import FoldedConfiguration, at, figure, measured_steps, one_axis, stat

Row = dict[str, Any]
FigurePath = tuple[str, ...]  # where a figure is in a fold.by_users entry

tps: FigurePath = ("tps",)


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) else None


def latency(name: str) -> FigurePath:
    return ("latency_ms", name)


def cpu(source: str) -> FigurePath:
    return ("cpu_pct", source)


def _stat(entry: dict[str, Any], figure: FigurePath) -> dict[str, Any] | None:
    node: Any = entry
    for key in figure:
        node = node.get(key) if isinstance(node, dict) else None
    return node if isinstance(node, dict) and node.get("median") is not None else None


def axis(configs: list[FoldedConfiguration]) -> LoadAxis:
    """The configurations' one load axis (a UsageError when some ran users and some a rate)."""
    return AXES[one_axis((c.label, c.axis) for c in configs)]


def by_users(configs: list[FoldedConfiguration], figure: FigurePath, series: str = "") -> list[Row]:
    """One row per configuration and point of the axis (users count, offered rate): the median over
    repeats, min and max, how many."""
    rows: list[Row] = []
    key = axis(configs).key
    for c in configs:
        for e in c.by_users:
            s = _stat(e, figure)
            if s is not None:
                rows.append({"configuration": c.label, "series": series, key: e[key], "value": s["median"],
                             "min": s["min"], "max": s["max"], "runs": s["n"], "note": ""})
    return rows


def saturation_rows(configs: list[FoldedConfiguration], figure: FigurePath) -> list[Row]:
    """The saturation point of each configuration, placed on its median curve of `figure`."""
    rows: list[Row] = []
    curves: dict[str, list[tuple[float, float]]] = {}
    ax = axis(configs)
    for r in by_users(configs, figure):
        curves.setdefault(r["configuration"], []).append((r[ax.key], r["value"]))
    for c in configs:
        s = c.saturation
        value = None if s is None else _on_curve(curves.get(c.label, []), s["median"])
        if s is None or value is None:
            continue
        point = ax.words(s["median"])
        spread = f" (repeats: {_users(s['min'])}-{_users(s['max'])})" if s["n"] > 1 and s["min"] != s["max"] else ""
        condition = _condition(c)
        why = f"stopped by {condition}" if condition else "no stop condition fired"
        ran_out = ran_out_of(c)
        rows.append({"configuration": c.label, ax.key: s["median"], "value": value,
                     "label": point, "about": f"saturation point: {point}{spread}, {why}"
                     + (f"; {ran_out}" if ran_out else "")})
    return rows


def _users(v: float) -> str:
    return f"{v:g}"


def _on_curve(curve: list[tuple[float, float]], users: float) -> float | None:
    """The curve's value at `users`: a measured point, or between the two around it (the median of an
    even number of repeats can fall between steps); None outside the curve."""
    for (u0, v0), (u1, v1) in itertools.pairwise(curve):
        if u0 < users < u1:
            return v0 + (v1 - v0) * (users - u0) / (u1 - u0)
    return next((v for u, v in curve if u == users), None)


def _condition(c: FoldedConfiguration) -> str | None:
    """The condition that ended most repeats that a stop condition ended (None: none fired)."""
    found = [d.get("saturation") or {} for d in c.docs]
    conditions = [s["condition"] for s in found if s.get("saturated") and s.get("condition")]
    return statistics.mode(conditions) if conditions else None


def ran_out_of(c: FoldedConfiguration) -> str | None:
    """What ran out where most of its repeats ended (fold: FoldedConfiguration.bottleneck), in a few
    words: "limited by row locks (high confidence)"; None where none said."""
    b = c.bottleneck
    if b is None:
        return None
    return f"limited by {title(b['class'])}" + (f" ({b['confidence']} confidence)" if b.get("confidence") else "")


def timeline(doc: dict[str, Any], label: str) -> tuple[list[Row], list[Row], list[Row]]:
    """A run over time: the intervals (throughput and p95; a rate's, the rate it offered too), where
    each step began (its settle included, as the users, or the rate, changed then), and the moment
    the stop condition fired."""
    points: list[Row] = []
    starts: dict[int, tuple[float, int]] = {}
    ax = axis_of(doc)
    for i in doc.get("intervals") or []:
        t = _num(i.get("t"))
        if t is None:
            continue
        p95 = _num((i.get("latency_ms") or {}).get("p95"))
        points.append({"configuration": label, "t": t, "tps": _num(i.get("tps")), "p95": p95,
                       "users": i.get("users"), "phase": i.get("phase") or "",
                       **({ax.asked: _num(i.get(ax.asked))} if ax.asked is not None else {})})
        step, start = i.get("step"), _num(i.get("start_s"))
        if isinstance(step, int) and start is not None and (step not in starts or start < starts[step][0]):
            starts[step] = (start, int(i.get("users") or 0))
    # a step's point is its row's (a rate's, the rate it asked, not the pool's users, the same at every step)
    asked = {s.get("step"): ax.at(s) for s in doc.get("steps") or []}
    bounds = [{"configuration": label, "t": t, "label": ax.words(asked.get(n) if asked.get(n) is not None else u)}
              for n, (t, u) in sorted(starts.items())]
    stops: list[Row] = []
    stop = StopReason.from_json(doc.get("stop"))
    if stop is not None and stop.at_s is not None:
        stops.append({"configuration": label, "t": stop.at_s, "label": f"fired: {stop.condition or stop.kind}"})
    return points, bounds, stops


def measured_windows(doc: dict[str, Any]) -> list[Row]:
    """Each step's measured window (what its figures and the stop conditions judged), on the
    timeline's clock."""
    rows: list[Row] = []
    ax = axis_of(doc)
    for n, s in measured_steps(doc):
        if n is None:
            continue  # a run's summary, not a step: no window of its own
        start, seconds = _num(s.get("start_s")), _num(s.get("seconds"))
        if start is not None and seconds:
            rows.append({"start": start, "end": start + seconds,
                         "label": f"step {s.get('step')}: {ax.words(at(s, ax.name))}, {seconds:.1f} s measured"})
    return rows


def spectrum(configs: list[FoldedConfiguration], points_per_decade: int = 20) -> list[Row]:
    """The latency at each percentile, per configuration and point of the axis, from the steps' HDR
    histograms (every transaction and every repeat merged). `x` is 1/(1-p): the 99.9th percentile
    sits at 1000, so a log axis gives each nine the same width, as HdrHistogram's own plots do."""
    rows: list[Row] = []
    ax = axis(configs)
    for c in configs:
        merged: dict[float, HdrHistogram] = {}
        for doc in c.docs:
            for _, s in measured_steps(doc):
                if (point := at(s, ax.name)) is None:
                    continue
                for encoded in (s.get("histograms") or {}).values():
                    if not encoded:
                        continue
                    h = HdrHistogram.decode(encoded)
                    merged.setdefault(point, new_histogram()).add(h)
        for users in sorted(merged):
            h = merged[users]
            n = h.get_total_count()
            if n <= 0:
                continue
            # beyond 1-1/n a percentile says no more than the maximum: stop there
            top = math.log10(n)
            k = 0
            while k / points_per_decade <= top:
                x = 10 ** (k / points_per_decade)
                p = 100.0 * (1.0 - 1.0 / x)
                rows.append(_spectrum_row(c.label, ax, users, x, p, h.get_value_at_percentile(p)))
                k += 1
            rows.append(_spectrum_row(c.label, ax, users, float(n), 100.0, h.get_max_value()))
    return rows


def _spectrum_row(label: str, ax: LoadAxis, point: float, x: float, p: float, micros: int) -> Row:
    return {"configuration": label, ax.key: point, "step": ax.words(point), "x": x,
            "percentile": round(p, 4), "latency_ms": micros / 1000.0}


def summary_rows(configs: list[FoldedConfiguration]) -> list[Row]:
    """The table at the top of the report: one line per configuration."""
    rows: list[Row] = []
    ax = axis(configs)
    for c in configs:
        s, docs = c.saturation, c.docs
        best = [max(v for e in c.by_users if (v := _repeat(e, k)) is not None) for k in range(len(docs))
                if any(_repeat(e, k) is not None for e in c.by_users)]
        statuses = sorted({str(d.get("status")) for d in docs})
        servers = sorted({str((d.get("server") or {}).get("version") or "?") for d in docs})
        if s is None:
            point = "none measured"
        else:
            point = ax.words(s["median"]) + (
                f" ({_users(s['min'])}-{_users(s['max'])} over {s['n']} repeats)" if s["n"] > 1 else "")
        condition = _condition(c)
        rows.append({
            "configuration": c.label,
            "scenario": ", ".join(sorted({str((d.get("scenario") or {}).get("name")) for d in docs})),
            "runs": len(docs),
            "saturation": point,
            "stopped_by": condition or "no stop condition fired",
            "ran_out": ran_out_of(c) or "-",
            "best_tps": f"{statistics.median(best):,.1f}" if best else "-",
            "status": ", ".join(statuses),
            "server": ", ".join(servers),
            "files": ", ".join(str(p) for p in c.paths) or "-",
        })
    return rows


def _repeat(entry: dict[str, Any], k: int) -> float | None:
    """Repeat k's throughput at a point of the axis (None: that repeat did not measure it)."""
    s = entry.get("tps")
    return None if s is None else s["per_repeat"][k]


# -- the exhibits: a study's headline figures side by side, one per configuration -------------------

# The storage brief's three exhibits: the throughput at saturation, the mean response time with its
# consistency, the throughput per watt. Drawn for results of a workload that declares the throughput
# they lead with (MetricDecl.exhibit: TPC-C's new orders per minute and that per watt, whose brief
# they reproduce); results of other workloads have their figures in the charts against users.
NO_POWER_SOURCE = "the scenario reads no power (a `power` line names a source)"


def no_power_figure(doc: dict[str, Any]) -> str | None:
    """Why a run has no power figure (its result's power.no_power_figure), None when power was read."""
    p = doc.get("power")
    if not isinstance(p, dict):
        return NO_POWER_SOURCE
    return None if p.get("measured") else str(p.get("no_power_figure") or "its power source gave no reading")


def at_saturation(doc: dict[str, Any], ax: LoadAxis) -> dict[str, Any] | None:
    """The row of the step a run's saturation point was measured in (the last step that met every
    condition; where none fired, the last complete one): None where it has none."""
    point = _num((doc.get("saturation") or {}).get(ax.key))
    for n, row in measured_steps(doc) if point is not None else []:
        x = ax.asked_of(doc) if n is None else None
        if (x if x is not None else at(row, ax.name)) == point:
            return row
    return None


def exhibited(table: Table) -> tuple[MetricDecl, MetricDecl | None] | None:
    """The throughput the exhibits lead with and its per watt, as declared (MetricDecl.exhibit)."""
    lead = next((d for d in table if d.exhibit == "throughput"), None)
    return None if lead is None else (lead, next((d for d in table if d.exhibit == "per_watt"), None))


def exhibits(configs: list[FoldedConfiguration], table: Table) -> list[Row]:
    """One row per configuration that measured the exhibits' throughput (exhibited) at its saturation
    point: that throughput, the mean response time of every transaction with its standard deviation
    and p99/p50, and the throughput per watt, each the median of the repeats at their own saturation
    points with the min and max; where no repeat read power, `no_power` says why (the results'
    power.no_power_figure)."""
    if (declared := exhibited(table)) is None:
        return []
    lead, per_watt = declared
    ax = axis(configs)
    rows: list[Row] = []
    for c in configs:
        hits = [(d, r) for d in c.docs if (r := at_saturation(d, ax)) is not None]

        def folded(get: Any, hits: list[tuple[dict[str, Any], dict[str, Any]]] = hits) -> dict[str, Any] | None:
            return stat([_num(get(r)) for _, r in hits])

        rate = folded(lambda r: figure(r, lead.figure_name))
        if rate is None:
            continue
        mean = folded(lambda r: (r.get("latency_ms") or {}).get("avg"))
        sd = folded(lambda r: figure(r, "latency_stddev_ms"))
        tail = folded(lambda r: figure(r, "p99_p50_ratio"))
        watt = folded(lambda r: figure(r, per_watt.figure_name)) if per_watt is not None else None
        why = sorted({w for d, _ in hits if (w := no_power_figure(d)) is not None})
        if watt is None and not why:
            why = ["no power was read over the saturation point's step"]
        s = c.saturation
        point = "-" if s is None else ax.words(s["median"]) + (
            f" ({_users(s['min'])}-{_users(s['max'])})" if s["n"] > 1 and s["min"] != s["max"] else "")
        row: Row = {"configuration": c.label, "point": f"at {point}", "runs": rate["n"],
                    "throughput": rate["median"], "throughput_min": rate["min"], "throughput_max": rate["max"],
                    "p99_p50": None if tail is None else tail["median"],
                    "no_power": "; ".join(why) if watt is None else None,
                    "power_note": f"no power figure in {len(c.docs) - watt['n']} of {len(c.docs)} runs: "
                                  + "; ".join(why) if watt is not None and why else ""}
        if mean is not None:
            spread = 0.0 if sd is None else sd["median"]
            row.update(mean_ms=mean["median"], stddev_ms=None if sd is None else spread,
                       low_ms=max(0.0, mean["median"] - spread), high_ms=mean["median"] + spread,
                       tail=f"p99/p50 {tail['median']:.1f}x" if tail is not None else "")
        if watt is not None:
            row.update(per_watt=watt["median"], per_watt_min=watt["min"], per_watt_max=watt["max"])
        rows.append(row)
    return rows
