"""`bench compare`: configurations side by side against the first (the baseline), from a summary
(bench_dsl/results/summary.py). The comparison is one table, as data; the console, JSON and Markdown
renderings all draw that same table, so they never disagree.

The noise rule (docs/compare.md): each figure of a configuration carries noise_pct, max / min - 1
over its repeats and, with fewer than 3, over the report intervals of the step when larger (what
a single run can see). A difference to the baseline is beyond the noise when the larger median is
more above the smaller (larger / smaller - 1) than the two configurations' noises added; with no
noise known, not judged (null). Ratios, not differences: a figure that halves is as far from its
baseline as one that doubles, and a noisy figure's noise is not capped at -100 % as a drop is.

The load axis (bench_dsl/results/fold.py: load_axis): closed-loop configurations are compared at
each users count all of them measured, and their saturation points in users; open-loop ones (a
`rate` scenario) at each offered rate, "@ 4000 tps", and their saturation points in tps. The table
says which ("axis"); its rows and the gates' checks name their point by the axis' key, "users" or
"rate_tps". Configurations of both axes are refused (fold.one_axis), --force or not: a users count
and a rate answer different questions.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from bench_dsl.attribution.registry import title
from bench_dsl.core.axis import LoadAxis
from bench_dsl.core.axis import number as axis_number
from bench_dsl.core.errors import UsageError
from bench_dsl.engine.profiles.registry import AXES, DEFAULT_AXIS
from bench_dsl.results.fold import one_axis
from bench_dsl.results.summary import same_workload
from bench_dsl.workloads import registry

COMPARISON_FORMAT = "bench-dsl-comparison"
NOISE_RULE = ("a difference is beyond the noise when the larger of the two medians is more above the smaller "
              "(larger / smaller - 1) than the two configurations' noises added; a configuration's noise is "
              "its repeats' max / min - 1 (3 repeats or more), else the larger of that and the largest over its "
              "repeats of the step's report intervals' max / min - 1 (the only noise one run can show)")

GATE_RE = re.compile(r"^\s*([a-z0-9]+)\s*([<>])\s*([+-])\s*(\d+(?:\.\d+)?)\s*%\s*$")


def gate_hint() -> str:
    # the metrics compare shows and gates are those declared so (bench_dsl/language/metric_decls.py:
    # MetricDecl.compared, .gated), in the table's order (Table.shown)
    return ('write METRIC (<|>) (+|-)N%, e.g. --fail-if "tps < -5%" (fail when throughput drops by more than 5%) '
            f'or --fail-if "p95 > +10%"; metrics: {", ".join(registry.METRICS.shown("gated"))}')


@dataclass(frozen=True, slots=True)
class Gate:
    """--fail-if: fails when a configuration's difference to the baseline is beyond `pct` in `op`."""

    text: str
    metric: str
    op: str  # "<" or ">"
    pct: float  # signed

    def fails(self, diff_pct: float) -> bool:
        return diff_pct < self.pct if self.op == "<" else diff_pct > self.pct


def parse_gate(text: str) -> Gate:
    m = GATE_RE.match(text.lower())
    if m is None:
        raise UsageError(f"--fail-if {text!r}: not understood\n  hint: {gate_hint()}")
    metric, op, sign, number = m.groups()
    if metric not in registry.METRICS.shown("gated"):
        raise UsageError(f"--fail-if {text!r}: no metric {metric!r}\n  hint: {gate_hint()}")
    pct = float(number) * (-1 if sign == "-" else 1)
    gate = Gate(text=f"{metric} {op} {sign}{number}%", metric=metric, op=op, pct=pct)
    # every figure gated is a rate, a latency or a users count, never below 0: none falls by more
    # than 100 %, so a gate past that limit could never fail (nor one that waits for a fall below -100 %)
    if pct < -100 or (op == "<" and pct == -100):
        raise UsageError(f"--fail-if {text!r}: {metric} cannot fall by more than 100% (to 0), so this gate "
                         f"could never fail\n  hint: a limit from -100% up, e.g. --fail-if \"{metric} {op} -5%\"")
    if gate.fails(0.0):  # a sign or an operator the wrong way round
        flipped = ">" if op == "<" else "<"
        meant = f"{metric} {flipped} {sign}{number}%" if pct > -100 else f"{metric} < -5%"  # not `< -100%`, refused
        raise UsageError(f"--fail-if {text!r}: it fails two identical results (a difference of 0% is {op} "
                         f"{sign}{number}%)\n  hint: did you mean --fail-if \"{meant}\"? "
                         "< fails on a fall beyond a negative limit, > on a rise beyond a positive one")
    return gate


def _dig(entry: dict[str, Any], path: tuple[str, ...]) -> dict[str, Any] | None:
    node: Any = entry
    for key in path:
        node = node.get(key) if isinstance(node, dict) else None
    return node if isinstance(node, dict) else None


def _describe_workload(w: dict[str, Any] | None) -> str:
    if not w:
        return "an unknown workload"
    tx = w.get("transactions") or []
    return f"{w.get('workload')}" + (f" ({', '.join(tx)})" if tx else "")


def check_same_workload(summary: dict[str, Any]) -> None:
    """Figures of different workloads or data do not compare: a UsageError naming them."""
    confs = summary["configurations"]
    base = confs[0].get("workload")
    differ = [c for c in confs[1:] if not same_workload(c.get("workload"), base)]
    if differ:
        lines = [f"  {confs[0]['label']} (baseline): {_describe_workload(base)}"]
        lines += [f"  {c['label']}: {_describe_workload(c.get('workload'))}" for c in differ]
        same_kind = all((c.get("workload") or {}).get("workload") == (base or {}).get("workload") for c in differ)
        why = "the same workload with other data or options" if same_kind else "different workloads"
        raise UsageError("these results ran " + why + ": their figures do not compare\n" + "\n".join(lines)
                         + "\n  hint: --force compares them anyway")


def _cell(conf_id: str, s: dict[str, Any] | None, base: dict[str, Any] | None, higher_better: bool | None,
          is_base: bool) -> dict[str, Any]:
    value = None if s is None else s["median"]
    noise, noise_from = (None, None) if s is None else (s.get("noise_pct"), s.get("noise_from"))
    cell: dict[str, Any] = {"configuration": conf_id, "value": value, "min": None if s is None else s["min"],
                            "max": None if s is None else s["max"], "n": None if s is None else s["n"],
                            "noise_pct": noise, "noise_from": noise_from,
                            "diff_pct": None, "apart_pct": None, "beyond_noise": None, "judged_noise_pct": None,
                            "judged_noise_from": None, "better": None}
    if is_base or value is None or base is None or not base["median"]:
        return cell
    diff = (value - base["median"]) / abs(base["median"]) * 100
    cell["diff_pct"] = round(diff, 2)
    if higher_better is not None and diff != 0:
        cell["better"] = (diff > 0) == higher_better
    if value <= 0 or base["median"] <= 0:
        return cell  # no ratio: the noise cannot judge it
    # judged as a ratio, like the noise: the larger median over the smaller
    apart = (max(value, base["median"]) / min(value, base["median"]) - 1) * 100
    cell["apart_pct"] = round(apart, 2)
    # each median is uncertain by its own noise: apart beyond doubt when the gap is wider than both
    # uncertainties together (the larger alone called 1 in 16 pairs of identical configurations
    # with 3 repeats different, and up to 1 in 5 with 2; together 1 in 60 and 1 in 10)
    known = [(n, f) for n, f in ((base.get("noise_pct"), base.get("noise_from")), (noise, noise_from)) if n is not None]
    if known:
        cell["judged_noise_pct"] = round(sum(n for n, _ in known), 3)
        cell["judged_noise_from"] = " + ".join(str(f) for _, f in known)
        cell["beyond_noise"] = apart > cell["judged_noise_pct"]
    return cell


def _row(metric: str, key: str, point: float | None, unit: str, confs: list[dict[str, Any]],
         stats: list[dict[str, Any] | None], higher_better: bool | None) -> dict[str, Any]:
    return {"metric": metric, key: point, "unit": unit,
            "cells": [_cell(c["id"], s, stats[0], higher_better, i == 0) for i, (c, s) in enumerate(zip(confs, stats))]}


def axis_of(confs: list[dict[str, Any]]) -> LoadAxis:
    """The load axis of a summary's configurations (a summary written before it said one: users);
    a UsageError when they are not all on one."""
    return AXES[one_axis((c["label"], c.get("axis") or DEFAULT_AXIS.name) for c in confs)]


def common_points(confs: list[dict[str, Any]], key: str = "users") -> list[Any]:
    """The points of the axis (users counts, offered rates: `key`) every configuration measured (in
    at least one repeat)."""
    sets = [{e[key] for e in c["by_users"]} for c in confs]
    return sorted(set.intersection(*sets)) if sets else []


def compared(table: dict[str, Any]) -> list[Any]:
    """The points a comparison compared at: its users counts, or its offered rates."""
    return table[_compared_key(AXES.get(str(table.get("axis")), DEFAULT_AXIS))]


def _compared_key(ax: LoadAxis) -> str:
    """Where a comparison lists its points: users_compared, rates_compared."""
    return f"{ax.plural}_compared"


def compare(summary: dict[str, Any], gates: list[Gate] | None = None, force: bool = False) -> dict[str, Any]:
    """The comparison table (and the gates' verdicts) of a summary's configurations, the first
    being the baseline."""
    confs: list[dict[str, Any]] = summary["configurations"]
    if len(confs) < 2:
        raise UsageError(f"only one configuration ({confs[0]['label'] if confs else 'none'}): nothing to compare"
                         "\n  hint: give two results or more (the first is the baseline), or a matrix directory")
    ax = axis_of(confs)  # before the workloads: --force does not make a users count a rate
    if not force:
        check_same_workload(summary)
    rows: list[dict[str, Any]] = []
    if any(c.get("settings_not_applied") for c in confs):  # first: it qualifies every figure below it
        rows.append({"metric": "settings", ax.key: None, "unit": "",
                     "cells": [{"configuration": c["id"], "value": "not applied" if c.get("settings_not_applied")
                                else "applied", "not_applied": c.get("settings_not_applied") or []} for c in confs]})
    sat = [c["saturation"].get(ax.key) for c in confs]
    rows.append(_row("saturation", ax.key, None, ax.unit, confs, sat, True))
    rows.append({"metric": "condition", ax.key: None, "unit": "",
                 "cells": [{"configuration": c["id"], "value": c["saturation"]["condition"],
                            "all": c["saturation"]["conditions"],
                            "verdicts": c["saturation"].get("verdicts")} for c in confs]})
    if any(c["saturation"].get("bottleneck") for c in confs):  # what ran out, where the results say it
        rows.append({"metric": "bottleneck", ax.key: None, "unit": "",
                     "cells": [{"configuration": c["id"], "value": c["saturation"].get("bottleneck"),
                                "all": c["saturation"].get("bottlenecks") or []} for c in confs]})
    points = common_points(confs, ax.key)
    for u in points:
        entries = [next(e for e in c["by_users"] if e[ax.key] == u) for c in confs]
        for metric, d in registry.METRICS.shown("compared").items():
            stats = [_dig(e, d.path) for e in entries]
            if all(s is None for s in stats):
                continue  # a workload's own figure, of a workload that has none
            if metric == "error_rate_pct" and all(s is None or s["max"] == 0 for s in stats):
                continue  # no errors anywhere: a row of zeros says nothing
            rows.append(_row(metric, ax.key, u, d.row_unit, confs, stats, d.higher_is_better))
    return {
        "format": COMPARISON_FORMAT, "format_version": 1,
        "baseline": confs[0]["id"],
        "study": summary.get("study"),
        "configurations": [{"id": c["id"], "label": c["label"], "values": c["values"], "files": c["files"],
                            "repeats": len(c["statuses"]), "statuses": c["statuses"],
                            "settings_applied": not c.get("settings_not_applied")} for c in confs],
        "axis": ax.name,
        _compared_key(ax): points,
        "noise_rule": NOISE_RULE,
        "rows": rows,
        "gates": [judge_gate(g, confs) for g in gates or []],
    }


def judge_gate(gate: Gate, confs: list[dict[str, Any]]) -> dict[str, Any]:
    """A gate judged on every configuration against the baseline, at each point of the axis both
    measured, users count or offered rate (saturation: once per configuration), on the medians. A
    figure the gate meets and cannot judge (not measured by one side, not a finite number, a baseline
    of 0 that has no percentage) is listed with why in `unjudged`: such a gate has not passed,
    whatever the other checks say."""
    base, ax = confs[0], axis_of(confs)
    checks: list[dict[str, Any]] = []
    unjudged: list[dict[str, Any]] = []
    for c in confs[1:]:
        if gate.metric == "saturation":
            pairs = [(None, base["saturation"].get(ax.key), c["saturation"].get(ax.key))]
        else:
            path = registry.METRICS.shown("gated")[gate.metric].path
            mine = {e[ax.key]: e for e in c["by_users"]}
            pairs = [(e[ax.key], _dig(e, path), _dig(mine[e[ax.key]], path))
                     for e in base["by_users"] if e[ax.key] in mine]
        for point, b, o in pairs:
            where = {"configuration": c["id"], "label": c["label"], ax.key: point}
            why = _unjudgeable(gate.metric, b, o, base["label"], c["label"])
            if why is not None:
                unjudged.append(where | {"why": why})
                continue
            assert b is not None and o is not None
            diff = (o["median"] - b["median"]) / abs(b["median"]) * 100
            checks.append(where | {"baseline": b["median"], "value": o["median"], "diff_pct": round(diff, 2),
                                   "failed": gate.fails(diff)})
    return {"gate": gate.text, "metric": gate.metric, "op": gate.op, "limit_pct": gate.pct,
            "judged": len(checks), "failed": any(ch["failed"] for ch in checks), "checks": checks,
            "unjudged": unjudged}


def _unjudgeable(metric: str, b: dict[str, Any] | None, o: dict[str, Any] | None, base_label: str,
                 label: str) -> str | None:
    """Why a pair of figures cannot be judged by a gate, or None when it can."""
    for s, who in ((b, f"{base_label} (baseline)"), (o, label)):
        median = None if s is None else s.get("median")
        if median is None:
            return f"{who} has no {metric}"
        if not isinstance(median, int | float) or isinstance(median, bool) or not math.isfinite(median):
            return f"{who}'s {metric} is {median!r}, not a figure"
    assert b is not None
    if b["median"] == 0:
        return f"the baseline's {metric} is 0: a change from 0 has no percentage"
    return None


# ---- rendering: the one table, three ways -------------------------------------------------------

# and each metric's MetricDecl.heading
ROW_NAMES = {"settings": "settings", "condition": "condition that fired", "bottleneck": "what ran out"}


def number(v: float | None) -> str:
    if v is None:
        return "-"
    if float(v).is_integer() and abs(v) < 1000:
        return f"{v:.0f}"  # users, counts
    a = abs(v)
    return f"{v:,.0f}" if a >= 1000 else f"{v:.1f}" if a >= 100 else f"{v:.2f}" if a >= 1 else f"{v:.3f}"


def point_words(where: dict[str, Any]) -> str | None:
    """A row's or a check's point of the axis in words, "8 users" or "4000 tps" (None: a row of
    the whole configuration, the saturation point's)."""
    for ax in AXES.values():
        if where.get(ax.key) is not None:
            return ax.words(where[ax.key])
    return None


def row_name(row: dict[str, Any]) -> str:
    d = registry.METRICS.figure(row["metric"])
    name = ROW_NAMES.get(row["metric"]) or (d.heading if d is not None else row["metric"])
    if row["metric"] == "saturation":
        name = f"{row['metric']} ({row['unit']})"  # its unit is the axis': users, or tps for a rate
    point = point_words(row)
    return name if point is None else f"{name} @ {point}"


def cell_lines(row: dict[str, Any], cell: dict[str, Any], is_base: bool) -> tuple[str, str]:
    """(value, what it means against the baseline) of a cell, in words."""
    if row["metric"] == "settings":
        return cell["value"].upper() if cell["not_applied"] else cell["value"], "; ".join(
            f"{a['name']}={a['requested']}: the server has {a['after']}" for a in cell["not_applied"])
    if row["metric"] == "bottleneck":
        each = [b for b in cell.get("all") or [] if b]
        head = next((b for b in each if b["class"] == cell["value"]), None)
        value = "not said" if cell["value"] is None else f"{title(cell['value'])}" + (
            f" ({head['confidence']})" if head and head.get("confidence") else "")
        classes = {b["class"] for b in each}
        return value, (f"per repeat: {', '.join(title(b['class']) for b in each)}" if len(classes) > 1
                       else str(head.get("words") or "") if head else "")
    if row["metric"] == "condition":
        every = [c if c is not None else "none" for c in cell.get("all") or []]
        differ = len(set(every)) > 1
        return (cell["value"] or "none fired"), (f"per repeat: {', '.join(every)}" if differ else "")
    value = number(cell["value"])
    if cell["n"] and cell["n"] > 1:
        value += f" [{number(cell['min'])}-{number(cell['max'])}]"
    if cell["value"] is None:
        return value, "not measured"
    if is_base:
        noise = cell["noise_pct"]
        return value, ("baseline, noise unknown" if noise is None else
                       f"baseline, noise {noise:.1f}% ({cell['noise_from']})")
    if cell["diff_pct"] is None:
        return value, "no difference computed"
    diff = f"{cell['diff_pct']:+.1f}%"
    if cell["diff_pct"] < -20 and cell["apart_pct"] is not None:
        # judged as a ratio: say it as one, or "-98% beyond a noise of 280%" reads as a contradiction
        diff += f" ({cell['apart_pct'] / 100 + 1:.3g}x lower)"
    if cell["beyond_noise"] is None:
        return value, f"{diff}, noise unknown"
    words = ("better" if cell["better"] else "worse") if cell["better"] is not None else "different"
    if not cell["beyond_noise"]:
        return value, f"{diff} within noise {cell['judged_noise_pct']:.1f}% ({cell['judged_noise_from']})"
    return value, f"{diff} {words}, beyond noise {cell['judged_noise_pct']:.1f}% ({cell['judged_noise_from']})"


def _header(conf: dict[str, Any], is_base: bool) -> str:
    runs = f"{conf['repeats']} run{'s' if conf['repeats'] != 1 else ''}"
    return (f"{conf['label']}" + (" (baseline)" if is_base else "") + f" · {runs}"
            + ("" if conf.get("settings_applied", True) else " · SETTINGS NOT APPLIED"))


def to_rich(table: dict[str, Any]) -> Any:
    """A rich Table of the comparison (one column per configuration)."""
    from rich.table import Table
    from rich.text import Text

    t = Table(title=f"bench compare{': ' + table['study'] if table.get('study') else ''}", show_lines=True)
    t.add_column("", style="bold", no_wrap=True)
    confs = table["configurations"]
    for i, c in enumerate(confs):
        t.add_column(Text(_header(c, i == 0)), overflow="fold")
    for row in table["rows"]:
        cells = []
        for i, cell in enumerate(row["cells"]):
            value, note = cell_lines(row, cell, i == 0)
            style = ""
            if cell.get("beyond_noise"):
                style = "green" if cell.get("better") else "red"
            text = Text(value)
            if note:
                text.append("\n" + note, style=style or "dim")
            cells.append(text)
        t.add_row(Text(row_name(row)), *cells)
    return t


def _md_escape(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def to_markdown(table: dict[str, Any]) -> str:
    confs = table["configurations"]
    head = ["", *(_header(c, i == 0) for i, c in enumerate(confs))]
    lines = [f"### bench compare{': ' + table['study'] if table.get('study') else ''}", "",
             "| " + " | ".join(_md_escape(h) for h in head) + " |", "|" + "---|" * len(head)]
    for row in table["rows"]:
        cells = []
        for i, cell in enumerate(row["cells"]):
            value, note = cell_lines(row, cell, i == 0)
            if cell.get("beyond_noise"):
                note = f"**{note}**"
            cells.append(value + (f"<br>{note}" if note else ""))
        lines.append("| " + " | ".join(_md_escape(x) for x in [row_name(row), *cells]) + " |")
    ax = AXES.get(str(table.get("axis")), DEFAULT_AXIS)
    points = ", ".join(axis_number(p) for p in compared(table)) + ("" if ax.whole else f" {ax.unit}")
    lines += ["", f"{ax.plural.capitalize()} compared: {points or 'none in common'}. "
              f"Values are medians over the repeats [min-max]. Noise rule: {table['noise_rule']}."]
    for c in confs:
        files = ", ".join(c["files"]) or "-"
        lines.append(f"- {c['label']}: {files}")
    for g in table["gates"]:
        lines.append(f"- gate `{g['gate']}`: " + gate_words(g))
    return "\n".join(lines) + "\n"


def gate_words(g: dict[str, Any]) -> str:
    failed = [ch for ch in g["checks"] if ch["failed"]]
    unjudged = g.get("unjudged") or []
    if failed:
        return "FAILED: " + "; ".join(_check_words(ch) for ch in failed)
    if unjudged:
        return "not judged: " + "; ".join(f"{_where(u)}: {u['why']}" for u in unjudged)
    if not g["judged"]:
        return "not judged: no figure both the baseline and another configuration measured"
    return f"passed ({g['judged']} check{'s' if g['judged'] != 1 else ''})"


def gate_verdict(g: dict[str, Any]) -> str:
    """failed, passed, or unjudged (nothing judged, or a figure met that could not be)."""
    if g["failed"]:
        return "failed"
    return "unjudged" if g.get("unjudged") or not g["judged"] else "passed"


def _where(ch: dict[str, Any]) -> str:
    point = point_words(ch)
    return ch["label"] + ("" if point is None else f" at {point}")


def _check_words(ch: dict[str, Any]) -> str:
    return f"{_where(ch)}: {number(ch['value'])} vs {number(ch['baseline'])} ({ch['diff_pct']:+.1f}%)"
