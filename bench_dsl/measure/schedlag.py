"""How late bench-dsl's own processes get the CPU they ask for: the client's scheduling lag.

Why: a load generator short of CPU delays its users' next statement, and the server is then
blamed for a ceiling that is the client's. The client's CPU figure misses part of it: a process
far from 100% of a core can still wait for one (other processes on the machine, a hog, a
container's quota), and its CPU cannot say how long. So each process that runs users measures it
directly, with two probes a few times a second (nothing per transaction):

- thread: a daemon thread sleeps PERIOD and records how much longer than PERIOD it slept. The
  users run on a thread each (bench_dsl.blocking): the run-queue delay (and the wait for the GIL)
  this thread meets on waking is what a user's thread meets when its server's answer comes.
- loop: a timer on the event loop, and how late its callback runs. The loop connects the users,
  answers the coordinator, and on the event-loop executor runs the users' statements.

Each sample is the oversleep in milliseconds. `LagWindow` gathers the samples of many processes
over an interval, a step or the run and gives p50 / p99 / max per probe, overall and per process.
"""

from __future__ import annotations

import asyncio
import math
import threading
import time
from collections.abc import Mapping
from typing import Any

from bench_dsl.core import priority

PERIOD = 0.25  # seconds between two wakeups of each probe: 8 wakeups a second per process in all
# a worker's report the coordinator waited for longer than this was late: a tick (issue 39, 2)
REPORT_LATE_S = 1.0
PROBES = ("loop", "thread")

# what a process sends for one report: probe -> oversleeps in ms since the last take
Samples = dict[str, list[float]]


class LagProbe:
    """Both probes of one process. `take()` (from the event loop's thread) returns what they
    measured since the previous take."""

    def __init__(self, period: float = PERIOD) -> None:
        self.period = period
        self._lock = threading.Lock()  # the thread probe appends while the loop takes
        self._samples: Samples = {p: [] for p in PROBES}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def start(self, loop: asyncio.AbstractEventLoop | None = None) -> None:
        """Start both probes; the loop probe on `loop` (the running loop by default)."""
        self._loop = loop or asyncio.get_running_loop()
        self._stop.clear()
        self._arm()
        self._thread = threading.Thread(target=self._sleeper, name="bench-lag-probe", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        # not joined: it wakes within PERIOD and ends; a daemon never holds the process up

    def take(self) -> Samples:
        with self._lock:
            out, self._samples = self._samples, {p: [] for p in PROBES}
        return out

    def _record(self, probe: str, late_s: float) -> None:
        with self._lock:
            self._samples[probe].append(round(max(0.0, late_s) * 1000, 3))

    def _arm(self) -> None:
        assert self._loop is not None
        due = time.monotonic() + self.period
        self._timer = self._loop.call_later(self.period, self._fired, due)

    def _fired(self, due: float) -> None:
        # monotonic, not loop.time(): uvloop's clock is cached and in whole milliseconds
        self._record("loop", time.monotonic() - due)
        if not self._stop.is_set():
            self._arm()

    def _sleeper(self) -> None:
        while True:
            # at the users' niceness, set again each time: the worker sets it after this thread started
            priority.as_user()
            start = time.monotonic()
            if self._stop.wait(self.period):
                return
            self._record("thread", time.monotonic() - start - self.period)


def percentile(values: list[float], p: float) -> float:
    """Nearest-rank percentile of a non-empty list (what a reader recomputes from the samples)."""
    ordered = sorted(values)
    return ordered[max(1, math.ceil(len(ordered) * p / 100)) - 1]


def figures(values: list[float]) -> dict[str, float | int] | None:
    if not values:
        return None
    return {"p50": percentile(values, 50), "p90": percentile(values, 90), "p99": percentile(values, 99),
            "max": max(values), "samples": len(values)}


class LagWindow:
    """The samples of the client's processes over an interval, a step or the whole run."""

    def __init__(self) -> None:
        self.by_process: dict[str, Samples] = {}
        self.waits: dict[str, tuple[float, int | None]] = {}  # by worker: its longest report wait, runnable threads

    def add_waits(self, waits: Mapping[str, tuple[float, int | None]]) -> None:
        """How long the coordinator waited for each worker's report (WorkerReport.waits)."""
        for name, (waited, runnable) in waits.items():
            if name not in self.waits or waited > self.waits[name][0]:
                self.waits[name] = (waited, runnable)

    def add(self, samples: Mapping[str, Samples]) -> None:
        for name, probes in samples.items():
            mine = self.by_process.setdefault(name, {p: [] for p in PROBES})
            for probe, values in probes.items():
                if probe in mine:
                    mine[probe].extend(values)

    def worst_p90(self) -> float | None:
        """The highest p90 of any process's probe so far: what the live screen shows each tick, by
        the rule the judge and a replay apply to the recorded figures (worst_lag, below). Only the
        p90s, and each process's samples kept sorted in place (a tick's few new ones are the only
        run out of order, which sort() merges in one pass): the whole window's figures each tick
        made a step's tick cost grow with its workers times its length, seconds at 1,000 workers."""
        worst: float | None = None
        for probes in self.by_process.values():
            for values in probes.values():
                if values:
                    values.sort()
                    p90 = values[max(1, math.ceil(len(values) * 90 / 100)) - 1]
                    worst = p90 if worst is None or p90 > worst else worst
        return worst

    def overall(self, probe: str) -> list[float]:
        return [v for probes in self.by_process.values() for v in probes.get(probe, ())]

    def to_json(self) -> dict[str, object]:
        """`client_lag_ms` (all processes together) and `client_lag_ms_by_process`; nothing when no
        process measured anything (a fake fleet); `client_reports_late`, the workers whose reports
        were late, when one was."""
        late = {name: {"waited_s": round(waited, 1), "runnable_threads": runnable}
                for name, (waited, runnable) in sorted(self.waits.items()) if waited > REPORT_LATE_S}
        out: dict[str, object] = {"client_reports_late": late} if late else {}
        if not any(self.overall(p) for p in PROBES):
            return out
        return out | {"client_lag_ms": {p: figures(self.overall(p)) for p in PROBES},
                "client_lag_ms_by_process": {name: {p: figures(probes[p]) for p in PROBES}
                                             for name, probes in sorted(self.by_process.items())}}


def worst_lag(by_process: dict[str, dict[str, Any]] | None, min_samples: int = 0) -> tuple[float, str, str] | None:
    """(p90 ms, process, probe) of the probe with the highest p90 among `client_lag_ms_by_process`
    figures with at least `min_samples` samples; None when there are none. The one rule for the
    worst lag: the judge's verdict, the live tick and a replayed tick."""
    worst: tuple[float, str, str] | None = None
    for name, probes in (by_process or {}).items():
        for probe, fig in probes.items():
            if fig is not None and fig.get("samples", 0) >= min_samples and (worst is None or fig["p90"] > worst[0]):
                worst = (fig["p90"], name, probe)
    return worst
