"""The figures of an open-loop (`rate`) run's schedule, beside the transactions' own (TxStats):
how many arrivals were due (offered), how many a user started and how many found no free user
(dropped), how deep the queue got, how many users were busy, and three latencies of the schedule,
all transaction types together:

- lag: send minus due (how late the client sent what was due);
- service: completion minus send (what the server took, as a closed-loop run measures it);
- queue_wait: for the arrivals that found no free user and waited in the queue for one, send
  minus due.

The response time (completion minus due) is no field here: it is the transactions' latency
(TxStats, `latency_ms`), recorded from the due time by the users themselves. Each is recorded once,
from the moment it means: never with HdrHistogram's expected-interval correction on top (the due
times are the correction, measured instead of guessed).

An ArrivalStats comes from either schedule's take() (the C executor's _native.Schedule or
bench_dsl.fleet.pacing.AsyncSchedule), travels as JSON (`to_wire`) and merges: over time with
`merge`, across the worker processes of one interval with `merge(..., parallel=True)`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hdrh.histogram import HdrHistogram

from bench_dsl.core.figures import Figure
from bench_dsl.measure.txstats import TxStats, decoded, new_histogram

_HISTOGRAMS = ("lag", "service", "queue_wait")


def _f(name: str, unit: str, kind: str, merge: str, description: str, **kw: Any) -> Figure:
    return Figure(name, unit, kind, merge, "client", "figures", f"open-loop rate: {description}", **kw)  # type: ignore[arg-type]


TICK = ("tick",)  # Figure.live: a live tick carries it (the screen's headline of a rate run)

# An open-loop rate's figures (core.figures), in every row and the summary of a `rate` run; each
# latency (lag_ms, service_ms, queue_wait_ms) an object of percentiles beside them
FIGURES = (
    _f("offered_tps", "tps", "rate", "recompute", "arrivals due per second", live=TICK),
    _f("started_tps", "tps", "rate", "recompute", "arrivals a user sent, per second"),
    _f("achieved_tps", "tps", "rate", "recompute", "transactions completed per second", digits=3, live=TICK),
    _f("achieved_pct", "%", "ratio", "recompute", "achieved_tps as % of offered_tps (over 100 while a backlog "
       "is served)", digits=3, nullable=True),
    _f("offered", "", "count", "sum", "arrivals due: offered = started + dropped + queue_growth", integer=True),
    _f("started", "", "count", "sum", "arrivals a user sent", integer=True),
    _f("dropped", "", "count", "sum", "arrivals that found no free user and no room to queue: counted, never "
       "sent", integer=True),
    _f("queue_growth", "", "count", "sum", "arrivals waiting for a user at the end less those at the start "
       "(negative while a backlog is served)", integer=True, signed=True),
    _f("waiting_at_end", "", "gauge", "max", "arrivals due and waiting for a user at the end; the summary's: "
       "still queued when the run ended, never sent", integer=True),
    _f("dropped_pct", "%", "ratio", "recompute", "dropped, % of the arrivals", digits=3, nullable=True),
    _f("dropped_per_s", "/s", "rate", "recompute", "arrivals dropped per second", digits=2, live=TICK),
    _f("queued_max", "", "gauge", "max", "the most arrivals waiting for a user at once", integer=True, live=TICK),
    _f("busy", "users", "gauge", "recompute", "users inside a transaction, on average", live=TICK),
    _f("busy_max", "users", "gauge", "max", "the most users inside a transaction at once", integer=True),
    _f("idle", "users", "gauge", "recompute", "users waiting for an arrival, on average"),
    _f("busy_pct", "%", "ratio", "recompute", "the pool's users inside a transaction (busy, on average), % of "
       "the pool", nullable=True),
)


@dataclass(slots=True)
class ArrivalStats:
    """A schedule (one process's, or several merged) over some span of time."""

    offered: int = 0  # arrivals due
    started: int = 0  # arrivals a user started (their transactions' outcomes are TxStats')
    dropped: int = 0  # arrivals that found no free user and no room in the queue
    queued_max: int = 0  # the deepest queue
    # users inside a transaction and users waiting for an arrival, at a take: over several takes,
    # their mean (each take one sample); across processes, their sum
    busy: float = 0.0
    busy_max: int = 0
    idle: float = 0.0
    lag: HdrHistogram = field(default_factory=new_histogram)
    service: HdrHistogram = field(default_factory=new_histogram)
    queue_wait: HdrHistogram = field(default_factory=new_histogram)
    # exact sums of each histogram's values (us): the mean without walking the histogram
    lag_us: int = 0
    service_us: int = 0
    queue_wait_us: int = 0
    samples: int = 0  # takes merged over time (what busy and idle are the mean of)
    # arrivals offered and neither started nor dropped (waiting for a user), at the span's start and
    # its end: offered = started + dropped + (waiting - waiting_start), and what waits at a run's end
    # was never sent
    waiting_start: int = 0
    waiting: int = 0

    @classmethod
    def from_take(cls, d: dict[str, Any]) -> ArrivalStats:
        """From a schedule's take(): counts, and a histogram of microseconds per latency (encoded, with
        the sum of its values)."""
        out = cls(int(d["offered"]), int(d["started"]), int(d["dropped"]), int(d["queued_max"]),
                  float(d["busy"]), int(d["busy_max"]), float(d["idle"]), samples=1, waiting=int(d["waiting"]))
        for name in _HISTOGRAMS:
            if d[name]:
                setattr(out, name, decoded(d[name]))
            setattr(out, name + "_us", int(d[name + "_us"]))
        return out

    def merge(self, other: ArrivalStats, parallel: bool = False) -> None:
        """Add `other`: a later span of the same users (`parallel` False: the deepest queue and the
        most busy users of either, the mean of their busy and idle users), or the same span of
        other users, another worker process's (`parallel`: everything adds up; the deepest queues
        and most busy users of each process added are an upper bound of the whole's)."""
        self.offered += other.offered
        self.started += other.started
        self.dropped += other.dropped
        for name in _HISTOGRAMS:
            theirs = getattr(other, name)
            if theirs.get_total_count():
                getattr(self, name).add(theirs)
            setattr(self, name + "_us", getattr(self, name + "_us") + getattr(other, name + "_us"))
        if parallel:
            self.waiting_start += other.waiting_start
            self.waiting += other.waiting
            self.queued_max += other.queued_max
            self.busy_max += other.busy_max
            self.busy += other.busy
            self.idle += other.idle
            self.samples = max(self.samples, other.samples)
            return
        if not self.samples:  # the first span of this one: where it began
            self.waiting_start = other.waiting_start
        self.waiting = other.waiting
        self.queued_max = max(self.queued_max, other.queued_max)
        self.busy_max = max(self.busy_max, other.busy_max)
        n = self.samples + other.samples
        if n:
            self.busy = (self.busy * self.samples + other.busy * other.samples) / n
            self.idle = (self.idle * self.samples + other.idle * other.samples) / n
        self.samples = n

    def figures(self, seconds: float) -> dict[str, Any]:
        """For a result or a display: rates per second over `seconds`, the share of offered arrivals
        dropped (None when none was offered), and each latency as TxStats.latency_ms() gives it."""
        secs = seconds if seconds > 0 else 1.0
        return {
            "offered_tps": round(self.offered / secs, 1),
            "started_tps": round(self.started / secs, 1),
            "offered": self.offered,
            "started": self.started,
            "dropped": self.dropped,
            # offered = started + dropped + queue_growth; waiting_at_end: those not yet started (at a
            # run's end: never sent)
            "queue_growth": self.waiting - self.waiting_start,
            "waiting_at_end": self.waiting,
            "dropped_pct": round(100.0 * self.dropped / self.offered, 3) if self.offered else None,
            "dropped_per_s": round(self.dropped / secs, 2),
            "queued_max": self.queued_max,
            "busy": round(self.busy, 1),
            "busy_max": self.busy_max,
            "idle": round(self.idle, 1),
            **{name + "_ms": self._stats(name).latency_ms() for name in _HISTOGRAMS},
        }

    def tick_figures(self, seconds: float) -> dict[str, Any]:
        """What a live tick carries of the schedule (its FIGURES that say "tick"; achieved_tps is the
        tick's completions, which the tick counts)."""
        a = self.figures(seconds)
        return {f.name: a[f.name] for f in FIGURES if "tick" in f.live and f.name in a}

    def _stats(self, name: str) -> TxStats:
        hist: HdrHistogram = getattr(self, name)
        return TxStats(hist, hist.get_total_count(), total_us=getattr(self, name + "_us"))

    def to_wire(self) -> dict[str, object]:
        """JSON-safe: counts, and each histogram in HdrHistogram's compressed encoding (as TxStats')."""
        out: dict[str, object] = {k: getattr(self, k) for k in (
            "offered", "started", "dropped", "queued_max", "busy", "busy_max", "idle", "samples", "waiting_start",
            "waiting")}
        for name in _HISTOGRAMS:
            wire = self._stats(name).to_wire()
            out[name] = wire["hist"]
            out[name + "_us"] = wire["total_us"]
        return out

    @classmethod
    def from_wire(cls, d: dict[str, Any]) -> ArrivalStats:
        out = cls(int(d["offered"]), int(d["started"]), int(d["dropped"]), int(d["queued_max"]),
                  float(d["busy"]), int(d["busy_max"]), float(d["idle"]), samples=int(d.get("samples", 1)),
                  waiting_start=int(d["waiting_start"]), waiting=int(d["waiting"]))
        for name in _HISTOGRAMS:
            st = TxStats.from_wire({"hist": d[name], "count": 0, "queries": 0, "retries": 0, "errors": {},
                                    "total_us": d[name + "_us"]})
            setattr(out, name, st.hist)
            setattr(out, name + "_us", st.total_us)
        return out
