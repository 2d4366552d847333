"""Another machine's monotonic clock read on this one's. A worker's report says when its counts
were taken and when its users last completed (bench_dsl.measure.stalls.Quiet) on its own clock; the
scheduler cuts ticks and stalls on the coordinator's. On one machine both are CLOCK_MONOTONIC; a
worker on a cluster node has its own, with an unknown origin. Each round trip bounds the offset:
the worker read its clock between the request's sending and the answer's arrival, so the midpoint
is off by at most half the round trip (Cristian's algorithm), and the shortest recent round trip
gives the tightest bound. Clock drift between two machines (a few ppm) is far below the 50 ms
stalls are counted in over a run's hours, and the estimate follows it anyway."""

from __future__ import annotations

from collections import deque
from typing import Any

_SAMPLES = 16  # the recent round trips the estimate keeps (older ones may carry a drifted offset)


class ClockMap:
    """The offset from one worker's clock to this process's, from the round trips of its reports."""

    def __init__(self) -> None:
        self._samples: deque[tuple[float, float]] = deque(maxlen=_SAMPLES)  # (round trip, offset)
        self.offset = 0.0
        self.error_s: float | None = None  # half the round trip of the sample in use: the bound

    def observe(self, sent: float, received: float, remote: float) -> None:
        """A report asked at `sent` and answered at `received` (this clock), taken at `remote` (its)."""
        rtt = max(0.0, received - sent)
        self._samples.append((rtt, (sent + received) / 2 - remote))
        rtt, self.offset = min(self._samples)
        self.error_s = rtt / 2

    def to_local(self, t: float) -> float:
        return t + self.offset

    def quiet_wire(self, quiet: list[Any]) -> list[Any]:
        """A report's Quiet wire ([spans, last, at, idle, idle_from] each) on this clock."""
        out = []
        for spans, last, at, *rest in quiet:
            idle, idle_from = rest if rest else ([], None)
            out.append([[[self.to_local(a), self.to_local(b)] for a, b in spans],
                        None if last is None else self.to_local(last), self.to_local(at),
                        [[self.to_local(a), self.to_local(b)] for a, b in idle],
                        None if idle_from is None else self.to_local(idle_from)])
        return out
