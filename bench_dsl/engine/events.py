"""What the engine tells its sinks: one dataclass per event, in the order a run emits them.

Sinks (the console, the JSON result and event-stream writers, the live screen) only read these;
they never call back into the run. A sink that has something to say (a result file it could not
write) returns events from `emit`, which the bus publishes to every sink like the engine's own.

Every event has a `type` (its name in a JSON event stream) and `to_json()`: the object a `--jsonl`
line holds. Events carry types, not dicts: an interval's and a step's row (bench_dsl.engine.rows),
a tick's figures and the step so far beside an interval (bench_dsl.core.live_figures), why the run
stops (bench_dsl.engine.stopping.StopReason); the figures a row carries whole (throughput, latency,
errors, CPU, per transaction) are the aggregate's, as the result stores them.

Displays show what the events say and work nothing out: the judge's figures (ConditionState's gain
and ratio, the Saturation event), and one name for a phase (PhaseBegan.label, phase_label) that the run's
log, the screen and the console all use. The verdict's words are bench_dsl.results.verdict.

The order of a run:
    Begin                      the scenario, before anything starts (the result document's head)
    Log*                       at any point: a line for the person watching (level info|warning|error)
    Started                    the server is up: its version, settings, the plan, the conditions
    PhaseBegan("prepare") Prepare*  loading data, with progress
    Prepared                   what the load did (or that the data was already there)
    Workers                    how many processes run the users
    Cluster                    with workers on a cluster: its nodes (again at the end, with their users)
    then, per phase of the plan:
        PhaseBegan             warmup | settle | hold | ramp begins
        LiveTick*              about once a second: cheap figures (no percentiles) for live displays
        Conditions*            the judge's view of every stop condition: value, state (a comparison's figure)
        Interval*              every `report every`: the figures of that interval
        Totals*                the measured run so far (with its histograms), at each interval
        StepEnded              a step's end: its figures, the server's counters, the verdicts
        Fired                  a stop condition fired (or the server refused connections)
        WorkerLostEvent        workers lost while the run goes on without them (on worker loss continue)
        Saturation             the saturation point as it stands (after each judged step/interval): the
                               point itself once `saturated` (a condition fired), only then shown as one
    ErrorMessages              when the users met an error code not described before
    Power                      the power source read, or why the run has no power figure
    Control                    a front end's request (stop, next step, hold) taking effect
    Finished                   the end: status, exit code, verdict, expectations, summary
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import ClassVar, Protocol

from bench_dsl.core.cluster_info import ClusterInfo
from bench_dsl.core.figures import Figures
from bench_dsl.core.json_object import Json
from bench_dsl.core.live_figures import StepSoFar, TickFigures
from bench_dsl.core.prepare_report import PrepareReport
from bench_dsl.core.server_info import ServerInfo
from bench_dsl.engine.condition_states import ConditionSpec, ConditionState
from bench_dsl.engine.expectation import Expectation
from bench_dsl.engine.machine import Machine
from bench_dsl.engine.phases import PlannedRun
from bench_dsl.engine.rows import IntervalRow, StepRow
from bench_dsl.engine.saturation import SaturationPoint
from bench_dsl.engine.scenario_info import ScenarioInfo
from bench_dsl.engine.stopping import StopReason
from bench_dsl.engine.study_configuration import StudyConfiguration


class Event:
    """Base of every event. `type` names it in a JSON stream."""

    __slots__ = ()
    type: ClassVar[str] = "event"

    def to_json(self) -> Json:
        out: Json = {"type": self.type}
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            out[f.name] = getattr(self, f.name)
        return out


@dataclass(frozen=True, slots=True)
class Begin(Event):
    """The run begins: what the result document says before anything is measured."""
    type: ClassVar[str] = "begin"
    tool_version: str
    started_at: str
    scenario: ScenarioInfo  # name, file, text and parameters (passwords removed), seed, workload, plan
    machine: Machine
    configuration: StudyConfiguration | None = None  # which configuration of a study (`vary`/`repeat`), if one
    figures: Figures = field(default_factory=Figures)  # every figure the run measures (core.figures)

    def to_json(self) -> Json:
        return {"type": self.type, "tool_version": self.tool_version, "started_at": self.started_at,
                "scenario": self.scenario.to_json(), "machine": self.machine.to_json(),
                "configuration": self.configuration.to_json() if self.configuration is not None else None,
                "figures": self.figures.to_json()}


@dataclass(frozen=True, slots=True)
class Started(Event):
    type: ClassVar[str] = "started"
    scenario: str
    target: str  # password removed
    server_version: str
    embedded: bool
    plan: PlannedRun
    transactions: list[str]
    conditions: list[str]  # as written in the file
    condition_specs: tuple[ConditionSpec, ...] = ()
    server: ServerInfo | None = None  # the result document's "server" (not in a stream: a result's alone)

    def to_json(self) -> Json:
        return {"type": self.type, "scenario": self.scenario, "target": self.target,
                "server_version": self.server_version, "embedded": self.embedded, "plan": self.plan.to_json(),
                "transactions": self.transactions, "conditions": self.conditions,
                "condition_specs": [c.to_json() for c in self.condition_specs]}


@dataclass(frozen=True, slots=True)
class PhaseBegan(Event):
    type: ClassVar[str] = "phase"
    phase: str  # prepare | warmup | settle | hold | ramp
    step: int | None
    steps: int
    users: int
    seconds: float | None
    users_end: int | None = None
    t: float | None = None

    def to_json(self) -> Json:
        out: Json = {"type": self.type, "phase": self.phase, "step": self.step, "steps": self.steps,
                     "users": self.users, "seconds": self.seconds}
        if self.phase != "prepare":
            out["users_end"] = self.users_end
            out["t"] = self.t
        return out

    def label(self) -> str:
        """The phase as every display names it: "warmup", "step 3/6 hold"."""
        return phase_label(self.phase, self.step, self.steps)

    def line(self) -> str:
        """The log line that says it begins: "step 3/6 hold: 4 users for 5s", "step 1/1 ramp: 1 -> 32 users ..."."""
        users = self.users if self.users_end in (None, self.users) else f"{self.users} -> {self.users_end}"
        return f"{self.label()}: {users} users" + (f" for {self.seconds:g}s" if self.seconds is not None else "")


def phase_label(phase: str, step: int | None, steps: int | None = None, short: bool = False) -> str:
    """A phase's name on every display: "warmup", "step 3/6 hold"; `short`, the console's column: "s3 hold"."""
    if step is None:
        return phase
    return f"s{step} {phase}" if short else f"step {step}/{steps} {phase}"


@dataclass(frozen=True, slots=True)
class Prepare(Event):
    """Loading progress: rows written of the rows the load will write."""
    type: ClassVar[str] = "prepare"
    done: int
    total: int
    rows_per_s: float
    eta_s: float | None
    t: float


@dataclass(frozen=True, slots=True)
class Prepared(Event):
    type: ClassVar[str] = "prepared"
    report: PrepareReport  # the result document's "prepare"

    def to_json(self) -> Json:
        return {"type": self.type, "report": self.report.to_json()}


@dataclass(frozen=True, slots=True)
class Workers(Event):
    type: ClassVar[str] = "workers"
    processes: int
    fleet: str = ""  # the kind that runs them, by its name in bench_dsl.fleet.registry ("" in a stream of before)


@dataclass(frozen=True, slots=True)
class Cluster(Event):
    """Where a cluster's users run (workers ray; core.cluster_info): its kind, its nodes, actors_ready_s
    and the workers lost. Sent once the actors are ready, and again when they stopped (the users each
    node ran, what was lost)."""
    type: ClassVar[str] = "cluster"
    cluster: ClusterInfo

    def to_json(self) -> Json:
        return {"type": self.type, "cluster": self.cluster.to_json()}


@dataclass(frozen=True, slots=True)
class WorkerLostEvent(Event):
    """Workers lost mid-run while the run goes on without them (on worker loss continue)."""
    type: ClassVar[str] = "worker_lost"
    t: float
    reasons: list[str]
    workers: int  # those left
    users: int  # the users they run


@dataclass(frozen=True, slots=True)
class LiveTick(Event):
    """About one second of the run, with the cheap figures a live display needs (no percentiles)."""
    type: ClassVar[str] = "tick"
    t: float
    phase: str
    step: int | None
    users: int  # the users that had a connection
    holding: bool
    remaining_s: float | None  # None while held
    figures: TickFigures  # errors, retries, CPU, transactions; the declared (tps, tpm, qps, a workload's rates)

    def to_json(self) -> Json:
        return {"type": self.type, "t": self.t, "phase": self.phase, "step": self.step, "users": self.users,
                "holding": self.holding, "remaining_s": self.remaining_s, **self.figures.to_json()}


@dataclass(frozen=True, slots=True)
class Interval(Event):
    """One report interval (`report every`), as the result document's intervals hold it."""
    type: ClassVar[str] = "interval"
    row: IntervalRow
    step_so_far: StepSoFar | None = None  # for live displays: the step so far beside this interval

    def to_json(self) -> Json:
        out: Json = self.row.to_json()
        if self.step_so_far is not None:
            out["step_so_far"] = self.step_so_far.to_json()
        return out


@dataclass(frozen=True, slots=True)
class Totals(Event):
    """The run so far, at each interval and at the end: the result document's summary (the
    measured part, with histograms), how the users sent statements, why it stops (if it does)."""
    type: ClassVar[str] = "totals"
    summary: Json | None
    executor: str | None
    stop: StopReason | None
    elapsed_s: float

    def to_json(self) -> Json:
        return {"type": self.type, "summary": self.summary, "executor": self.executor,
                "stop": self.stop.to_json() if self.stop is not None else None, "elapsed_s": self.elapsed_s}


@dataclass(frozen=True, slots=True)
class StepEnded(Event):
    """A step ended (complete, or cut short by a stop): as the result document's steps hold it."""
    type: ClassVar[str] = "step"
    row: StepRow

    def to_json(self) -> Json:
        return self.row.to_json(histograms=False)


@dataclass(frozen=True, slots=True)
class Conditions(Event):
    type: ClassVar[str] = "conditions"
    t: float
    states: tuple[ConditionState, ...]

    def to_json(self) -> Json:
        return {"type": self.type, "t": self.t, "states": [s.to_json() for s in self.states]}


@dataclass(frozen=True, slots=True)
class Fired(Event):
    """Why the run stops climbing: a stop condition fired, or the server refused connections."""
    type: ClassVar[str] = "fired"
    stop: StopReason

    def to_json(self) -> Json:
        return {"type": self.type, **self.stop.to_json()}


@dataclass(frozen=True, slots=True)
class Saturation(Event):
    """The judge's saturation point as it stands: until `saturated`, only where the climb stands."""
    type: ClassVar[str] = "saturation"
    saturation: SaturationPoint

    def to_json(self) -> Json:
        return {"type": self.type, "saturation": self.saturation.to_json()}


@dataclass(frozen=True, slots=True)
class Power(Event):
    """The power of the server's machine: the source read (None: the scenario has no `power`), and
    why the run has no power figure (None: it has one). Said once, as the run ends."""
    type: ClassVar[str] = "power"
    source: str | None
    no_power_figure: str | None


@dataclass(frozen=True, slots=True)
class Log(Event):
    type: ClassVar[str] = "log"
    level: str  # info | warning | error
    message: str  # passwords removed
    t: float | None = None


@dataclass(frozen=True, slots=True)
class ErrorMessages(Event):
    """What the server said with error codes the users met (code -> message)."""
    type: ClassVar[str] = "error_messages"
    messages: dict[int, str]


@dataclass(frozen=True, slots=True)
class Control(Event):
    type: ClassVar[str] = "control"
    action: str  # stop | next | hold
    holding: bool
    t: float


@dataclass(frozen=True, slots=True)
class Finished(Event):
    type: ClassVar[str] = "finished"
    status: str
    exit_code: int
    saturation: SaturationPoint | None
    stop: StopReason | None
    expect: list[Expectation]
    summary: Json | None  # without histograms
    elapsed_s: float
    finished_at: str = ""
    executor: str | None = None
    workload_report: Json | None = None

    def to_json(self) -> Json:
        return {"type": self.type, "status": self.status, "exit_code": self.exit_code,
                "saturation": self.saturation.to_json() if self.saturation is not None else None,
                "stop": self.stop.to_json() if self.stop is not None else None,
                "expect": [e.to_json() for e in self.expect],
                "summary": self.summary, "elapsed_s": self.elapsed_s}


EVENT_TYPES: dict[str, type[Event]] = {c.type: c for c in (
    Begin, Started, PhaseBegan, Prepare, Prepared, Workers, Cluster, WorkerLostEvent, LiveTick, Interval, Totals,
    StepEnded, Conditions, Fired, Saturation, Power, Log, ErrorMessages, Control, Finished)}


def from_json(d: Json) -> Event:
    """An event back from its JSON form (a recorded stream replayed to a display)."""
    d = dict(d)
    kind = EVENT_TYPES[d.pop("type")]
    if kind is LiveTick:
        head = {k: d.pop(k) for k in ("t", "phase", "step", "users", "holding", "remaining_s")}
        return LiveTick(**head, figures=TickFigures.from_json(d))
    if kind is Interval:
        so_far = StepSoFar.from_json(d.pop("step_so_far", None))
        return Interval(IntervalRow.from_json(d), so_far)
    if kind is StepEnded:
        return StepEnded(StepRow.from_json(d))
    if kind is Fired:
        reason = StopReason.from_json(d)
        if reason is None:
            raise ValueError("a fired event without its reason")
        return Fired(reason)
    if kind in (Totals, Finished):
        d["stop"] = StopReason.from_json(d.get("stop"))
    if kind is Finished:
        d["expect"] = [Expectation.from_json(e) for e in d.get("expect") or [] if isinstance(e, dict)]
    if kind in (Saturation, Finished) and isinstance(d.get("saturation"), dict):
        d["saturation"] = SaturationPoint.from_json(d["saturation"])
    if kind is Started:
        specs = tuple(ConditionSpec.from_json(s) for s in d.pop("condition_specs", []))
        return Started(**d | {"plan": PlannedRun.from_json(d.get("plan")),
                              "server": ServerInfo.from_json(d.get("server"))}, condition_specs=specs)
    if kind is Begin:
        return Begin(**d | {"figures": Figures.from_json(d.get("figures")),
                            "scenario": ScenarioInfo.from_json(d.get("scenario")),
                            "machine": Machine.from_json(d.get("machine")),
                            "configuration": StudyConfiguration.from_json(d.get("configuration"))})
    if kind is Prepared:
        report = PrepareReport.from_json(d.get("report"))
        if report is None:
            raise ValueError("a prepared event without its report")
        return Prepared(report)
    if kind is Cluster:
        cluster = ClusterInfo.from_json(d.get("cluster"))
        if cluster is None:
            raise ValueError("a cluster event without its cluster")
        return Cluster(cluster)
    if kind is Conditions:
        return Conditions(d["t"], tuple(ConditionState.from_json(s) for s in d["states"]))
    if kind is ErrorMessages:
        return ErrorMessages({int(k): v for k, v in d["messages"].items()})
    return kind(**d)


class Sink(Protocol):
    def emit(self, event: Event) -> Iterable[Event] | None:
        """Must not block the engine for long: it runs between ticks. May return events of its own
        (a warning that a file could not be written), which every sink then receives."""

    def close(self) -> None: ...
