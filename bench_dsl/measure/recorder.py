"""What a process's users record into as they run: per transaction type, the response times and
statements (recorded into HDR histograms in C by the executor's Counts, or by PyCounts without it),
the errors, retries and rollbacks; swapped at each report into TxStats (bench_dsl.measure.metrics)."""

from __future__ import annotations

import time
from collections import Counter

from bench_dsl import native
from bench_dsl.measure.stalls import RESOLUTION_S, Quiet
from bench_dsl.measure.txstats import TxStats, encoded_counts

# Counts.quiet(): gaps, the latest completion, the take, idle spans, idle since (nanoseconds)
Raw = tuple[list[tuple[int, int]], int | None, int, list[tuple[int, int]], int | None]
# Counts.take(), per type: the histogram (HdrHistogram's V2 base64, None when none completed),
# transactions, statements, the sum of their response times (us), and those of the transactions
# that rolled back on purpose (counted among the transactions too)
Taken = tuple[str | None, int, int, int, int]
QUIET_MIN_NS = round(RESOLUTION_S * 1e9)  # the C executor's


class PyCounts:
    """What counts when the package was built without the C executor (_native.Counts otherwise):
    latencies counted by their exact microsecond value (a dict increment, ~0.1 us; hdrh's
    record_value is pure Python, ~2.4 us a call) and recorded into a histogram per distinct value at
    the take, and statements, per transaction type; the take's answer is _native.Counts'. No clock per
    transaction: its quiet spans are known to a take's precision (did a take count any?). Its idle
    spans are exact: their times come from the users, which read the clock anyway."""

    def __init__(self, n: int) -> None:
        self._lat: list[dict[int, int]] = [{} for _ in range(n)]
        self._queries = [0] * n
        self._last: int | None = None
        self._inflight = 0
        self._idle_from = 0
        self._idle: list[tuple[int, int]] = []
        self._taken: Raw = ([], None, 0, [], 0)

    def enter(self, t: int) -> None:
        """A user starts waiting on the server at `t` (time.monotonic_ns)."""
        if self._inflight == 0 and t - self._idle_from >= QUIET_MIN_NS:
            self._idle.append((self._idle_from, t))
        self._inflight += 1

    def leave(self, t: int) -> None:
        if self._inflight > 0:
            self._inflight -= 1
            if self._inflight == 0:
                self._idle_from = t

    def ok(self, i: int, micros: int, queries: int) -> None:
        lat = self._lat[i]
        lat[micros] = lat.get(micros, 0) + 1
        self._queries[i] += queries

    def take(self) -> list[Taken]:
        """What was counted since the last take, per type; starts afresh."""
        at = time.monotonic_ns()
        if any(self._lat):
            self._last = at
        self._taken = ([], self._last, at, self._idle, None if self._inflight else self._idle_from)
        self._idle = []
        # its users run on asyncmy, whose rollbacks the Recorder counts (rollback())
        out = [(encoded_counts(lat), sum(lat.values()), q, sum(us * n for us, n in lat.items()), 0)
               for lat, q in zip(self._lat, self._queries)]
        self._lat = [{} for _ in self._lat]
        self._queries = [0] * len(self._queries)
        return out

    def quiet(self) -> Raw:
        return self._taken  # as _native.Counts.quiet: no gaps, the latest take that counted any, the take, ...


def new_counts(n: int) -> PyCounts:
    return native.compiled.Counts(n) if native.compiled is not None else PyCounts(n)


class Recorder:
    """The hot path: every transaction's outcome lands here. One per worker process.

    Response times are recorded into HDR histograms (Counts, in C when the C executor is built), which
    each swap (once a second) hands over encoded: a worker sends them on as they are."""

    __slots__ = ("_errors", "_retries", "_rollbacks", "counts", "enter", "leave", "names", "ok")

    def __init__(self, names: tuple[str, ...]) -> None:
        self.names = names
        self.counts = new_counts(len(names))
        self.ok = self.counts.ok  # ok(i, micros, statements): the C executor's threads count without calling it
        # enter(t_ns) / leave(t_ns): a user on asyncmy starts or stops waiting on the server (the C
        # executor's users tell their Counts themselves)
        self.enter = self.counts.enter
        self.leave = self.counts.leave
        self._reset()

    def _reset(self) -> None:
        n = len(self.names)
        self._retries = [0] * n
        self._errors: list[Counter[int]] = [Counter() for _ in range(n)]
        self._rollbacks = [0] * n

    def error(self, i: int, code: int) -> None:
        self._errors[i][code] += 1

    def retry(self, i: int) -> None:
        self._retries[i] += 1

    def rollback(self, i: int) -> None:
        self._rollbacks[i] += 1

    def swap(self) -> dict[str, TxStats]:
        """Everything recorded since the last swap, per transaction name; starts afresh."""
        out = {}
        for i, (name, (encoded, count, queries, total, rollbacks)) in enumerate(zip(self.names, self.counts.take())):
            out[name] = TxStats(None, count, queries, self._retries[i], self._errors[i],
                                self._rollbacks[i] + rollbacks, total, encoded)
        self._reset()
        return out

    def quiet(self) -> Quiet:  # the gaps between completions the last swap took (bench_dsl.measure.stalls)
        return Quiet.from_counts(self.counts.quiet())
