"""Everything the screen shows, folded from the engine's events. Pure: no Textual, no clock.

Folding an event is cheap (a few assignments, an append), so the sink does it as events arrive and
nothing ever queues; the screen reads this state on its own timer and draws only the latest
figures. Each event marks the parts of the screen it changed, so an unchanged panel is not redrawn.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from bench_dsl.model import Condition

from .live_conditions import ConditionBoard

# Parts of the screen, as marked by `changed`.
HEADER, FIGURES, TIME_CHART, USERS_CHART, TX, CONDITIONS, LOG, VERDICT = (
    "header", "figures", "time_chart", "users_chart", "tx", "conditions", "log", "verdict")
ALL_PARTS = frozenset({HEADER, FIGURES, TIME_CHART, USERS_CHART, TX, CONDITIONS, LOG, VERDICT})

MAX_POINTS = 1024  # throughput-over-time points kept; older ones are merged in pairs, extremes kept

# MySQL/MariaDB error codes a load test meets, for a short name beside the code in the log.
ERROR_NAMES = {
    1020: "record changed", 1040: "too many connections", 1062: "duplicate key", 1205: "lock wait timeout",
    1213: "deadlock", 1290: "read only", 1317: "query interrupted", 1836: "read only", 2002: "cannot connect",
    2003: "cannot connect", 2006: "server gone away", 2013: "lost connection",
}


@dataclass(slots=True)
class Point:
    """Throughput over (about) one second; after merging, over several, with their extremes."""

    t: float
    tps: float
    lo: float
    hi: float
    measured: bool
    step: int | None


@dataclass(frozen=True, slots=True)
class Boundary:
    t: float
    step: int
    users: int


@dataclass(frozen=True, slots=True)
class StepPoint:
    step: int
    users: int
    tps: float
    p90_ms: float | None
    complete: bool


@dataclass(slots=True)
class LogEntry:
    level: str  # info | warning | error
    message: str
    t: float | None
    count: int = 1
    code: int | None = None  # a MySQL error code (entries made from the intervals' error counts)
    where: set[str] = field(default_factory=set)  # the transactions that had that error


class LogBook:
    """The log pane: repeated lines folded into one with a count; a line that comes again moves to
    the end, so an error that keeps happening stays in sight."""

    def __init__(self, keep: int = 300) -> None:
        self.keep = keep
        self.entries: OrderedDict[tuple[str, object], LogEntry] = OrderedDict()

    def add(self, level: str, message: str, t: float | None) -> None:
        key = (level, message)
        e = self.entries.pop(key, None)
        if e is None:
            e = LogEntry(level, message, t)
        else:
            e.count += 1
            e.t = t
        self._put(key, e)

    def error(self, code: int, count: int, tx: str, t: float | None, message: str) -> None:
        key = ("code", code)
        e = self.entries.pop(key, None)
        if e is None:
            e = LogEntry("error", message, t, count=0, code=code)
        e.count += count
        e.t = t
        e.where.add(tx)
        if message:
            e.message = message
        self._put(key, e)

    def describe(self, code: int, message: str) -> None:
        e = self.entries.get(("code", code))
        if e is not None and message:
            e.message = message

    def _put(self, key: tuple[str, object], e: LogEntry) -> None:
        self.entries[key] = e
        while len(self.entries) > self.keep:
            self.entries.popitem(last=False)

    def tail(self, n: int) -> list[LogEntry]:
        if n <= 0:
            return []
        out = list(self.entries.values())
        return out[-n:]


class LiveState:
    """The run as the screen shows it. `apply` takes each event; `take_changes` tells the screen
    which parts to redraw since it last looked."""

    def __init__(self, conditions: tuple[Condition, ...] = (), linear: bool = False) -> None:
        self.changed: set[str] = set(ALL_PARTS)
        self.scenario = ""
        self.target = ""
        self.server_version = ""
        self.embedded = False
        self.plan: dict[str, Any] = {}
        self.transactions: list[str] = []
        self.t = 0.0  # the engine's elapsed seconds, from the latest event that carries it
        self.phase = "starting"
        self.step: int | None = None
        self.steps: int | None = None
        self.phase_users: int | None = None
        self.phase_seconds: float | None = None
        self.prepare: dict[str, Any] | None = None
        self.tick: dict[str, Any] | None = None
        self.holding = False
        self.remaining_s: float | None = None
        self.interval: dict[str, Any] | None = None
        self.step_so_far: dict[str, Any] | None = None
        self.last_step: dict[str, Any] | None = None
        self.series: list[Point] = []
        self.boundaries: list[Boundary] = []
        self.step_points: list[StepPoint] = []
        self.board = ConditionBoard(conditions, linear)
        self.fired: dict[str, Any] | None = None
        self.finished: dict[str, Any] | None = None
        self.stopping = False
        self.error_messages: dict[int, str] = {}
        self.log = LogBook()
        # the p90 the users chart draws: the transaction a `p90(...) > limit` condition names, with its limit
        self.p90_tx: str | None = None
        self.p90_limit_ms: float | None = None
        for c in conditions:
            if c.kind == "threshold" and c.metric.name == "latency" and c.metric.stat == "p" \
                    and c.metric.percentile == 90 and c.op in (">", ">="):
                self.p90_tx, self.p90_limit_ms = c.metric.transaction, c.limit * 1000
                break

    @classmethod
    def for_scenario(cls, sc: Any) -> LiveState:
        """From a parsed scenario (bench_dsl.model.Scenario): its conditions and kind of ramp."""
        return cls(tuple(sc.stop), linear=getattr(sc.ramp, "kind", "") == "linear")

    def take_changes(self) -> set[str]:
        out, self.changed = self.changed, set()
        return out

    @property
    def saturation_users(self) -> int | None:
        """The users of the last step that met every condition: final once the run finished, known
        as soon as a condition fired."""
        if self.finished is not None:
            return (self.finished.get("saturation") or {}).get("users")
        if self.fired is None:
            return None
        ok = [p for p in self.step_points if p.complete and p.step < (self.fired.get("step") or 0)]
        return ok[-1].users if ok else None

    # folding -------------------------------------------------------------------------------------
    def apply(self, type_: str, d: Mapping[str, Any]) -> None:
        t = d.get("t")
        if isinstance(t, int | float) and type_ != "checkpoint":
            self.t = max(self.t, float(t))
            self.changed.add(HEADER)
        handler = getattr(self, "_on_" + type_, None)
        if handler is not None:
            handler(d)

    def _on_started(self, d: Mapping[str, Any]) -> None:
        self.scenario = d.get("scenario", "")
        self.target = d.get("target", "")
        self.server_version = d.get("server_version", "")
        self.embedded = bool(d.get("embedded"))
        self.plan = dict(d.get("plan") or {})
        self.steps = self.plan.get("steps")
        self.transactions = list(d.get("transactions") or [])
        self.board.started(list(d.get("conditions") or []))
        self.changed |= {HEADER, TX, CONDITIONS, USERS_CHART}

    def _on_phase(self, d: Mapping[str, Any]) -> None:
        self.phase = d.get("phase", "")
        new_step = d.get("step")
        if new_step is not None and new_step != self.step:
            self.boundaries.append(Boundary(float(d.get("t") or self.t), new_step, int(d.get("users") or 0)))
            self.step_so_far = None
            self.changed |= {TIME_CHART, TX}
        self.step = new_step
        self.steps = d.get("steps", self.steps)
        self.phase_users = d.get("users")
        self.phase_seconds = d.get("seconds")
        self.remaining_s = d.get("seconds")
        self.changed |= {HEADER, USERS_CHART}

    def _on_prepare(self, d: Mapping[str, Any]) -> None:
        self.prepare = dict(d)
        self.changed.add(HEADER)

    def _on_tick(self, d: Mapping[str, Any]) -> None:
        self.tick = dict(d)
        self.holding = bool(d.get("holding"))
        self.remaining_s = d.get("remaining_s")
        tps = float(d.get("tps") or 0.0)
        self.series.append(Point(float(d.get("t") or self.t), tps, tps, tps,
                                 d.get("phase") in ("hold", "ramp"), d.get("step")))
        if len(self.series) > MAX_POINTS:
            self.series = _halve(self.series)
        self.board.on_tick(d)
        self.changed |= {HEADER, FIGURES, TIME_CHART, CONDITIONS}

    def _on_interval(self, d: Mapping[str, Any]) -> None:
        self.interval = dict(d)
        if d.get("step_so_far") is not None:
            self.step_so_far = d["step_so_far"]
        for name, tx in (d.get("transactions") or {}).items():
            for code, n in (tx.get("errors_by_code") or {}).items():
                c = int(code)
                self.log.error(c, int(n), name, d.get("t"), self.error_messages.get(c, ""))
                self.changed.add(LOG)
        self.board.on_interval(d)
        if self.board.linear and d.get("measured"):
            lat = _p90(d, self.p90_tx)
            self.step_points.append(StepPoint(d.get("step") or 0, int(d.get("users") or 0),
                                              float(d.get("tps") or 0.0), lat, True))
            self.changed.add(USERS_CHART)
        self.changed |= {TX, CONDITIONS}

    def _on_step(self, d: Mapping[str, Any]) -> None:
        self.last_step = dict(d)
        self.step_so_far = None
        if not self.board.linear:
            self.step_points.append(StepPoint(int(d.get("step") or 0), int(d.get("users") or 0),
                                              float(d.get("tps") or 0.0), _p90(d, self.p90_tx),
                                              bool(d.get("complete"))))
        self.board.on_step(d)
        self.changed |= {USERS_CHART, TX, CONDITIONS}

    def _on_fired(self, d: Mapping[str, Any]) -> None:
        self.fired = dict(d)
        self.board.on_fired(d)
        self.changed |= {CONDITIONS, USERS_CHART, HEADER}

    def _on_log(self, d: Mapping[str, Any]) -> None:
        self.log.add(d.get("level", "info"), d.get("message", ""), d.get("t"))
        self.changed.add(LOG)

    def _on_control(self, d: Mapping[str, Any]) -> None:
        if d.get("action") == "stop":
            self.stopping = True
        self.holding = bool(d.get("holding"))
        if self.holding:
            self.remaining_s = None
        self.changed.add(HEADER)

    def _on_checkpoint(self, d: Mapping[str, Any]) -> None:
        # the result document: only its error list is read, for the messages of the error codes
        for e in (d.get("document") or {}).get("errors") or []:
            code, msg = int(e.get("code", 0)), e.get("message") or ""
            if msg and self.error_messages.get(code) != msg:
                self.error_messages[code] = msg
                self.log.describe(code, msg)
                self.changed.add(LOG)

    def _on_finished(self, d: Mapping[str, Any]) -> None:
        self.finished = dict(d)
        self.phase = "finished"
        self.holding = False
        self.changed |= {HEADER, VERDICT, USERS_CHART, CONDITIONS}


def _p90(fig: Mapping[str, Any], tx: str | None) -> float | None:
    src = fig if tx is None else (fig.get("transactions") or {}).get(tx) or {}
    return (src.get("latency_ms") or {}).get("p90")


def _halve(points: list[Point]) -> list[Point]:
    """Merges neighbours in pairs, keeping each pair's extremes, so a long run keeps its peaks."""
    out: list[Point] = []
    for i in range(0, len(points) - 1, 2):
        a, b = points[i], points[i + 1]
        out.append(Point(b.t, (a.tps + b.tps) / 2, min(a.lo, b.lo), max(a.hi, b.hi), a.measured or b.measured,
                         b.step))
    if len(points) % 2:
        out.append(points[-1])
    return out
