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

from bench_dsl.core.cluster_info import ClusterInfo
from bench_dsl.core.live_figures import StepSoFar
from bench_dsl.engine import events as ev
from bench_dsl.engine.phases import Plan, PlannedRun
from bench_dsl.engine.profiles.registry import DEFAULT_AXIS, axis_named
from bench_dsl.engine.saturation import SaturationPoint
from bench_dsl.engine.stopping import StopReason
from bench_dsl.results import verdict

from .live_conditions import ConditionBoard

# Parts of the screen, as marked by `changed`.
HEADER, FIGURES, NODES, TIME_CHART, USERS_CHART, TX, CONDITIONS, LOG, VERDICT, RAN_OUT = (
    "header", "figures", "nodes", "time_chart", "users_chart", "tx", "conditions", "log", "verdict", "ran_out")
ALL_PARTS = frozenset({HEADER, FIGURES, NODES, TIME_CHART, USERS_CHART, TX, CONDITIONS, LOG, VERDICT, RAN_OUT})

MAX_POINTS = 1024  # throughput-over-time points kept; older ones are merged in pairs, extremes kept



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
    x: float | None = None  # where on the run's load axis (users, an offered rate); None: at its users


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

    def __init__(self) -> None:
        self.changed: set[str] = set(ALL_PARTS)
        self.scenario = ""
        self.target = ""
        self.server_version = ""
        self.embedded = False
        self.plan = PlannedRun(Plan((), 0))
        self.transactions: list[str] = []
        self.t = 0.0  # the engine's elapsed seconds, from the latest event that carries it
        self.phase = "starting"
        self.step: int | None = None
        self.steps: int | None = None
        self.phase_users: int | None = None
        self.phase_seconds: float | None = None
        self.prepare: dict[str, Any] | None = None
        self.cluster: ClusterInfo | None = None  # workers on a cluster: its nodes (Cluster events)
        self.tick: ev.LiveTick | None = None
        self.figures: frozenset[str] | None = None  # what the run measures (its catalog); None: not said
        self.holding = False
        self.remaining_s: float | None = None
        self.interval: dict[str, Any] | None = None
        self.step_so_far: StepSoFar | None = None
        self.last_step: dict[str, Any] | None = None
        self.series: list[Point] = []
        self.boundaries: list[Boundary] = []
        self.step_points: list[StepPoint] = []
        self.axis = DEFAULT_AXIS  # the run's load axis, once it begins
        self.board = ConditionBoard()
        self.linear = False  # a linear ramp: its users chart has a point per interval, not per step
        self.fired: StopReason | None = None
        self.saturation: SaturationPoint | None = None  # the judge's, as it stands (Saturation events)
        # what ran out in the last step that said (its number, its users, its bottleneck as the result holds it)
        self.ran_out: tuple[int, int, dict[str, Any]] | None = None
        self.finished: ev.Finished | None = None
        self.stopping = False
        self.error_messages: dict[int, str] = {}
        self.log = LogBook()
        # the p90 the users chart draws: the transaction a `p90(...) > limit` condition names, with its limit
        self.p90_tx: str | None = None
        self.p90_limit_ms: float | None = None

    def take_changes(self) -> set[str]:
        out, self.changed = self.changed, set()
        return out

    @property
    def saturation_point(self) -> float | None:
        """saturation_users' point on the run's load axis (a rate's: the offered rate)."""
        sat = self.finished.saturation if self.finished is not None else self.saturation
        return self.axis.at(sat.to_json()) if sat is not None and (sat.saturated or self.finished is not None) else None

    @property
    def saturation_users(self) -> int | None:
        """The saturation point the users chart marks, as the judge said it: once the climb has ended
        (a condition fired, the server refused users: `saturated`), and final when the run finished.
        Before that the judge's figure is only where the climb stands, not a saturation point."""
        sat = self.finished.saturation if self.finished is not None else self.saturation
        return sat.users if sat is not None and (sat.saturated or self.finished is not None) else None

    # folding -------------------------------------------------------------------------------------
    def apply(self, event: ev.Event) -> None:
        t = getattr(event, "t", None)
        if isinstance(t, int | float):
            self.t = max(self.t, float(t))
            self.changed.add(HEADER)
        match event:
            case ev.Started():
                self._on_started(event)
            case ev.PhaseBegan():
                self._on_phase(event)
            case ev.Prepare():
                self.prepare = event.to_json()
                self.changed.add(HEADER)
            case ev.Cluster():
                self.cluster = event.cluster
                self.changed.add(NODES)
            case ev.LiveTick():
                self._on_tick(event)
            case ev.Interval():
                self._on_interval(event.row.to_json(), event.step_so_far)
            case ev.StepEnded():
                self._on_step(event.to_json())
            case ev.Conditions():
                self.board.update(event)
                self.changed.add(CONDITIONS)
            case ev.Saturation():
                self.saturation = event.saturation
                self.changed.add(USERS_CHART)
            case ev.Fired():
                self.fired = event.stop
                self.board.on_fired(event)
                self.changed |= {CONDITIONS, USERS_CHART, HEADER}
            case ev.Log():
                self.log.add(event.level, event.message, event.t)
                self.changed.add(LOG)
            case ev.Control():
                self._on_control(event)
            case ev.ErrorMessages():
                self._on_error_messages(event)
            case ev.Begin():  # the load axis its charts are drawn against: users, or an offered rate
                self.axis = axis_named(event.scenario.load_axis)
                if event.figures:  # what the run measures (a result written before its catalog: not said)
                    self.figures = frozenset(f.name for f in event.figures)
            case ev.Finished():
                self.finished = event
                self.phase = "finished"
                self.holding = False
                self.changed |= {HEADER, VERDICT, USERS_CHART, CONDITIONS}

    def _on_started(self, e: ev.Started) -> None:
        self.scenario = e.scenario
        self.target = e.target
        self.server_version = e.server_version
        self.embedded = e.embedded
        self.plan = e.plan
        self.steps = self.plan.plan.steps or None  # a plan that says none (an empty one in a test)
        self.linear = any(p.kind == "ramp" for p in self.plan.plan.phases)
        self.transactions = list(e.transactions)
        self.board.started(e)
        for c in e.condition_specs:
            if c.kind == "threshold" and c.latency and c.metric.split("(", 1)[0] == "p90" and c.op in (">", ">="):
                self.p90_tx = c.metric[4:-1] if c.metric.startswith("p90(") else None
                self.p90_limit_ms = c.limit
                break
        self.changed |= {HEADER, TX, CONDITIONS, USERS_CHART}

    def _on_phase(self, e: ev.PhaseBegan) -> None:
        self.phase = e.phase
        if e.step is not None and e.step != self.step:
            self.boundaries.append(Boundary(float(e.t or self.t), e.step, int(e.users or 0)))
            self.step_so_far = None
            self.changed |= {TIME_CHART, TX}
        self.step = e.step
        self.steps = e.steps if e.steps is not None else self.steps
        self.phase_users = e.users
        self.phase_seconds = e.seconds
        self.remaining_s = e.seconds
        self.changed |= {HEADER, USERS_CHART}

    def _on_tick(self, e: ev.LiveTick) -> None:
        self.tick = e
        self.holding = e.holding
        self.remaining_s = e.remaining_s
        tps = float(e.figures.tps or 0.0)
        self.series.append(Point(float(e.t or self.t), tps, tps, tps, e.phase in ("hold", "ramp"), e.step))
        if len(self.series) > MAX_POINTS:
            self.series = _halve(self.series)
        self.changed |= {HEADER, FIGURES, TIME_CHART}

    def _on_interval(self, d: Mapping[str, Any], so_far: StepSoFar | None) -> None:
        self.interval = dict(d)
        if so_far is not None:
            self.step_so_far = so_far
        for name, tx in (d.get("transactions") or {}).items():
            for code, n in (tx.get("errors_by_code") or {}).items():
                c = int(code)
                self.log.error(c, int(n), name, d.get("t"), self.error_messages.get(c, ""))
                self.changed.add(LOG)
        if self.linear and d.get("measured"):
            lat = _p90(d, self.p90_tx)
            self.step_points.append(StepPoint(d.get("step") or 0, int(d.get("users") or 0),
                                              float(d.get("tps") or 0.0), lat, True, self.axis.at(d)))
            self.changed.add(USERS_CHART)
        self.changed |= {TX}

    def _on_step(self, d: Mapping[str, Any]) -> None:
        self.last_step = dict(d)
        self.step_so_far = None
        if not self.linear:
            self.step_points.append(StepPoint(int(d.get("step") or 0), int(d.get("users") or 0),
                                              float(d.get("tps") or 0.0), _p90(d, self.p90_tx),
                                              bool(d.get("complete")), self.axis.at(d)))
        self.changed |= {USERS_CHART, TX}
        if isinstance(b := d.get("bottleneck"), dict) and b.get("words"):  # what ran out, step by step
            ended = float(d.get("start_s") or 0.0) + float(d.get("seconds") or 0.0)
            self.log.add("info", f"s{d.get('step')}: {verdict.text(verdict.ran_out_line(b))}", ended)
            self.ran_out = (int(d.get("step") or 0), int(d.get("users") or 0), dict(b))
            self.changed |= {LOG, RAN_OUT}

    def _on_control(self, e: ev.Control) -> None:
        if e.action == "stop":
            self.stopping = True
        self.holding = e.holding
        if self.holding:
            self.remaining_s = None
        self.changed.add(HEADER)

    def _on_error_messages(self, e: ev.ErrorMessages) -> None:
        for code, msg in e.messages.items():
            if msg and self.error_messages.get(code) != msg:
                self.error_messages[code] = msg
                self.log.describe(code, msg)
                self.changed.add(LOG)


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
