"""How consistent a window's response times and throughput were, beside their percentiles (the
storage brief's "response-time consistency"; the jitter of Percona's sysbench charts):

    latency_stddev_ms   the standard deviation of every transaction's response time
    p99_p50_ratio       p99 over p50: how far the tail stands from the middle
    tps_cv_pct          the coefficient of variation of throughput across the window's seconds
                        (its ticks): their standard deviation over their mean, in %

Declared as figures in bench_dsl.measure.figures, as metrics (for compare and the summary) in
bench_dsl.language.metric_decls."""

from __future__ import annotations

import math
from dataclasses import dataclass

from hdrh.histogram import HdrHistogram

# A tick shorter than this (a phase's last, cut at its end) is left out of the throughput's spread:
# its rate over a fraction of a second says more of where the cut fell than of the server.
MIN_TICK_S = 0.5


@dataclass(slots=True)
class Jitter:
    """The throughput of each tick of a window, summed so that windows merge: count, sum, squares."""

    n: int = 0
    total: float = 0.0
    squares: float = 0.0

    def add(self, transactions: int, seconds: float) -> None:
        if seconds >= MIN_TICK_S:
            tps = transactions / seconds
            self.n += 1
            self.total += tps
            self.squares += tps * tps

    def cv_pct(self) -> float | None:
        """The sample standard deviation over the mean, in % (None: fewer than two ticks, or none ran)."""
        if self.n < 2 or self.total <= 0:
            return None
        mean = self.total / self.n
        var = max(self.squares - self.n * mean * mean, 0.0) / (self.n - 1)
        return 100.0 * math.sqrt(var) / mean


def consistency(hist: HdrHistogram, count: int, jitter: Jitter) -> dict[str, float | None]:
    """The figures of a window (its histogram of response times in µs, how many it holds, its ticks)."""
    p50 = hist.get_value_at_percentile(50.0) if count else 0
    cv = jitter.cv_pct()
    return {"latency_stddev_ms": round(hist.get_stddev() / 1000, 3) if count else None,
            "p99_p50_ratio": round(hist.get_value_at_percentile(99.0) / p50, 3) if p50 > 0 else None,
            "tps_cv_pct": None if cv is None else round(cv, 2)}
