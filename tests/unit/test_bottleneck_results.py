"""What ran out, as the results say it (issue 41): the console's verdict, summary.json's per
configuration (each repeat's, and the class most of them name) and `bench compare`'s row."""

from __future__ import annotations

import copy
from typing import Any

from bench_dsl.results.comparison import cell_lines, compare, row_name
from bench_dsl.results.summary import summarize
from bench_dsl.results.verdict import text, verdict_lines

from ..fixtures.result import recorded_result


def _ran_out(cls: str, confidence: str, words: str) -> dict[str, Any]:
    return {"class": cls, "confidence": confidence, "share": 0.6, "words": words, "evidence": [], "ruled_out": []}


def _saturated(cls: str | None, conf_id: str, repeat: int = 1) -> dict[str, Any]:
    doc = copy.deepcopy(recorded_result())
    doc["saturation"]["saturated"] = True
    doc["saturation"]["bottleneck"] = None if cls is None else _ran_out(cls, "high", f"limited by {cls}")
    doc["configuration"] = {"id": conf_id, "label": conf_id, "study": "s", "values": {"x": conf_id},
                            "repeat": repeat, "repeats": 2}
    return doc


def test_the_console_says_what_ran_out_after_the_saturation_point() -> None:
    sat = {"users": 16, "step": 4, "saturated": True, "condition": "tps plateau 5%", "axis": "users",
           "bottleneck": _ran_out("row_locks", "high", "limited by row locks (75% of running sessions waiting)")}
    said = [text(line) for line in verdict_lines(sat, None)]
    assert "what ran out: limited by row locks (75% of running sessions waiting) (high confidence)" in said


def test_a_summary_keeps_each_repeats_bottleneck_and_compare_shows_a_row_of_them() -> None:
    summary = summarize([_saturated("buffer_pool", "c1", 1), _saturated("buffer_pool", "c1", 2),
                         _saturated("row_locks", "c2", 1), _saturated(None, "c2", 2)])
    c1, c2 = (c["saturation"] for c in summary["configurations"])
    assert c1["bottleneck"] == "buffer_pool" and [b["class"] for b in c1["bottlenecks"]] == ["buffer_pool"] * 2
    assert c2["bottleneck"] == "row_locks" and c2["bottlenecks"][1] is None
    row = next(r for r in compare(summary)["rows"] if r["metric"] == "bottleneck")
    assert row_name(row) == "what ran out"
    base, other = (cell_lines(row, cell, i == 0) for i, cell in enumerate(row["cells"]))
    assert base == ("the buffer pool (high)", "limited by buffer_pool")
    assert other[0] == "row locks (high)"


def test_no_row_where_no_result_says_what_ran_out() -> None:
    summary = summarize([_saturated(None, "c1"), _saturated(None, "c2")])
    assert all(r["metric"] != "bottleneck" for r in compare(summary)["rows"])


def test_the_report_says_what_ran_out_beside_each_saturation_point() -> None:
    from bench_dsl.results.fold import group
    from bench_dsl.results.report import data

    configs = group([_saturated("buffer_pool", "c1", 1), _saturated("row_locks", "c1", 2),
                     _saturated("buffer_pool", "c1", 3), _saturated(None, "c2", 1)])
    c1, c2 = data.summary_rows(configs)
    assert c1["ran_out"] == "limited by the buffer pool (high confidence)" and c2["ran_out"] == "-"
    marks = {r["configuration"]: r["about"] for r in data.saturation_rows(configs, data.tps)}
    assert marks[configs[0].label].endswith("; limited by the buffer pool (high confidence)")
