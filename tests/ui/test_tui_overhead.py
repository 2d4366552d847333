"""bench/ui_overhead.py's arithmetic: runs are paired in the order they ran, and the median of the
pairs' ratios decides (the benchmark's figures themselves are never asserted)."""

from __future__ import annotations

from bench.ui_overhead import Run, summarize


def run(mode: str, tps: float, cpu_per_tx: float | None, workers: str = "1") -> Run:
    return Run(mode, workers, tps, int(tps * 6), None, None, cpu_per_tx, 8.0)


def test_pairs_are_taken_in_order_and_the_median_decides() -> None:
    runs = [run("headless", 1000.0, 20.0), run("ui", 990.0, 20.4),   # 0.99
            run("headless", 2000.0, 20.0), run("ui", 1000.0, 30.0),  # 0.50: the machine was busy
            run("headless", 1000.0, 20.0), run("ui", 970.0, 20.2),   # 0.97
            run("headless", 900.0, 20.0, workers="auto"), run("ui", 100.0, 40.0, workers="auto")]
    s = summarize(runs, "1")
    assert s["ratios"] == [0.99, 0.5, 0.97] and s["median_ratio"] == 0.97
    assert s["overhead_pct"] == 3.0 and s["met"] is True
    assert s["client_cpu_per_tx_ratios"] == [1.02, 1.5, 1.01] and s["client_cpu_per_tx_overhead_pct"] == 2.0
    over = summarize(runs, "auto")
    assert over["overhead_pct"] == 88.89 and over["met"] is False


def test_missing_cpu_figures_are_left_out() -> None:
    s = summarize([run("headless", 1000.0, None), run("ui", 1000.0, 25.0)], "1")
    assert s["client_cpu_per_tx_ratios"] == [] and s["client_cpu_per_tx_overhead_pct"] is None
    assert s["median_ratio"] == 1.0 and s["met"] is True
