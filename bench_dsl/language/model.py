"""The typed, validated scenario: what the engine runs. Built only by bench_dsl.language.validate; the
workload's part is defined by its kind's plugin (bench_dsl/workloads/)."""

from __future__ import annotations

import dataclasses
import math
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import ClassVar, Literal, Protocol

from bench_dsl.core.dsn import Dsn
from bench_dsl.core.errors import Diagnostic, Span
from bench_dsl.core.numbers import num
from bench_dsl.language.comparisons import Comparison
from bench_dsl.language.metric_decls import CORE_TABLE, MetricDecl
from bench_dsl.language.power_source import PowerSource

# Canonical units inside the model: durations and latencies in seconds, percentages as
# percent (80.0), throughputs in their own unit (per second or per minute: MetricDecl.per in
# bench_dsl/language/metric_decls.py), sizes in bytes, user counts as ints.


@dataclass(frozen=True, slots=True)
class Generator:
    """A value generator of a transaction or a fill: uniform(1, 100), zipf(1, 1000, 1.1) ..."""

    name: str
    args: tuple[int | float | str, ...]
    span: Span | None = None


@dataclass(frozen=True, slots=True)
class ServerSetting:
    name: str
    value: int | float | str  # sizes in bytes, on/off as ON/OFF, words as written
    text: str  # as written: 256M
    span: Span | None = None


class WorkloadSpec(Protocol):
    """A workload's validated options. Each kind has its own (SysbenchWorkload, TpccWorkload,
    CustomWorkload ...), defined by its plugin in bench_dsl/workloads/ and found by `kind` in
    bench_dsl/workloads/registry.py."""

    @property
    def kind(self) -> str: ...

    @property
    def transaction_names(self) -> tuple[str, ...]: ...


# What the language asks of any load (ConstantRamp, StepRamp, LinearRamp, RateLoad), so that the
# checks of conditions and configurations never test which one it is:
#   open_loop       a rate's arrivals, not users (the open-loop figures are its)
#   steps_compared  steps that a comparison (plateau, kink) compares, each with the one before
#   window()        the longest a sustained condition (`for D`) can span: seconds, what that is, its hint
#   seconds(warmup) how long its phases last, warmup included (counted, never listed)
#   point_units()   what a saturation limit (`expect saturation >= ...`) may be written in, when its
#                   point is not a users count: PointUnits
LoadWindow = tuple[float, str, str]


@dataclass(frozen=True, slots=True)
class PointUnits:
    """A load's saturation point in other units than users: each unit a limit may take (None: a
    plain number) and what one of it is in `unit`, what the point is ("a rate"), an example."""
    per: dict[str | None, float]
    unit: str
    plain: str  # the unit a plain number is in
    what: str
    example: str


def _whole_run(duration: float) -> LoadWindow:
    return duration, "the run", f"for {num(duration)}s at most, or a longer duration"


class _UsersForADuration:
    """What a load of users over a whole duration (constant, linear) says of itself."""

    __slots__ = ()
    duration: float
    open_loop: ClassVar[bool] = False
    steps_compared: ClassVar[bool] = False

    def window(self) -> LoadWindow:
        return _whole_run(self.duration)

    def seconds(self, warmup: float) -> float:
        return warmup + self.duration

    def point_units(self) -> PointUnits | None:
        return None


@dataclass(frozen=True, slots=True)
class ConstantRamp(_UsersForADuration):
    users: int
    duration: float
    kind: Literal["constant"] = "constant"


@dataclass(frozen=True, slots=True)
class StepRamp:
    start: int
    add: int | None  # step +4 users
    mul: float | None  # step x2
    settle: float
    hold: float
    max: int
    kind: Literal["step"] = "step"
    open_loop: ClassVar[bool] = False
    steps_compared: ClassVar[bool] = True

    def window(self) -> LoadWindow:
        return self.hold, "each step's hold", ("a sustained condition is judged within one step's hold: "
                                               f"for {num(self.hold)}s at most, or a longer hold")

    def seconds(self, warmup: float) -> float:
        return warmup + self.step_count() * (self.settle + self.hold)

    def point_units(self) -> PointUnits | None:
        return None

    def user_counts(self) -> list[int]:
        counts = [self.start]
        while True:
            cur = counts[-1]
            nxt = cur + self.add if self.add is not None else max(cur + 1, round(cur * (self.mul or 2)))
            if nxt > self.max:
                return counts
            counts.append(nxt)

    def step_count(self) -> int:
        """How many steps the ramp makes, counted without listing them (+1 up to 100,000 users)."""
        if self.add is not None:
            return (self.max - self.start) // self.add + 1
        return len(self.user_counts())


@dataclass(frozen=True, slots=True)
class LinearRamp(_UsersForADuration):
    start: int
    end: int
    over: float
    duration: float  # whole measured time; the users stay at `end` after `over`
    kind: Literal["linear"] = "linear"


@dataclass(frozen=True, slots=True)
class Pool:
    """`users max N [queue [Q]]`: the users that serve an open-loop rate's arrivals."""
    users: int
    queue: int  # arrivals that may wait for a free user (FIFO); 0: one that finds none is dropped


# What each latency of a rate run measures, said in its result: latency_ms is not a closed-loop one
RATE_LATENCIES = {"latency_ms": "response time: from when each transaction was due to its end",
                  "service_ms": "service time: from when it was sent to its end",
                  "lag_ms": "how late it was sent: sent minus due",
                  "queue_wait_ms": "how long it waited for a free user (users max N queue)"}


@dataclass(frozen=True, slots=True)
class RateLoad:
    """An open-loop load: transactions due at a rate (per second), whatever the replies, served by
    a pool of users. `fixed` for `duration`; `step` from `start` by `add` or x`mul` up to `end`,
    each step a `settle` and a `hold`; `linear` from `start` to `end` over `over`, `duration` in all.
    Every rate is of transactions of every kind per second (what is scheduled); one asked in a
    throughput the workload declares (`rate 20000 nopm`) keeps that `unit`, and what one of it is."""
    shape: Literal["fixed", "step", "linear"]
    start: float
    end: float
    pool: Pool
    poisson: bool = False  # arrivals of a Poisson process; else evenly spaced
    add: float | None = None
    mul: float | None = None
    settle: float = 0.0
    hold: float = 0.0
    over: float = 0.0
    duration: float = 0.0
    warmup_from: float | None = None  # `warmup D rate ...`: the warmup's own rate, from and to
    warmup_to: float | None = None
    # the unit the rates were asked in: tps (tpm is one too, as 60 of them), or a throughput of the
    # workload's own that counts some of its transactions (nopm: new orders that commit)
    unit: str = "tps"
    tps_per_unit: float = 1.0  # transactions of every kind per second that one of `unit` is
    counted: float = 1.0  # the share of the transactions run that `unit` counts (nopm: 0.4455)

    open_loop: ClassVar[bool] = True
    # a rate's steps are not compared (plateau, kink): what it achieved against what it was offered is
    steps_compared: ClassVar[bool] = False

    @property
    def kind(self) -> str:
        return f"rate_{self.shape}"

    def window(self) -> LoadWindow:
        if self.shape == "step":
            return self.hold, "each step's hold", f"for {num(self.hold)}s at most, or a longer hold"
        return _whole_run(self.duration)

    def seconds(self, warmup: float) -> float:
        return warmup + (self.step_count() * (self.settle + self.hold) if self.shape == "step" else self.duration)

    def point_units(self) -> PointUnits:
        """Its point is a rate: in tps, tpm or the unit it was asked in (a plain number: that unit,
        as the rate's own plain numbers)."""
        return PointUnits({"tps": 1.0, "tpm": 1 / 60, None: self.tps_per_unit, self.unit: self.tps_per_unit}, "tps",
                          self.unit, "a rate", f"saturation >= {num(self.asked(self.start))} {self.unit}")

    def asked(self, tps: float) -> float:
        """A rate scheduled (tps) in the unit it was asked in."""
        return tps / self.tps_per_unit

    def to_json(self) -> dict[str, object]:
        """The rate as asked and as scheduled, for the result's scenario: `asked` in `unit` and
        `scheduled_tps` in transactions of every kind per second, each from `start` to `end` (and a
        step ramp's `steps`)."""
        def both(f: Callable[[float], float]) -> dict[str, object]:
            out: dict[str, object] = {"start": round(f(self.start), 6), "end": round(f(self.end), 6)}
            if self.shape == "step":
                out["steps"] = [round(f(r), 6) for r in self.rates()]
            return out
        return {"shape": self.shape, "unit": self.unit, "asked": both(self.asked), "scheduled_tps": both(float),
                "tps_per_unit": self.tps_per_unit, "counted_pct": round(100 * self.counted, 4),
                "latencies": RATE_LATENCIES}

    def rates(self) -> list[float]:
        """The rate of each step (one for fixed and linear: the rate they end at). Each from the
        start, not from the step before: `step +0.1 tps` stays 0.3, not 0.30000000000000004."""
        if self.shape != "step":
            return [self.end]
        if self.add is not None:
            return [round(self.start + i * self.add, 9) for i in range(self.step_count())]
        return [round(self.start * (self.mul or 2) ** i, 9) for i in range(self.step_count())]

    def step_count(self) -> int:
        """How many steps the ramp makes, counted without listing them: `step x1.0000001` up to
        10 million tps has some 160 million, refused without being listed."""
        if self.shape != "step":
            return 1
        if self.add is not None:
            return int((self.end - self.start) / self.add + 1e-9) + 1
        return int(math.log(self.end / self.start) / math.log(self.mul or 2) + 1e-9) + 1


class Load(Protocol):
    """A load of a profile's own syntax (`load NAME { }`, bench_dsl.language.loads): what the
    language asks of every load, and its kind, by which the engine finds its profile."""

    @property
    def kind(self) -> str: ...

    @property
    def open_loop(self) -> bool: ...

    @property
    def steps_compared(self) -> bool: ...

    def window(self) -> LoadWindow: ...

    def seconds(self, warmup: float) -> float: ...

    def point_units(self) -> PointUnits | None: ...


Ramp = ConstantRamp | StepRamp | LinearRamp | RateLoad | Load


@dataclass(frozen=True, slots=True)
class Metric:
    """What a condition measures.

    name: the declared metric's model name (bench_dsl/language/metric_decls.py: MetricDecl.model_name):
    "latency" (with stat) for p95, avg ..., else the metric's own ("tps", "cpu", "status" ...).
    stat: for latency, "p" with a percentile, or "avg" / "max" / "min"; for status, "value" (the
    value at the window's end) or "rate" (its growth per second over the window).
    declared: the declaration it was checked against (a throughput is computed from it); not part
    of what the metric is (equal metrics compare equal however they were built).
    """

    name: str
    stat: str | None = None
    percentile: float | None = None
    transaction: str | None = None  # None: all transactions together
    source: str | None = None  # cpu: server | host | client
    declared: MetricDecl | None = field(default=None, compare=False, repr=False)

    @property
    def declaration(self) -> MetricDecl | None:
        """Its declaration: the one checked against, else the core metric of its name (None: a
        latency, several declarations share the name, or a name nothing declares)."""
        return self.declared or CORE_TABLE.of_model(self.name)

    def label(self) -> str:
        if self.name == "latency":
            base = f"p{_fmt_pct(self.percentile)}" if self.stat == "p" else str(self.stat)
        else:
            base = self.name
        arg = self.transaction or self.source
        return (f"{base}({arg})" if arg else base) + ("/s" if self.name == "status" and self.stat == "rate" else "")


def _fmt_pct(p: float | None) -> str:
    if p is None:
        return "?"
    return num(p)


@dataclass(frozen=True, slots=True)
class Condition:
    kind: str  # "threshold", or a comparison's word ("plateau", "kink", a plugin's: `comparison`)
    metric: Metric
    op: str | None  # threshold only
    limit: float  # seconds, percent, a throughput's own unit, users, factor (the metric's MetricDecl.limit)
    unit: str  # how to show values: its MetricDecl.unit ("ms", "%", "tps" ...), a comparison's ("%", "x")
    window: float | None  # `for D`: judged live over a sliding window of D seconds
    text: str  # as written in the file
    span: Span | None = None
    # `text` with each $name and env() replaced by its value ("p90 > $p90_limit" -> "p90 > 250ms"),
    # for reports that must show the limit a run used; the same as `text` when it has neither.
    resolved: str = ""
    comparison: Comparison | None = None  # what a condition that holds a step against the one before is

    def __post_init__(self) -> None:
        if not self.resolved:
            object.__setattr__(self, "resolved", self.text)

    def holds(self, value: float) -> bool:
        """True when the measured value crosses the limit (the condition 'fires')."""
        return _compare(value, self.op or ">", self.limit)


def _compare(value: float, op: str, limit: float) -> bool:
    match op:
        case ">":
            return value > limit
        case ">=":
            return value >= limit
        case "<":
            return value < limit
        case "<=":
            return value <= limit
        case "==":
            return value == limit
        case "!=":
            return value != limit
    raise ValueError(op)


@dataclass(frozen=True, slots=True)
class Fill:
    table: str
    rows: int
    columns: tuple[tuple[str, Generator | int | float | str], ...]
    span: Span | None = None


@dataclass(frozen=True, slots=True)
class SetupSql:
    sql: str
    span: Span | None = None


@dataclass(frozen=True, slots=True)
class Configuration:
    """One set-up of a study: what `vary` sets for it, each value as the file wrote it."""

    id: str  # c1, c2 ... in the order of the file's values
    values: tuple[tuple[str, str], ...]  # (innodb_io_capacity, 2000), (server.dir, /dev/shm), ($rows, 10K)
    settings: tuple[ServerSetting, ...] = ()  # the server settings among them
    server_dir: str | None = None
    lets: tuple[tuple[str, str], ...] = ()  # (rows, 10K): given to the file like -D rows=10K

    @property
    def label(self) -> str:
        return " ".join(f"{k}={v}" for k, v in self.values) or "as written"


@dataclass(frozen=True, slots=True)
class Study:
    """`vary` and `repeat`: the configurations a run measures, each `repeat` times."""

    configurations: tuple[Configuration, ...]
    repeat: int = 1
    zip: bool = False  # the lines' values paired instead of crossed
    keys: tuple[str, ...] = ()  # what varies, in the file's order

    def order(self) -> list[tuple[Configuration, int]]:
        """Interleaved (A B C A B C ...): a machine's drift spreads over every configuration alike."""
        return [(c, r) for r in range(1, self.repeat + 1) for c in self.configurations]


@dataclass(frozen=True, slots=True)
class Scenario:
    name: str
    file: str
    text: str
    parameters: dict[str, object]
    target: str | None  # as written; None: an embedded throwaway server
    target_from: str | None  # "env BENCH_DSN" etc., for messages
    seed: int | None  # None: each run draws its own when it starts (and records it)
    seed_given: bool
    server_settings: tuple[ServerSetting, ...]
    workload: WorkloadSpec
    ramp: Ramp
    warmup: float
    report_every: float
    stop: tuple[Condition, ...]
    expect: tuple[Condition, ...]
    output: str | None
    setup: tuple[Fill | SetupSql, ...] = field(default_factory=tuple)
    workers: int | None = None  # processes that run the virtual users; None: auto, one per core
    cluster: str | None = None  # a fleet by name (bench_dsl.fleet.registry.NAMED, e.g. ray); None: processes here
    on_worker_loss: str = "fail"  # a lost worker ends the run ("fail"), or the run goes on without it ("continue")
    target_dsn: Dsn | None = None  # `target`, parsed once, by validation
    study: Study | None = None  # `vary` / `repeat`: several configurations, each a run of its own
    server_dir: str | None = None  # where the throwaway server keeps its files (None: the temp dir)
    replicas: int = 0  # server { replicas = N }: throwaway replicas of the throwaway server
    replica_dsns: tuple[Dsn, ...] = ()  # `replica "mysql://..."`: replicas of the target
    monitor: str | None = None  # `monitor "http://db1:9100/metrics"`: the server host's node_exporter
    power: PowerSource | None = None  # `power rapl`...: where the server machine's power is read
    # Findings that do not stop a run (a TPC-C mix below the minimums of clause 5.2.3), each
    # rendered like an error with severity "warning".
    warnings: tuple[Diagnostic, ...] = field(default_factory=tuple)
    # a study's configurations that set a `let`, each as checked with the file (keyed by every -D and
    # let value it was checked with): planned and run from here instead of being checked again
    configured: dict[tuple[tuple[str, str], ...], Scenario | Deferred] = field(default_factory=dict, compare=False,
                                                                                repr=False)

    def seeded(self) -> Scenario:
        """The scenario a run runs: with the file's seed, or one drawn now (recorded with the run,
        so that giving it as `seed` repeats the run)."""
        if self.seed is not None:
            return self
        return dataclasses.replace(self, seed=random.SystemRandom().randrange(1, 2**31))


@dataclass(frozen=True, slots=True)
class Deferred:
    """A study's configuration found valid without its scenario being built (language/configurations.py:
    a part that reads its lets checked value by value): built when a run asks for it; its load is
    known now, for --plan (1,000 scenarios of 1,500 transactions each are 1.5 million transactions)."""

    build: Callable[[], Scenario]
    ramp: Ramp
    warmup: float
