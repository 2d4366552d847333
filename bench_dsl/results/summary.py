"""Results of several runs folded into one summary (schema bench_dsl/results/schema/summary-v1.json).

The matrix runner (`vary`, `repeat`) writes it as summary.json; `bench compare` reads it. It reads
finished result documents only, never the engine: a summary is a function of the files.

Configurations: a result with a `configuration` field belongs to that configuration (its id, in
the matrix its results came from); a plain result is a configuration of its own. Every figure of a
configuration is the median over its repeats with the min, max and spread, and its noise: how far
apart the repeats are, and the figure's report intervals within each step (all a single run shows).
"""

from __future__ import annotations

import json
import re
import statistics
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from bench_dsl import __version__
from bench_dsl.core.errors import UsageError
from bench_dsl.engine.judge import CUT_SHORT

SUMMARY_SCHEMA = "https://bench-dsl.dev/schema/summary-v1.json"
RESULT_FORMAT = "bench-dsl-result"
SUMMARY_FORMAT = "bench-dsl-summary"

# figure -> where a step (or interval, or summary) keeps it; the latencies are of all transactions
THROUGHPUT = ("tps", "tpm", "nopm")
LATENCIES = ("p50", "p90", "p95", "p99")
# An interval much shorter than the others (the tail of a step cut by its end) has a rate measured
# over too little time to be compared with the others: left out of the interval spread.
SHORT_INTERVAL = 0.5
# From this many repeats on, their spread alone is a figure's noise. Two are too few: the range of
# two runs is narrow by chance too often (identical configurations would be called different up to
# 1 time in 5), so with two the report intervals' spread, when larger, is taken instead.
REPEATS_FOR_NOISE = 3


def same_workload(a: dict[str, Any] | None, b: dict[str, Any] | None) -> bool:
    """Whether two results' workloads (their scenario's "workload") are the same workload and data.
    The digest decides what the setup is (it leaves out where in a file things were written, which
    a custom setup of older results held as Python reprs); every other field must be equal too."""
    if a and b and a.get("digest") and b.get("digest"):
        return all(a.get(k) == b.get(k) for k in {*a, *b} - {"setup"})
    return a == b


def _natural(path: Path) -> list[Any]:
    # c2-... before c10-..., repeat-2 before repeat-10: the runner's order, which is first-seen order
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", str(path))]


def _is_result(doc: Any) -> bool:
    return isinstance(doc, dict) and doc.get("format") == RESULT_FORMAT


def read_result(path: Path) -> dict[str, Any]:
    """One result document; a UsageError that says what is wrong with the file otherwise."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UsageError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise UsageError(f"{path}: is a directory") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: cannot be read: {getattr(exc, 'strerror', None) or exc}") from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"{path}: not JSON (line {exc.lineno}: {exc.msg}): not a bench-dsl result") from None
    if not _is_result(doc):
        what = doc.get("format") if isinstance(doc, dict) else None
        raise UsageError(f"{path}: not a bench-dsl result" + (f" (its format is {what!r})" if what else "")
                         + ": give the result JSON files of `bench run`, or a directory that holds them")
    return _version_checked(path, doc)


def _version_checked(path: Path, doc: dict[str, Any]) -> dict[str, Any]:
    if doc.get("format_version") != 1:
        raise UsageError(f"{path}: result format version {doc.get('format_version')!r}; this bench-dsl reads version 1")
    return doc


def results_in(paths: Iterable[str | Path]) -> list[tuple[Path, dict[str, Any]]]:
    """The result files among `paths` and their documents, each read once: a file is taken as given
    (and must be a result); a directory is searched recursively for result documents, anything else
    in it (summary.json, other JSON) is skipped."""
    found: list[tuple[Path, dict[str, Any]]] = []
    for given in paths:
        p = Path(given)
        if p.is_dir():
            inside = [(f, doc) for f in sorted(p.rglob("*.json"), key=_natural)
                      if f.is_file() and (doc := _result_or_none(f)) is not None]
            if not inside:
                raise UsageError(f"{p}: no bench-dsl result files in this directory")
            found += inside
        else:
            found.append((p, read_result(p)))  # a named file that is not a result is a mistake worth saying
    unique = []
    seen: set[Path] = set()
    for f, doc in found:  # a file named twice (or inside a directory also named) is one run, counted once
        if f.resolve() not in seen:
            seen.add(f.resolve())
            unique.append((f, doc))
    return unique


def find_results(paths: Iterable[str | Path]) -> list[Path]:
    """The result files among `paths` (see results_in)."""
    return [f for f, _ in results_in(paths)]


def _result_or_none(path: Path) -> dict[str, Any] | None:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None  # in a directory, what is not a readable result is not ours to judge
    return _version_checked(path, doc) if _is_result(doc) else None


def is_result_file(path: Path) -> bool:
    """Whether a file is a result document (of this format version or another)."""
    try:
        return _result_or_none(path) is not None
    except UsageError:  # another format version: a result all the same
        return True


def load_results(paths: Iterable[str | Path]) -> list[dict[str, Any]]:
    """The result documents of files and directories (see results_in), in first-seen order."""
    return [doc for _, doc in results_in(paths)]


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


def _figure(row: dict[str, Any], name: str, cpu_count: int | None = None) -> float | None:
    """A figure of a step, interval or summary row by its summary name."""
    if name.startswith("cpu_us_per_tx:"):
        return cpu_us_per_tx(row, cpu_count, name.partition(":")[2])
    if name in LATENCIES:
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
    return ratio_pct([v for v in (_figure(i, name, cpus) for i in rows) if v is not None])


def measured_steps(doc: dict[str, Any]) -> list[tuple[int | None, dict[str, Any]]]:
    """(step number, row) for each users count a run measured: its complete steps; a run without
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


def _nopm(doc: dict[str, Any], step_no: int | None, row: dict[str, Any]) -> float | None:
    # TPC-C: each step has nopm; a run measured from its summary has it in the workload's report
    if row.get("nopm") is not None:
        return float(row["nopm"])
    if step_no is None:
        return (doc.get("workload_report") or {}).get("nopm")
    return None


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


def _group_key(doc: dict[str, Any], path: Path | None, index: int) -> tuple[Any, ...]:
    key = configuration_key(doc, path)
    return ("file", index) if key is None else ("configuration", *key)


def _labels(groups: list[dict[str, Any]]) -> None:
    """A label that tells the configurations apart: the configuration's own, else the scenario's
    name. Where those clash: every plain run by its file name, a configuration by its label and its
    matrix directory; then by path; then numbered."""
    def clash(key: str) -> set[str]:
        seen = Counter(g[key] for g in groups)
        return {k for k, n in seen.items() if n > 1}

    for g in groups:
        g["label"] = g["own_label"] or g["scenario"]
    if not (dup := clash("label")):
        return
    for g in groups:
        if g["label"] in dup and g["paths"] and g["own_label"] is not None:
            g["label"] = f"{g['label']} ({g['paths'][0].parent.parent.name})"  # two matrices' runs
        elif g["own_label"] is None and g["paths"]:
            g["label"] = g["paths"][0].name  # plain runs: all by file name, not half by scenario name
    dup = clash("label")  # once: relabelling one of a pair must not leave the other as it was
    for g in groups:
        if g["label"] in dup and g["paths"]:
            where = g["paths"][0].parent.parent if g["own_label"] is not None else g["paths"][0]
            g["label"] = f"{g['own_label']} ({where})" if g["own_label"] is not None else str(where)
    dup = clash("label")
    for n, g in enumerate(groups):  # no paths to tell them apart: number them
        if g["label"] in dup:
            g["label"] = f"{g['label']} #{n + 1}"


def _relative(path: Path, base: Path | None) -> str:
    if base is None:
        return str(path)
    try:
        return str(path.resolve().relative_to(base.resolve()))
    except ValueError:
        return str(path.resolve())


def summarize(docs: Sequence[dict[str, Any]], files: Sequence[str | Path] | None = None,
              base: str | Path | None = None) -> dict[str, Any]:
    """The summary document of result documents `docs` (read from `files`, when given: their paths
    are listed relative to `base`, the directory the summary is written to)."""
    paths = [Path(f) for f in files] if files is not None else None
    if paths is not None and len(paths) != len(docs):
        raise ValueError("one file per document")
    base_dir = Path(base) if base is not None else None
    groups: dict[tuple[Any, ...], dict[str, Any]] = {}
    for i, doc in enumerate(docs):
        path = paths[i] if paths is not None else None
        key = _group_key(doc, path, i)
        conf = doc.get("configuration") if isinstance(doc.get("configuration"), dict) else None
        g = groups.setdefault(key, {"conf": conf, "own_label": (conf or {}).get("label"),
                                    "scenario": (doc.get("scenario") or {}).get("name") or "scenario",
                                    "docs": [], "paths": []})
        g["docs"].append(doc)
        if path is not None:
            g["paths"].append(path)
    ordered = list(groups.values())
    for g in ordered:  # the repeats in their order, whatever order the files came in
        if g["conf"] is not None:
            pairs = sorted(zip(g["docs"], g["paths"] or [None] * len(g["docs"])),
                           key=lambda dp: (dp[0].get("configuration") or {}).get("repeat") or 0)
            g["docs"] = [d for d, _ in pairs]
            g["paths"] = [p for _, p in pairs if p is not None]
    _labels(ordered)
    configurations = [_configuration(n, g, base_dir) for n, g in enumerate(ordered)]
    seen: Counter[str] = Counter()
    for c in configurations:  # two matrices' c1, or a plain run numbered like a matrix's: ids stay unique
        seen[c["id"]] += 1
        if seen[c["id"]] > 1:
            c["id"] = f"{c['id']}-{seen[c['id']]}"
    first = docs[0] if docs else {}
    study = next((g["conf"].get("study") for g in ordered if g["conf"] and g["conf"].get("study")), None)
    return {
        "$schema": SUMMARY_SCHEMA, "format": SUMMARY_FORMAT, "format_version": 1,
        "tool": {"name": "bench-dsl", "version": __version__},
        "study": study,
        "scenario": (first.get("scenario") or {}).get("name"),
        "workload": (first.get("scenario") or {}).get("workload"),
        "same_workload": all(same_workload((d.get("scenario") or {}).get("workload"),
                                           (first.get("scenario") or {}).get("workload")) for d in docs),
        "configurations": configurations,
    }


def _configuration(n: int, g: dict[str, Any], base: Path | None) -> dict[str, Any]:
    docs: list[dict[str, Any]] = g["docs"]
    conf = g["conf"] or {}
    sat = [d.get("saturation") or {} for d in docs]
    conditions = [s.get("condition") for s in sat]
    fired = Counter(c for c in conditions if c is not None)
    return {
        "id": str(conf.get("id") or f"c{n + 1}"),
        "label": g["label"],
        "values": dict(conf.get("values") or {}),
        "scenario": g["scenario"],
        "workload": (docs[0].get("scenario") or {}).get("workload"),
        "files": [_relative(p, base) for p in g["paths"]],
        "repeats_planned": conf.get("repeats"),
        "repeats_completed": sum(1 for d in docs if d.get("status") == "completed"),
        "statuses": [d.get("status") for d in docs],
        "exit_codes": [d.get("exit_code") for d in docs],
        "saturation": {
            "users": _with_noise(stat([s.get("users") for s in sat]), []),
            "saturated": [s.get("saturated") for s in sat],
            # the condition that ended most repeats (None: none fired in most of them), then all of them
            "condition": Counter(conditions).most_common(1)[0][0] if conditions else None,
            "conditions": conditions,
            "conditions_fired": dict(fired),
            "verdicts": [_last_verdicts(d) for d in docs],
        },
        "by_users": _by_users(docs),
        "settings_not_applied": _not_applied(docs),
    }


def _not_applied(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The settings the server did not take (result server.settings[].applied false), once per
    name, with the repeats that met it: such a configuration did not measure what its label says."""
    found: dict[str, dict[str, Any]] = {}
    for k, d in enumerate(docs, 1):
        for a in (d.get("server") or {}).get("settings") or []:
            if isinstance(a, dict) and a.get("applied") is False:
                entry = found.setdefault(str(a.get("name")), {
                    "name": str(a.get("name")), "requested": a.get("requested"), "after": a.get("after"),
                    "note": a.get("note"), "repeats": []})
                entry["repeats"].append(k)
    return list(found.values())


def _by_users(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One entry per users count any repeat measured, in increasing users."""
    per_doc: list[dict[int, tuple[int | None, dict[str, Any]]]] = []
    for d in docs:
        seen: dict[int, tuple[int | None, dict[str, Any]]] = {}
        for step_no, row in measured_steps(d):
            seen.setdefault(int(row["users"]), (step_no, row))  # a users count stepped twice: its first
        per_doc.append(seen)
    all_users = sorted({u for seen in per_doc for u in seen})
    out = []
    for u in all_users:
        hits = [(d, seen.get(u)) for d, seen in zip(docs, per_doc)]

        def figures(name: str, hits: list[tuple[dict[str, Any], tuple[int | None, dict[str, Any]] | None]] = hits
                    ) -> dict[str, Any] | None:
            values: list[float | None] = []
            spreads: list[float] = []
            for d, hit in hits:
                if hit is None:
                    values.append(None)
                    continue
                step_no, row = hit
                cpus = (d.get("machine") or {}).get("cpu_count")
                values.append(_nopm(d, step_no, row) if name == "nopm" else _figure(row, name, cpus))
                if step_no is not None:  # a summary's intervals span every users count: no noise of one
                    spread = interval_noise(d, step_no, name)
                    if spread is not None:
                        spreads.append(spread)
            return _with_noise(stat(values), spreads)

        entry: dict[str, Any] = {
            "users": u,
            "repeats_measured": sum(1 for _, h in hits if h is not None),
            "seconds": stat([None if h is None else h[1].get("seconds") for _, h in hits]),
        }
        for name in (*THROUGHPUT, "qps"):
            entry[name] = figures(name)
        entry["latency_ms"] = {name: figures(name) for name in LATENCIES}
        entry["errors"] = stat([None if h is None else h[1].get("errors") for _, h in hits])
        entry["error_rate_pct"] = stat([None if h is None else _figure(h[1], "error_rate_pct") for _, h in hits])
        entry["cpu_pct"] = {src: stat([None if h is None else (h[1].get("cpu") or {}).get(src) for _, h in hits])
                            for src in ("server", "host", "client")}
        entry["cpu_us_per_tx"] = {src: figures(f"cpu_us_per_tx:{src}") for src in ("server", "client")}
        out.append(entry)
    return out


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


def _last_verdicts(doc: dict[str, Any]) -> dict[str, Any] | None:
    """Where a repeat's climb ended: its last step, and every stop condition there with its value (a
    sustained one at the worst its window reached), limit, unit and whether it fired."""
    if not (steps := doc.get("steps")):
        return None
    last, keep = steps[-1], ("condition", "value", "limit", "unit", "fired", "window_s")
    return {"step": last.get("step"), "users": last.get("users"),
            "conditions": [{k: v.get(k) for k in keep} for v in last.get("conditions") or []]}
