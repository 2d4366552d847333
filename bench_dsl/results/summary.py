"""Results of several runs folded into one summary (schema bench_dsl/results/schema/summary-v1.json).

A study (`vary`, `repeat`) writes it as summary.json; `bench compare` builds one from the files it
is given and compares its configurations. It reads finished result documents only, never the
engine: a summary is a function of the files. The reading is read.py's and every figure is
fold.py's (the same the report draws); this module lays them out as the summary document.

Each configuration says its load axis ("axis": "users" or "rate", fold.load_axis). A rate
configuration's saturation point is a rate, saturation.rate_tps (saturation.users beside it is the
pool that served it), and its by_users entries are one per offered rate (rate_tps). A summary holds
what it is given, both axes if need be: `bench compare` and the report are what refuse to set them
side by side.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench_dsl import __version__
from bench_dsl.engine.profiles.registry import AXES, axis_of
from bench_dsl.results.fold import FoldedConfiguration, group
from bench_dsl.results.read import ResultFile

SUMMARY_SCHEMA = "https://bench-dsl.dev/schema/summary-v1.json"
SUMMARY_FORMAT = "bench-dsl-summary"


def same_workload(a: dict[str, Any] | None, b: dict[str, Any] | None) -> bool:
    """Whether two results' workloads (their scenario's "workload") are the same workload and data.
    The digest decides what the setup is (it leaves out where in a file things were written, which
    a custom setup of older results held as Python reprs); every other field must be equal too."""
    if a and b and a.get("digest") and b.get("digest"):
        return all(a.get(k) == b.get(k) for k in {*a, *b} - {"setup"})
    return a == b


def _relative(path: Path, base: Path | None) -> str:
    if base is None:
        return str(path)
    try:
        return str(path.resolve().relative_to(base.resolve()))
    except ValueError:
        return str(path.resolve())


def summarize(results: Sequence[ResultFile | dict[str, Any]], base: str | Path | None = None) -> dict[str, Any]:
    """The summary document of results (read by read.find_results, or documents handed over in
    memory): their file paths are listed relative to `base`, the directory the summary is written to."""
    base_dir = Path(base) if base is not None else None
    confs = group(results)
    configurations = [_configuration(n, c, base_dir) for n, c in enumerate(confs)]
    seen: Counter[str] = Counter()
    for c in configurations:  # two matrices' c1, or a plain run numbered like a matrix's: ids stay unique
        seen[c["id"]] += 1
        if seen[c["id"]] > 1:
            c["id"] = f"{c['id']}-{seen[c['id']]}"
    docs = [d for c in confs for d in c.docs]
    first = confs[0].docs[0] if confs else {}
    study = next((c.conf.get("study") for c in confs if c.conf and c.conf.get("study")), None)
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


def _configuration(n: int, c: FoldedConfiguration, base: Path | None) -> dict[str, Any]:
    docs = c.docs
    conf = c.conf or {}
    sat = [d.get("saturation") or {} for d in docs]
    conditions = [s.get("condition") for s in sat]
    fired = Counter(x for x in conditions if x is not None)
    ax = AXES[c.axis]
    return {
        "id": str(conf.get("id") or f"c{n + 1}"),
        "label": c.label,
        "axis": c.axis,
        "values": dict(conf.get("values") or {}),
        "scenario": (docs[0].get("scenario") or {}).get("name") or "scenario",
        "workload": (docs[0].get("scenario") or {}).get("workload"),
        "files": [_relative(p, base) for p in c.paths],
        "repeats_planned": conf.get("repeats"),
        "repeats_completed": sum(1 for d in docs if d.get("status") == "completed"),
        "statuses": [d.get("status") for d in docs],
        "exit_codes": [d.get("exit_code") for d in docs],
        "saturation": {
            "users": c.saturation_of("users"),  # on a users axis its point; on another (a rate's), the pool
            ax.key: c.saturation_of(ax.key),
            "saturated": [s.get("saturated") for s in sat],
            # the condition that ended most repeats (None: none fired in most of them), then all of them
            "condition": Counter(conditions).most_common(1)[0][0] if conditions else None,
            "conditions": conditions,
            "conditions_fired": dict(fired),
            "verdicts": [_last_verdicts(d) for d in docs],
            # what ran out at the step that ended each repeat's climb (its class, confidence, words),
            # and the class most repeats name (None: none saturated, or none said)
            "bottlenecks": c.bottlenecks,
            "bottleneck": (c.bottleneck or {}).get("class"),
        },
        "by_users": c.by_users,
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


def _last_verdicts(doc: dict[str, Any]) -> dict[str, Any] | None:
    """Where a repeat's climb ended: its last step, and every stop condition there with its value (a
    sustained one at the worst its window reached), limit, unit and whether it fired."""
    if not (steps := doc.get("steps")):
        return None
    last, keep = steps[-1], ("condition", "value", "limit", "unit", "fired", "window_s")
    key = axis_of(doc).key
    return {"step": last.get("step"), "users": last.get("users"), **({key: last.get(key)} if key in last else {}),
            "conditions": [{k: v.get(k) for k in keep} for v in last.get("conditions") or []]}
