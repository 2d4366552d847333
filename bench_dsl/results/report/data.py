"""The numbers the charts draw, as plain rows (no plotting library): fold.py's figures of each
configuration, the same summary.json and `bench compare` give, so the three never disagree.

Each point of a curve is a figure's median over the repeats at a users count, with the min-max
range; the saturation point is fold's too, placed on the median curve (between two steps when the
repeats' middle falls between them). Latency spectra are the exception: a step's histograms of
every repeat are merged (HDR histograms add), which is the spectrum of all transactions measured at
that users count.
"""

from __future__ import annotations

import itertools
import math
import statistics
from typing import Any

from hdrh.histogram import HdrHistogram

from bench_dsl.engine.stopping import StopReason
from bench_dsl.measure.metrics import new_histogram
from bench_dsl.results.fold import Configuration, measured_steps

Row = dict[str, Any]
Figure = tuple[str, ...]  # where a figure is in a fold.by_users entry

tps: Figure = ("tps",)


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) else None


def latency(name: str) -> Figure:
    return ("latency_ms", name)


def cpu(source: str) -> Figure:
    return ("cpu_pct", source)


def _stat(entry: dict[str, Any], figure: Figure) -> dict[str, Any] | None:
    node: Any = entry
    for key in figure:
        node = node.get(key) if isinstance(node, dict) else None
    return node if isinstance(node, dict) and node.get("median") is not None else None


def by_users(configs: list[Configuration], figure: Figure, series: str = "") -> list[Row]:
    """One row per configuration and users count: the median over repeats, min and max, how many."""
    rows: list[Row] = []
    for c in configs:
        for e in c.by_users:
            s = _stat(e, figure)
            if s is not None:
                rows.append({"configuration": c.label, "series": series, "users": e["users"], "value": s["median"],
                             "min": s["min"], "max": s["max"], "runs": s["n"], "note": ""})
    return rows


def saturation_rows(configs: list[Configuration], figure: Figure) -> list[Row]:
    """The saturation point of each configuration, placed on its median curve of `figure`."""
    rows: list[Row] = []
    curves: dict[str, list[tuple[float, float]]] = {}
    for r in by_users(configs, figure):
        curves.setdefault(r["configuration"], []).append((r["users"], r["value"]))
    for c in configs:
        s = c.saturation
        value = None if s is None else _on_curve(curves.get(c.label, []), s["median"])
        if s is None or value is None:
            continue
        users = _users(s["median"])
        spread = f" (repeats: {_users(s['min'])}-{_users(s['max'])})" if s["n"] > 1 and s["min"] != s["max"] else ""
        condition = _condition(c)
        why = f"stopped by {condition}" if condition else "no stop condition fired"
        rows.append({"configuration": c.label, "users": s["median"], "value": value,
                     "label": f"{users} users", "about": f"saturation point: {users} users{spread}, {why}"})
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


def _condition(c: Configuration) -> str | None:
    """The condition that ended most repeats that a stop condition ended (None: none fired)."""
    found = [d.get("saturation") or {} for d in c.docs]
    conditions = [s["condition"] for s in found if s.get("saturated") and s.get("condition")]
    return statistics.mode(conditions) if conditions else None


def timeline(doc: dict[str, Any], label: str) -> tuple[list[Row], list[Row], list[Row]]:
    """A run over time: the intervals (throughput and p95), where each step began (its settle
    included, as the users changed then), and the moment the stop condition fired."""
    points: list[Row] = []
    starts: dict[int, tuple[float, int]] = {}
    for i in doc.get("intervals") or []:
        t = _num(i.get("t"))
        if t is None:
            continue
        p95 = _num((i.get("latency_ms") or {}).get("p95"))
        points.append({"configuration": label, "t": t, "tps": _num(i.get("tps")), "p95": p95,
                       "users": i.get("users"), "phase": i.get("phase") or ""})
        step, start = i.get("step"), _num(i.get("start_s"))
        if isinstance(step, int) and start is not None and (step not in starts or start < starts[step][0]):
            starts[step] = (start, int(i.get("users") or 0))
    bounds = [{"configuration": label, "t": t, "label": f"{u} users"}
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
    for n, s in measured_steps(doc):
        if n is None:
            continue  # a run's summary, not a step: no window of its own
        start, seconds = _num(s.get("start_s")), _num(s.get("seconds"))
        if start is not None and seconds:
            rows.append({"start": start, "end": start + seconds,
                         "label": f"step {s.get('step')}: {s['users']} users, {seconds:.1f} s measured"})
    return rows


def spectrum(configs: list[Configuration], points_per_decade: int = 20) -> list[Row]:
    """The latency at each percentile, per configuration and users count, from the steps' HDR
    histograms (every transaction and every repeat merged). `x` is 1/(1-p): the 99.9th percentile
    sits at 1000, so a log axis gives each nine the same width, as HdrHistogram's own plots do."""
    rows: list[Row] = []
    for c in configs:
        merged: dict[int, HdrHistogram] = {}
        for doc in c.docs:
            for _, s in measured_steps(doc):
                for encoded in (s.get("histograms") or {}).values():
                    if not encoded:
                        continue
                    h = HdrHistogram.decode(encoded)
                    merged.setdefault(int(s["users"]), new_histogram()).add(h)
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
                rows.append(_spectrum_row(c.label, users, x, p, h.get_value_at_percentile(p)))
                k += 1
            rows.append(_spectrum_row(c.label, users, float(n), 100.0, h.get_max_value()))
    return rows


def _spectrum_row(label: str, users: int, x: float, p: float, micros: int) -> Row:
    return {"configuration": label, "users": users, "step": f"{users} users", "x": x,
            "percentile": round(p, 4), "latency_ms": micros / 1000.0}


def summary_rows(configs: list[Configuration]) -> list[Row]:
    """The table at the top of the report: one line per configuration."""
    rows: list[Row] = []
    for c in configs:
        s, docs = c.saturation, c.docs
        best = [max(v for e in c.by_users if (v := _repeat(e, k)) is not None) for k in range(len(docs))
                if any(_repeat(e, k) is not None for e in c.by_users)]
        statuses = sorted({str(d.get("status")) for d in docs})
        servers = sorted({str((d.get("server") or {}).get("version") or "?") for d in docs})
        if s is None:
            point = "none measured"
        else:
            point = f"{_users(s['median'])} users" + (
                f" ({_users(s['min'])}-{_users(s['max'])} over {s['n']} repeats)" if s["n"] > 1 else "")
        condition = _condition(c)
        rows.append({
            "configuration": c.label,
            "scenario": ", ".join(sorted({str((d.get("scenario") or {}).get("name")) for d in docs})),
            "runs": len(docs),
            "saturation": point,
            "stopped_by": condition or "no stop condition fired",
            "best_tps": f"{statistics.median(best):,.1f}" if best else "-",
            "status": ", ".join(statuses),
            "server": ", ".join(servers),
            "files": ", ".join(str(p) for p in c.paths) or "-",
        })
    return rows


def _repeat(entry: dict[str, Any], k: int) -> float | None:
    """Repeat k's throughput at a users count (None: that repeat did not measure it)."""
    s = entry.get("tps")
    return None if s is None else s["per_repeat"][k]
