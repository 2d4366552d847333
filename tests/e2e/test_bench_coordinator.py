"""The harness's coordinator section (bench/coordinator.py): simulated workers drive the run's own
collect, merge, tally and judge, and what the result counts is what their answers sent. No figure
of the benchmark is asserted: only that it was measured."""

from __future__ import annotations

import json

from bench.coordinator import STAMP, VARIANTS, coordinator_table, one_size, recorded_reports
from bench_dsl.fleet.base import WorkerReport


def test_a_simulated_workers_lines_are_worker_reports_with_their_own_names() -> None:
    lines, counts = recorded_reports(3, seed=7)
    assert len(lines) == 3 and all(len(ls) == VARIANTS for ls in lines)
    report = WorkerReport.from_wire(json.loads(lines[2][1].replace(STAMP, "12.5")))
    assert list(report.processes) == ["worker 3"] and report.quiet[0].at == 12.5
    assert sum(st.count for st in report.tx.values()) == counts[2][1] > 0


async def test_the_results_count_is_what_the_simulated_workers_answers_counted() -> None:
    row = await one_size(5, 4, seed=3, second=0.05)
    assert row["status"] == "completed" and row["ticks"] >= 1
    assert row["transactions"] == row["sent"] > 0
    for part in ("cpu_ms_per_tick", "calls_ms", "merge_ms", "tally_ms", "tick_late_ms"):
        assert row[part]["median"] is not None
    sec = {"settings": {"ticks": 4, "users_per_worker": 8, "nodes": 8, "transactions": ["a"]}, "rows": [row],
           "loadavg": {"start": "1.00", "end": "1.00"},
           "goal": {"cpu_pct_of_core_below": 25.0, "met": None}}
    assert "| 5 |" in coordinator_table(sec)
