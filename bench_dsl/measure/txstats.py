"""One transaction type's measurements (or all types together): its counts and its HDR histogram of
response times, merged across ticks and workers, and sent between processes encoded (HdrHistogram's
compressed base64), so that several workers' figures merge exactly. The histogram may arrive
encoded (from the C executor's Counts, or a worker's wire) and is decoded only where it is read or
merged: a worker hands its users' histograms on as they came."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from hdrh.histogram import HdrHistogram

LOWEST_US = 1
HIGHEST_US = 3_600_000_000  # one hour: a stalled server must still be measured, not clipped
SIGNIFICANT_DIGITS = 3
PERCENTILES = (50.0, 90.0, 95.0, 99.0, 99.9)


def new_histogram() -> HdrHistogram:
    return HdrHistogram(LOWEST_US, HIGHEST_US, SIGNIFICANT_DIGITS)


def encoded_counts(counts: dict[int, int]) -> str | None:
    """Counts by microsecond value as a histogram in HdrHistogram's V2 base64 (None when empty): what
    the C executor hands over, made where the values were counted in Python."""
    if not counts:
        return None
    hist = new_histogram()
    for us, n in counts.items():
        hist.record_value(us if us < HIGHEST_US else HIGHEST_US, n)
    return str(hist.encode().decode("ascii"))


def decoded(encoded: str) -> HdrHistogram:
    """An encoded histogram, over new_histogram()'s whole range (decode() keeps the encoder's range:
    re-homed, later merges never clip)."""
    full = new_histogram()
    full.add(HdrHistogram.decode(encoded))
    return full


@dataclass(slots=True)
class TxStats:
    """One transaction type (or all of them) over some span of time. Mergeable."""

    _hist: HdrHistogram | None = None  # made at first use: see `hist`
    count: int = 0
    queries: int = 0
    retries: int = 0
    errors: Counter[int] = field(default_factory=Counter)
    rollbacks: int = 0  # completed, then rolled back on purpose (counted in `count` too)
    # Exact sum of latencies: the mean without walking the histogram (hdrh's get_mean_value takes ~100 ms)
    total_us: int = 0
    # the histogram in HdrHistogram's V2 base64, until `hist` is first read (then None)
    encoded: str | None = None

    @property
    def hist(self) -> HdrHistogram:
        if self._hist is None:
            self._hist = decoded(self.encoded) if self.encoded else new_histogram()
            self.encoded = None
        return self._hist

    @hist.setter
    def hist(self, hist: HdrHistogram) -> None:
        self._hist, self.encoded = hist, None

    def merge(self, other: TxStats) -> None:
        if other.count:
            self.hist.add(other.hist)
        self.count += other.count
        self.queries += other.queries
        self.retries += other.retries
        self.errors.update(other.errors)
        self.rollbacks += other.rollbacks
        self.total_us += other.total_us

    def counts(self) -> tuple[int, int, int]:  # what a throughput counts (metrics.counted)
        return self.count, self.queries, self.rollbacks

    @property
    def error_count(self) -> int:
        return sum(self.errors.values())

    def latency_ms(self) -> dict[str, float | None]:
        """min / avg / p50 ... p99.9 / max in milliseconds (None when nothing completed)."""
        if self.count == 0:
            return dict.fromkeys(("min", "avg", "p50", "p90", "p95", "p99", "p99_9", "max"))
        pct = self.hist.get_percentile_to_value_dict(list(PERCENTILES))
        out: dict[str, float | None] = {
            "min": self.hist.get_min_value() / 1000,
            "avg": round(self.mean_us() / 1000, 3),
        }
        for p in PERCENTILES:
            out["p" + _pkey(p)] = pct[p] / 1000
        out["max"] = self.hist.get_max_value() / 1000
        return out

    def mean_us(self) -> float:
        return self.total_us / self.count if self.count else 0.0

    def percentile_s(self, p: float) -> float | None:
        if self.count == 0:
            return None
        return self.hist.get_value_at_percentile(p) / 1e6

    def to_wire(self) -> dict[str, object]:
        """What a worker process sends to the coordinator for one interval."""
        # still as it came (None when nothing did), or encoded anew once read or merged into
        hist = self.encoded if self._hist is None else self._hist.encode().decode("ascii") if self.count else None
        return {"hist": hist, "count": self.count,
                "queries": self.queries, "retries": self.retries, "errors": dict(self.errors),
                "rollbacks": self.rollbacks, "total_us": self.total_us}

    @classmethod
    def from_wire(cls, d: dict[str, object]) -> TxStats:
        encoded = d["hist"]
        assert encoded is None or isinstance(encoded, str)
        return cls(None, int(d["count"]), int(d["queries"]), int(d["retries"]),  # type: ignore[call-overload]
                   Counter({int(k): int(v) for k, v in d["errors"].items()}),  # type: ignore[attr-defined]
                   int(d.get("rollbacks", 0)), int(d.get("total_us", 0)), encoded or None)  # type: ignore[call-overload]


def _pkey(p: float) -> str:
    return str(int(p)) if float(p).is_integer() else str(p).replace(".", "_")
