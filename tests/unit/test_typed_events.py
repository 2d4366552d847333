"""Events carry types, not dicts (issue 40): each type's JSON is the object a result and a stream
held before it existed, key for key, and reads back as the same value; what an older or hand-made
result lacks reads back empty rather than failing."""

from __future__ import annotations

import json
from typing import Any

import pytest

from bench_dsl.core.prepare_report import PrepareReport
from bench_dsl.engine import events as ev
from bench_dsl.results.document import ResultDocument
from bench_dsl.results.stream import encode


def _wire(e: ev.Event) -> dict[str, Any]:
    out: dict[str, Any] = json.loads(json.dumps(encode(e)))
    return out


# -- Prepared: the result's "prepare" ------------------------------------------------------------------
@pytest.mark.parametrize(("report", "before"), [
    (PrepareReport(False, 20000, 0.7), {"skipped": False, "rows": 20000, "seconds": 0.7}),
    (PrepareReport(True, 20000, 0.0, "2026-11-28 14:09:42"),
     {"skipped": True, "rows": 20000, "seconds": 0.0, "prepared_at": "2026-11-28 14:09:42"}),
])
def test_a_prepare_report_is_the_results_prepare_and_reads_back(report: PrepareReport, before: dict[str, Any]) -> None:
    assert report.to_json() == before
    assert PrepareReport.from_json(before) == report
    doc = ResultDocument()
    doc.apply(ev.Prepared(report))
    assert doc.doc["prepare"] == before
    line = _wire(ev.Prepared(report))
    assert line["report"] == before  # a stream's line as before: {"type": "prepared", "report": {...}}
    assert ev.from_json(line) == ev.Prepared(report)


def test_a_result_without_a_prepare_reads_as_none_and_a_partial_one_as_empty() -> None:
    assert PrepareReport.from_json(None) is None
    assert PrepareReport.from_json({"skipped": True}) == PrepareReport(True, 0, 0.0)
    with pytest.raises(ValueError):
        ev.from_json({"type": "prepared", "report": None})
