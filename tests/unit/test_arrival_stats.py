"""ArrivalStats (bench_dsl/measure/arrivals.py): from either schedule's take(), merged over time and
across processes, through JSON and back without losing a count or a histogram's value."""

from __future__ import annotations

import json

import pytest

from bench_dsl import native
from bench_dsl.fleet import pacing
from bench_dsl.measure.arrivals import ArrivalStats
from bench_dsl.measure.txstats import encoded_counts


def _take(offered: int, started: int, dropped: int, busy: int, lag: dict[int, int],
          service: dict[int, int], wait: dict[int, int] | None = None, queued_max: int = 0) -> dict[str, object]:
    hists = {name: encoded_counts(counts) for name, counts in (("lag", lag), ("service", service),
                                                                  ("queue_wait", wait or {}))}
    sums = {name + "_us": sum(us * n for us, n in counts.items())
            for name, counts in (("lag", lag), ("service", service), ("queue_wait", wait or {}))}
    return {"offered": offered, "started": started, "dropped": dropped, "queued_max": queued_max, "queued": 0,
            "waiting": 0, "busy": busy, "busy_max": busy + 1, "idle": 2, **hists, **sums}


def test_a_take_becomes_figures() -> None:
    a = ArrivalStats.from_take(_take(100, 90, 10, 3, {10: 80, 2000: 10}, {500: 89, 1500: 1}))
    f = a.figures(2.0)
    assert (f["offered_tps"], f["started_tps"], f["dropped"], f["dropped_pct"], f["dropped_per_s"]) == \
        (50.0, 45.0, 10, 10.0, 5.0)
    assert (f["busy"], f["busy_max"], f["queued_max"]) == (3, 4, 0)
    assert f["lag_ms"]["p50"] == pytest.approx(0.010, abs=0.001) and f["lag_ms"]["max"] == pytest.approx(2.0, rel=0.01)
    assert f["lag_ms"]["avg"] == pytest.approx((10 * 80 + 2000 * 10) / 90 / 1000, abs=0.001)
    assert f["service_ms"]["p50"] == pytest.approx(0.5, rel=0.01)
    assert set(f["queue_wait_ms"]) == {"min", "avg", "p50", "p90", "p95", "p99", "p99_9", "max"}
    assert all(v is None for v in f["queue_wait_ms"].values())
    assert ArrivalStats().figures(1.0)["dropped_pct"] is None


def test_merged_over_time_and_across_processes() -> None:
    one = ArrivalStats.from_take(_take(100, 100, 0, 2, {5: 100}, {300: 100}, queued_max=1))
    two = ArrivalStats.from_take(_take(50, 40, 10, 6, {5: 40}, {900: 40}, {1000: 3}, queued_max=3))
    later = ArrivalStats()
    later.merge(one)
    later.merge(two)
    assert (later.offered, later.started, later.dropped) == (150, 140, 10)
    assert (later.queued_max, later.busy_max, later.busy, later.samples) == (3, 7, 4.0, 2)
    assert later.service.get_total_count() == 140 and later.queue_wait.get_total_count() == 3
    assert later.service_us == 300 * 100 + 900 * 40
    both = ArrivalStats.from_take(_take(100, 100, 0, 2, {5: 100}, {300: 100}, queued_max=1))
    both.merge(two, parallel=True)
    assert (both.queued_max, both.busy_max, both.busy, both.idle, both.samples) == (4, 10, 8.0, 4.0, 1)
    assert both.lag.get_total_count() == 140


def test_what_waits_at_a_spans_end_closes_its_sum() -> None:
    """offered = started + dropped + queue_growth over a take, takes merged over time and processes
    merged: 40 arrivals still waiting at the end are in a figure, not lost between them."""
    first = ArrivalStats.from_take(_take(100, 60, 10, 4, {}, {}) | {"waiting": 30})
    last = ArrivalStats.from_take(_take(100, 80, 10, 4, {}, {}) | {"waiting": 40})
    last.waiting_start = 30  # the pool's previous take's (UserPool.arrivals)
    run = ArrivalStats()
    run.merge(first)
    run.merge(last)
    f = run.figures(2.0)
    assert (f["offered"], f["started"], f["dropped"], f["queue_growth"], f["waiting_at_end"]) == (200, 140, 20, 40, 40)
    other = ArrivalStats.from_take(_take(50, 50, 0, 1, {}, {}))
    run.merge(other, parallel=True)
    f = run.figures(2.0)
    assert f["offered"] == f["started"] + f["dropped"] + f["queue_growth"]


def test_the_wire_is_json_and_loses_nothing() -> None:
    a = ArrivalStats.from_take(_take(1000, 990, 10, 5, {7: 900, 40_000: 90}, {250: 990}, {30_000: 12},
                                     queued_max=4))
    b = ArrivalStats.from_wire(json.loads(json.dumps(a.to_wire())))
    assert b.figures(1.0) == a.figures(1.0)
    assert (b.samples, b.lag_us, b.queue_wait_us) == (1, a.lag_us, a.queue_wait_us)
    empty = ArrivalStats.from_wire(json.loads(json.dumps(ArrivalStats().to_wire())))
    empty.merge(b)  # decoded histograms are re-homed: a merge never clips
    assert empty.figures(1.0) == a.figures(1.0)


@pytest.mark.parametrize("kind", ["c", "python"])
def test_both_schedules_take_the_same_keys(kind: str) -> None:
    assert kind != "c" or native.compiled is not None, "the C executor is not built: scripts/setup.sh builds it"
    s = native.compiled.Schedule(1) if kind == "c" else pacing.AsyncSchedule(1)  # type: ignore[union-attr]
    s.set(1000.0, True, 3, 0.25)
    d = s.take()
    assert set(d) == {"offered", "started", "dropped", "queued_max", "queued", "waiting", "busy", "busy_max",
                      "idle", "lag", "service", "queue_wait", "lag_us", "service_us", "queue_wait_us"}
    assert ArrivalStats.from_take(d).started == 0
    for bad in ((-1.0, False, 0, 0.0), (10.0, False, -1, 0.0), (10.0, False, 0, 1.0)):
        with pytest.raises(ValueError):
            s.set(*bad)
