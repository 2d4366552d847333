"""Response-time consistency (bench_dsl.measure.consistency): the standard deviation of the response
times, p99 over p50, and the spread of throughput across a window's seconds, on values recorded here."""

from __future__ import annotations

import math
import statistics

import pytest

from bench_dsl.measure.consistency import Jitter, consistency
from bench_dsl.measure.txstats import new_histogram


def test_the_spread_of_throughput_is_the_ticks_standard_deviation_over_their_mean() -> None:
    rates = [1000.0, 1100.0, 900.0, 1000.0]
    j = Jitter()
    for r in rates:
        j.add(int(r), 1.0)
    j.add(5, 0.2)  # a phase's last tick, cut short: left out
    assert j.cv_pct() == pytest.approx(100 * statistics.stdev(rates) / statistics.mean(rates))


def test_windows_merge_by_adding_their_ticks_and_too_few_say_nothing() -> None:
    a, b = Jitter(), Jitter()
    a.add(100, 1.0)
    assert a.cv_pct() is None  # one second has no spread
    b.add(300, 1.0)
    both = Jitter(a.n + b.n, a.total + b.total, a.squares + b.squares)
    assert both.cv_pct() == pytest.approx(100 * statistics.stdev([100, 300]) / 200)
    assert Jitter().cv_pct() is None


def test_the_response_times_spread_and_tail_over_middle() -> None:
    h = new_histogram()
    values_us = [1000] * 98 + [10_000, 50_000]
    for v in values_us:
        h.record_value(v)
    out = consistency(h, len(values_us), Jitter())
    mean = sum(values_us) / len(values_us)
    stddev = math.sqrt(sum((v - mean) ** 2 for v in values_us) / len(values_us)) / 1000
    assert out["latency_stddev_ms"] == pytest.approx(stddev, rel=0.01)  # HDR's precision
    assert out["p99_p50_ratio"] == pytest.approx(10.0, rel=0.01)
    assert out["tps_cv_pct"] is None
    assert consistency(new_histogram(), 0, Jitter()) == {"latency_stddev_ms": None, "p99_p50_ratio": None,
                                                        "tps_cv_pct": None}
