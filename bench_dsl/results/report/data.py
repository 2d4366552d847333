"""The numbers the charts draw, read from result documents: plain rows, no plotting library.

Repeats of a configuration are folded per users count into the median and the min-max range, so a
chart shows what is typical and how far the repeats spread. Latency spectra are the exception: a
step's histograms of every repeat are merged (HDR histograms add), which is the spectrum of all
transactions measured at that users count.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hdrh.histogram import HdrHistogram

from bench_dsl.measure.metrics import new_histogram
from bench_dsl.results.report.load import Configuration

Row = dict[str, Any]
Getter = Callable[[dict[str, Any]], float | None]


def measured_steps(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """Steps that measured something. A step a stop condition cut short (`complete` false) is kept:
    it is the step that broke, and its figures are real; the tooltip says it was cut."""
    return [s for s in doc.get("steps") or [] if (s.get("count") or 0) > 0 and s.get("users")]


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) else None


def tps(step: dict[str, Any]) -> float | None:
    return _num(step.get("tps"))


def latency(name: str) -> Getter:
    return lambda step: _num((step.get("latency_ms") or {}).get(name))


def cpu(source: str) -> Getter:
    return lambda step: _num((step.get("cpu") or {}).get(source))


def by_users(configs: list[Configuration], get: Getter, series: str = "") -> list[Row]:
    """One row per configuration and users count: the median over repeats, min and max, how many."""
    rows: list[Row] = []
    for c in configs:
        values: dict[int, list[float]] = {}
        cut: set[int] = set()
        for doc in c.docs:
            for s in measured_steps(doc):
                v = get(s)
                if v is not None:
                    values.setdefault(int(s["users"]), []).append(v)
                    if not s.get("complete", True):
                        cut.add(int(s["users"]))
        for users in sorted(values):
            vs = values[users]
            rows.append({"configuration": c.label, "series": series, "users": users,
                         "value": statistics.median(vs), "min": min(vs), "max": max(vs), "runs": len(vs),
                         "note": "step cut short by a stop condition" if users in cut else ""})
    return rows


@dataclass(frozen=True, slots=True)
class Saturation:
    configuration: str
    users: int | None  # the median over repeats (the lower one of two middles: a measured count)
    low: int | None
    high: int | None
    runs: int  # repeats that found one
    saturated: bool  # a stop condition fired, rather than the ramp running out of steps
    condition: str | None


def saturation(c: Configuration) -> Saturation:
    found = [(d.get("saturation") or {}) for d in c.docs]
    users = [int(s["users"]) for s in found if isinstance(s.get("users"), int)]
    conditions = [s.get("condition") for s in found if s.get("condition")]
    return Saturation(
        configuration=c.label, users=statistics.median_low(users) if users else None,
        low=min(users) if users else None, high=max(users) if users else None, runs=len(users),
        saturated=any(bool(s.get("saturated")) for s in found),
        condition=statistics.mode(conditions) if conditions else None)


def saturation_rows(configs: list[Configuration], get: Getter) -> list[Row]:
    """The saturation point of each configuration, placed on its median curve of `get`."""
    rows: list[Row] = []
    curve = {(r["configuration"], r["users"]): r["value"] for r in by_users(configs, get)}
    for c in configs:
        s = saturation(c)
        if s.users is None or (c.label, s.users) not in curve:
            continue
        spread = f" (repeats: {s.low}-{s.high})" if s.runs > 1 and s.low != s.high else ""
        why = f"stopped by {s.condition}" if s.saturated and s.condition else "no stop condition fired"
        rows.append({"configuration": c.label, "users": s.users, "value": curve[(c.label, s.users)],
                     "label": f"{s.users} users", "about": f"saturation point: {s.users} users{spread}, {why}"})
    return rows


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
    stop = doc.get("stop") or {}
    at = _num(stop.get("at_s"))
    if at is not None:
        what = stop.get("condition") or stop.get("reason") or "stop"
        stops.append({"configuration": label, "t": at, "label": f"fired: {what}"})
    return points, bounds, stops


def measured_windows(doc: dict[str, Any]) -> list[Row]:
    """Each step's measured window (what its figures and the stop conditions judged), on the
    timeline's clock."""
    rows: list[Row] = []
    for s in measured_steps(doc):
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
            for s in measured_steps(doc):
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
        s = saturation(c)
        docs = c.docs
        best = [v for d in docs for v in [max((tps(st) or 0.0 for st in measured_steps(d)), default=None)]
                if v is not None]
        statuses = sorted({str(d.get("status")) for d in docs})
        servers = sorted({str((d.get("server") or {}).get("version") or "?") for d in docs})
        if s.users is None:
            point = "none measured"
        else:
            point = f"{s.users} users" + (f" ({s.low}-{s.high} over {s.runs} repeats)" if s.runs > 1 else "")
        rows.append({
            "configuration": c.label,
            "scenario": ", ".join(sorted({str((d.get("scenario") or {}).get("name")) for d in docs})),
            "runs": len(docs),
            "saturation": point,
            "stopped_by": (s.condition or "-") if s.saturated else "no stop condition fired",
            "best_tps": f"{statistics.median(best):,.1f}" if best else "-",
            "status": ", ".join(statuses),
            "server": ", ".join(servers),
            "files": ", ".join(str(r.path) for r in c.results if r.path is not None) or "-",
        })
    return rows
