"""The one fold of results into configurations and of repeats into a configuration's figures:
summary.json (summary.py), `bench compare` (comparison.py, from the summary) and the report (report/)
all read their numbers here, so the three cannot disagree.

    group(results) -> [FoldedConfiguration]     repeats together, in the order first seen, labelled apart
    load_axis(doc) -> "users" | "rate"    what a result's load is measured in (AXES: its words)
    one_axis(configs)                     the one axis of results read together, or a UsageError
    FoldedConfiguration.by_users                one entry per point of its axis: each figure folded over repeats
    FoldedConfiguration.saturation              the saturation point folded over repeats, on its axis

The load axis: a closed-loop result (`users`, `ramp`) measured users counts, an open-loop one
(`rate`) offered rates with a pool of users serving them. Its steps, its saturation point and every
reader's x axis are users counts for the one and offered rates in transactions per second for the
other: load_axis decides which from the result itself, and every reader (summary, compare, report)
asks it, here. A rate result's by_users entries are one per offered rate ("rate_tps", the step's
rate asked), "users" being the pool that served it; the list keeps its name, which summary.json's
readers know. Results of the two axes answer different questions (how many users the server
carries, what rate it holds) and are never set side by side: one_axis refuses them.

Which steps count: a step's figures count at its users count (its rate) when the step is complete. A
step cut short (the run stopped during it, or it stalled) measured part of a hold, and its figures
set beside complete ones would compare unlike with like; a run that has no complete step and was
stopped in its first one counts its summary as one step (measured_steps).

Every figure is the median over the repeats, with the min, max and spread, and its noise (noise_pct:
see _with_noise). The saturation point too is the median of the repeats' saturation users (or
rates): it is the figure compare judges a difference of, by the same rule and noise as every other
figure, and the middle of the repeats is what they most support. With an odd number of repeats it is
one of the measured counts; with an even number it is the midpoint of the two middle ones (32 and 64
give 48): taking the lower one instead would report every study of 2 or 4 repeats systematically
low, and a configuration whose repeats disagree that much is said to (the range and noise go with
it). The report marks it on the median curve, between the two steps when it falls between them.
"""

from __future__ import annotations

import functools
import json
import statistics
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench_dsl.core.errors import UsageError
from bench_dsl.engine.judge import CUT_SHORT
from bench_dsl.engine.profiles.registry import AXES, DEFAULT_AXIS, axis_of
from bench_dsl.language.metric_decls import Measures, MetricDecl
from bench_dsl.results.read import ResultFile
from bench_dsl.workloads import registry

# An interval much shorter than the others (the tail of a step cut by its end) has a rate measured
# over too little time to be compared with the others: left out of the interval spread.
SHORT_INTERVAL = 0.5
# From this many repeats on, their spread alone is a figure's noise. Two are too few: the range of
# two runs is narrow by chance too often (identical configurations would be called different up to
# 1 time in 5), so with two the report intervals' spread, when larger, is taken instead.
REPEATS_FOR_NOISE = 3


Axis = str  # a load axis' name (bench_dsl.engine.profiles.registry.AXES)


def load_axis(doc: dict[str, Any]) -> Axis:
    """The name of the load axis a result is on (bench_dsl.engine.profiles.registry.axis_of)."""
    return axis_of(doc).name


def one_axis(labelled: Iterable[tuple[str, str]]) -> Axis:
    """The one axis of configurations read together, given as (label, axis); a UsageError naming
    them when some are closed-loop and some open-loop: their figures answer different questions."""
    pairs = list(labelled)
    axes = {a for _, a in pairs}
    if len(axes) <= 1:
        return next(iter(axes), DEFAULT_AXIS.name)
    named = [AXES[a] for a in AXES if a in axes]
    lines = [f"  {label}: {AXES[a].loop}" for label, a in pairs]
    raise UsageError(f"these results answer different questions: their loads are measured in "
                     f"{' and in '.join(ax.unit for ax in named)}, which do not convert: their figures do not "
                     "compare\n" + "\n".join(lines)
                     + "\n  hint: compare or report the results of each load apart "
                     f"({', '.join(a.name for a in named)})")


def at(row: dict[str, Any], axis: Axis) -> float | None:
    """Where on the axis a step row (or a summary counted as one) was measured: its users count, or
    the rate its step asked (a summary without one, a linear rate's: the rate it offered)."""
    return AXES[axis].at(row)


def summarized(*measures: Measures) -> list[MetricDecl]:
    """The figures summary.json folds by users count (bench_dsl/language/metric_decls.py: MetricDecl.summarized),
    in the order of `measures`."""
    return [d for kind in measures for d in registry.METRICS.measuring(kind) if d.summarized]


def _names(measures: Measures) -> set[str]:
    return {d.figure_name for d in summarized(measures)}


@dataclass(eq=False)
class FoldedConfiguration:
    """The runs of one configuration: a study's repeats of it, or one plain result file."""

    key: tuple[Any, ...]
    label: str
    results: list[ResultFile] = field(default_factory=list)

    @property
    def docs(self) -> list[dict[str, Any]]:
        return [r.doc for r in self.results]

    @property
    def paths(self) -> list[Path]:
        return [r.path for r in self.results if r.path is not None]

    @property
    def conf(self) -> dict[str, Any] | None:
        c = self.results[0].doc.get("configuration")
        return c if isinstance(c, dict) else None

    @functools.cached_property
    def axis(self) -> Axis:
        """Its results' load axis (one_axis: repeats of one configuration ran one scenario)."""
        return one_axis((self.label or str(r.path or "result"), load_axis(r.doc)) for r in self.results)

    @functools.cached_property
    def by_users(self) -> list[dict[str, Any]]:
        return by_users(self.docs, self.axis)

    @functools.cached_property
    def saturation(self) -> dict[str, Any] | None:
        """stat() of the repeats' saturation point on its axis, users or rate_tps (None: no repeat
        had one), with its noise."""
        return self.saturation_of(AXES[self.axis].key)

    @functools.cached_property
    def bottlenecks(self) -> list[dict[str, Any] | None]:
        """What ran out where each repeat's climb ended (its saturation.bottleneck): class,
        confidence, words; None for a repeat that did not saturate or did not say."""
        out: list[dict[str, Any] | None] = []
        for d in self.docs:
            b = (d.get("saturation") or {}).get("bottleneck")
            ok = isinstance(b, dict) and isinstance(b.get("class"), str)
            out.append({k: b.get(k) for k in ("class", "confidence", "words")} if ok else None)  # type: ignore[union-attr]
        return out

    @property
    def bottleneck(self) -> dict[str, Any] | None:
        """The first repeat's bottleneck of the class most repeats name (None: none said)."""
        said = [b for b in self.bottlenecks if b is not None]
        if not said:
            return None
        cls = Counter(b["class"] for b in said).most_common(1)[0][0]
        return next(b for b in said if b["class"] == cls)

    def saturation_of(self, key: str) -> dict[str, Any] | None:
        """stat() of the repeats' saturation.`key` (users, rate_tps), with its noise."""
        return _with_noise(stat([(d.get("saturation") or {}).get(key) for d in self.docs]), [])


def configuration_key(doc: dict[str, Any], path: Path | None) -> tuple[Any, ...] | None:
    """What makes runs repeats of one configuration (None: a plain run, a configuration of its own):
    the same study (its directory, its name and the id of the `bench run` that made it) and the same
    values. An id alone is not enough: two studies written into one directory both have a c1."""
    conf = doc.get("configuration")
    if not isinstance(conf, dict) or conf.get("id") is None:
        return None
    root = str(path.parent.parent) if path is not None else None  # two copies of a study are two
    values = json.dumps(conf.get("values") or {}, sort_keys=True, default=str)
    return (root, conf.get("study"), conf.get("study_id"), str(conf["id"]), values)


def group(results: Sequence[ResultFile | dict[str, Any]]) -> list[FoldedConfiguration]:
    """Configurations in the order their first result comes (a directory's natural order: c2 before
    c10), each one's repeats in repeat order, labelled apart (_labels)."""
    out: dict[tuple[Any, ...], FoldedConfiguration] = {}
    for i, r in enumerate(results):
        r = r if isinstance(r, ResultFile) else ResultFile(r)
        found = configuration_key(r.doc, r.path)
        key = ("file", i) if found is None else ("configuration", *found)
        out.setdefault(key, FoldedConfiguration(key, "")).results.append(r)
    confs = list(out.values())
    for c in confs:
        if c.conf is not None:
            c.results.sort(key=lambda r: (r.doc.get("configuration") or {}).get("repeat") or 0)
    _labels(confs)
    return confs


def _labels(confs: list[FoldedConfiguration]) -> None:
    """A label that tells the configurations apart (the charts' legend, the comparison's columns):
    the configuration's own, else the scenario's name. Where those clash: every plain run by its file
    name, a configuration by its label and its study's directory; then a plain run by its directory
    and file name; then by the whole path; then numbered."""
    def clash() -> set[str]:
        seen = Counter(c.label for c in confs)
        return {k for k, n in seen.items() if n > 1}

    def own(c: FoldedConfiguration) -> str | None:
        return None if c.conf is None else str(c.conf.get("label") or c.conf.get("id"))

    for c in confs:
        c.label = own(c) or str((c.docs[0].get("scenario") or {}).get("name") or "scenario")
    if not (dup := clash()):
        return
    for c in confs:
        if c.label in dup and c.paths and own(c) is not None:
            c.label = f"{c.label} ({c.paths[0].parent.parent.name})"  # two studies' runs
        elif own(c) is None and c.paths:
            c.label = c.paths[0].name  # plain runs: all by file name, not half by scenario name
    for rename in (lambda c, p: f"{p.parent.name}/{p.name}" if own(c) is None else None,
                   lambda c, p: str(p) if own(c) is None else f"{own(c)} ({p.parent.parent})"):
        dup = clash()  # once per rule: relabelling one of a pair must not leave the other as it was
        for c in confs:
            if c.label in dup and c.paths and (new := rename(c, c.paths[0])) is not None:
                c.label = new
    dup = clash()
    for n, c in enumerate(confs):  # no paths to tell them apart: number them
        if c.label in dup:
            c.label = f"{c.label} #{n + 1}"


def stat(values: Sequence[float | None]) -> dict[str, Any] | None:
    """{median, min, max, spread_pct, n, per_repeat}; spread_pct = (max - min) / median * 100, the
    whole range of the repeats as a share of the middle: null with fewer than two values (one value
    has no spread). Descriptive only: the noise compare judges by is a ratio (_with_noise)."""
    have = [float(v) for v in values if v is not None]
    if not have:
        return None
    med = statistics.median(have)
    lo, hi = min(have), max(have)
    spread = None if len(have) < 2 else (0.0 if hi == lo else (None if med == 0 else (hi - lo) / abs(med) * 100))
    return {"median": _r(med), "min": _r(lo), "max": _r(hi), "spread_pct": _r(spread), "n": len(have),
            "per_repeat": [None if v is None else _r(float(v)) for v in values]}


def _r(v: float | None, digits: int = 3) -> float | None:
    return None if v is None else round(v, digits)


def figure(row: dict[str, Any], name: str, cpu_count: int | None = None) -> float | None:
    """A figure of a step, interval or summary row by its summary name."""
    if (d := registry.METRICS.figure(name)) is not None and d.measures == "cost":  # CPU per tx: of a source
        return cpu_us_per_tx(row, cpu_count, d.path[-1])
    if name in _names("latency"):
        return (row.get("latency_ms") or {}).get(name)
    if name == "error_rate_pct":
        errors, count = row.get("errors") or 0, row.get("count") or 0
        return None if errors + count == 0 else errors / (errors + count) * 100
    v = row.get(name)
    return v if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def cpu_us_per_tx(row: dict[str, Any], cpu_count: int | None, source: str) -> float | None:
    """Microseconds of CPU per transaction: the result's cpu figures are percent of the whole machine
    (bench_dsl/measure/cpu.py divides by the number of logical CPUs), so cpu% / 100 * cpu_count is the
    number of cores busy, and cores busy * 1e6 / tps the CPU microseconds each transaction cost."""
    pct = (row.get("cpu") or {}).get(source)
    tps = row.get("tps")
    if pct is None or not tps or not cpu_count:
        return None
    return pct / 100 * cpu_count * 1e6 / tps


def ratio_pct(values: Sequence[float]) -> float | None:
    """How far above the smallest value the largest is, in percent: (max / min - 1) * 100. A ratio,
    not a difference, so that a figure that halves and one that doubles are as far apart; null
    with fewer than two values or a value of 0 or less (no ratio to speak of)."""
    if len(values) < 2 or min(values) <= 0:
        return None
    return (max(values) / min(values) - 1) * 100


def interval_noise(doc: dict[str, Any], step: int | None, name: str) -> float | None:
    """ratio_pct of a figure over the measured report intervals of one step: how much it moves
    within a run, the only noise a single run can show."""
    rows = [i for i in doc.get("intervals") or [] if i.get("measured") and i.get("step") == step]
    if rows:
        typical = statistics.median(i.get("seconds") or 0 for i in rows)
        rows = [i for i in rows if (i.get("seconds") or 0) >= SHORT_INTERVAL * typical]
    cpus = (doc.get("machine") or {}).get("cpu_count")
    return ratio_pct([v for v in (figure(i, name, cpus) for i in rows) if v is not None])


def measured_steps(doc: dict[str, Any]) -> list[tuple[int | None, dict[str, Any]]]:
    """(step number, row) for each load (users count, rate) a run measured: its complete steps; a run without
    steps (a linear ramp, or one stopped in its first step) its summary, as one step; a run whose
    steps were left out for another reason (they stalled) nothing."""
    rows = doc.get("steps") or []
    steps = [s for s in rows if s.get("complete", True)]
    if steps:
        return [(s.get("step"), s) for s in steps]
    if any(s.get("incomplete_reason", CUT_SHORT) != CUT_SHORT for s in rows):
        return []
    summary = doc.get("summary")
    if summary and summary.get("users") is not None and summary.get("seconds"):
        return [(None, summary)]
    return []


def _throughput(doc: dict[str, Any], step_no: int | None, row: dict[str, Any], name: str) -> float | None:
    # a step has it; a run measured from its summary may have it in its workload's report (TPC-C's new orders a minute)
    if (v := figure(row, name)) is None and step_no is None:
        return (doc.get("workload_report") or {}).get(name)
    return v


Hit = tuple[int | None, dict[str, Any]] | None


def by_users(docs: list[dict[str, Any]], axis: Axis = "users") -> list[dict[str, Any]]:
    """One entry per point of the axis any repeat measured, in increasing order: per users count,
    or per offered rate (rate_tps first, then users: the most of the pool's any repeat had there)."""
    per_doc: list[dict[float, tuple[int | None, dict[str, Any]]]] = []
    for d in docs:
        seen: dict[float, tuple[int | None, dict[str, Any]]] = {}
        for step_no, row in measured_steps(d):
            x = AXES[axis].asked_of(d) if step_no is None and axis in AXES else None
            if x is not None or (x := at(row, axis)) is not None:
                seen.setdefault(x, (step_no, row))  # a users count (a rate) stepped twice: its first
        per_doc.append(seen)
    out = []
    for u in sorted({u for seen in per_doc for u in seen}):
        hits: list[tuple[dict[str, Any], Hit]] = [(d, seen.get(u)) for d, seen in zip(docs, per_doc)]

        def of(get: Any, hits: list[tuple[dict[str, Any], Hit]] = hits) -> dict[str, Any] | None:
            return stat([None if h is None else get(h[1]) for _, h in hits])

        # the point under its axis' key; on an axis other than users (a rate's), the pool's users beside it
        point: dict[str, Any] = {AXES[axis].key: u}
        point.setdefault("users", max(int(h[1]["users"]) for _, h in hits if h is not None))
        entry: dict[str, Any] = {
            **point,
            "repeats_measured": sum(1 for _, h in hits if h is not None),
            "seconds": of(lambda row: row.get("seconds")),
        }
        # every declared figure at its path (tps, latency_ms.p95, cpu_us_per_tx.server ...)
        for decl in summarized("throughput", "latency", "share", "gauge", "time", "cost"):
            *where, last = decl.path
            node = entry
            for key in where:
                node = node.setdefault(key, {})
            name = decl.figure_name
            node[last] = _noisy(hits, name) if decl.noise else of(lambda row, name=name: figure(row, name))
        entry["errors"] = of(lambda row: row.get("errors"))
        entry["cpu_pct"] = {src: of(lambda row, src=src: (row.get("cpu") or {}).get(src))
                            for src in ("server", "host", "client")}
        out.append(entry)
    return out


def _noisy(hits: list[tuple[dict[str, Any], Hit]], name: str) -> dict[str, Any] | None:
    """stat() of a figure over the repeats, with its noise (_with_noise)."""
    values: list[float | None] = []
    spreads: list[float] = []
    for d, hit in hits:
        if hit is None:
            values.append(None)
            continue
        step_no, row = hit
        cpus = (d.get("machine") or {}).get("cpu_count")
        values.append(_throughput(d, step_no, row, name) if name in _names("throughput") else
                      figure(row, name, cpus))
        if step_no is not None:  # a summary's intervals span every users count: no noise of one
            spread = interval_noise(d, step_no, name)
            if spread is not None:
                spreads.append(spread)
    return _with_noise(stat(values), spreads)


def _with_noise(s: dict[str, Any] | None, spreads: list[float]) -> dict[str, Any] | None:
    """Adds the noise of a figure, each as a ratio in percent (ratio_pct): repeats_noise_pct (the
    largest repeat over the smallest), interval_noise_pct (the largest report interval of the step
    over the smallest, in the noisiest repeat: from two or three intervals a run's own spread is a
    rough guess, and the noisier run is the one that has seen what the machine can do), and
    noise_pct, which compare judges differences against; noise_from says which of the two."""
    if s is None:
        return None
    between = ratio_pct([v for v in s["per_repeat"] if v is not None])
    within = _r(max(spreads)) if spreads else None
    s["repeats_noise_pct"] = _r(between)
    s["interval_noise_pct"] = within
    if between is not None and s["n"] >= REPEATS_FOR_NOISE:
        # the repeats measure what varies between runs directly; the intervals overstate it (a
        # step's figure averages its intervals), so once there are enough repeats they decide
        s["noise_pct"], s["noise_from"] = s["repeats_noise_pct"], "repeats"
        return s
    candidates = [(v, src) for v, src in ((s["repeats_noise_pct"], "repeats"), (within, "intervals")) if v is not None]
    if candidates:
        s["noise_pct"], s["noise_from"] = max(candidates, key=lambda c: c[0])
    else:
        s["noise_pct"], s["noise_from"] = None, None
    return s
