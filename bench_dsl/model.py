"""The typed, validated scenario: what the engine runs. Built only by bench_dsl.validate."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from bench_dsl.errors import Diagnostic, Span

# Canonical units inside the model: durations and latencies in seconds, percentages as
# percent (80.0), rates in their own unit (tps and qps per second, tpm and nopm per minute),
# sizes in bytes, user counts as ints.


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


@dataclass(frozen=True, slots=True)
class Query:
    sql: str  # as written, with :name parameters
    sql_native: str  # the same with ? placeholders, sent as a server-side prepared statement
    params: tuple[str, ...]
    span: Span | None = None


@dataclass(frozen=True, slots=True)
class TransactionSpec:
    name: str
    weight: float
    lets: tuple[tuple[str, Generator | int | float | str], ...]
    queries: tuple[Query, ...]
    retries: int = 0
    retry_on: frozenset[int] = frozenset()
    span: Span | None = None


SYSBENCH_TESTS = ("oltp_point_select", "oltp_read_only", "oltp_read_write", "oltp_write_only")


@dataclass(frozen=True, slots=True)
class SysbenchWorkload:
    """The OLTP tests of sysbench 1.0, with its option names and defaults."""

    test: str
    tables: int = 1
    table_size: int = 10000
    range_size: int = 100
    point_selects: int = 10
    simple_ranges: int = 1
    sum_ranges: int = 1
    order_ranges: int = 1
    distinct_ranges: int = 1
    index_updates: int = 1
    non_index_updates: int = 1
    delete_inserts: int = 1
    range_selects: bool = True
    skip_trx: bool = False
    create_secondary: bool = True
    rand_type: str = "special"  # sysbench 1.0's default --rand-type
    rand_spec_pct: float = 1.0
    rand_spec_res: float = 75.0
    rand_spec_iter: int = 12
    retries: int = 100  # sysbench restarts an event on 1213/1020/1205 without limit
    kind: Literal["sysbench"] = "sysbench"

    @property
    def transaction_names(self) -> tuple[str, ...]:
        return (self.test,)


@dataclass(frozen=True, slots=True)
class CustomWorkload:
    transactions: tuple[TransactionSpec, ...]
    kind: Literal["custom"] = "custom"

    @property
    def transaction_names(self) -> tuple[str, ...]:
        return tuple(t.name for t in self.transactions)


TPCC_TRANSACTIONS = ("new_order", "payment", "order_status", "delivery", "stock_level")
# TPC-C clause 5.2.3: the minimum mix; new_order takes what is left (45% here, as HammerDB and tpcc-mysql).
TPCC_DEFAULT_MIX = (("new_order", 45.0), ("payment", 43.0), ("order_status", 4.0), ("delivery", 4.0),
                    ("stock_level", 4.0))


@dataclass(frozen=True, slots=True)
class TpccWorkload:
    """TPC-C (clauses 1 to 5 of the specification), as tpcc-mysql and HammerDB run it on MySQL."""

    warehouses: int = 1
    mix: tuple[tuple[str, float], ...] = TPCC_DEFAULT_MIX  # percent per transaction, sums to 100
    keying_time: bool = False  # keying and think times of clause 5.2.5; off as in HammerDB
    procedures: bool = False  # the five transactions as stored procedures, one round trip each
    loader_connections: int | None = None  # None: chosen from the machine's cores
    retries: int = 10  # on deadlock (1213) and lock wait timeout (1205)
    kind: Literal["tpcc"] = "tpcc"

    @property
    def transaction_names(self) -> tuple[str, ...]:
        return TPCC_TRANSACTIONS


WorkloadSpec = SysbenchWorkload | CustomWorkload | TpccWorkload


@dataclass(frozen=True, slots=True)
class ConstantRamp:
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

    def user_counts(self) -> list[int]:
        counts = [self.start]
        while True:
            cur = counts[-1]
            nxt = cur + self.add if self.add is not None else max(cur + 1, round(cur * (self.mul or 2)))
            if nxt > self.max:
                return counts
            counts.append(nxt)


@dataclass(frozen=True, slots=True)
class LinearRamp:
    start: int
    end: int
    over: float
    duration: float  # whole measured time; the users stay at `end` after `over`
    kind: Literal["linear"] = "linear"


Ramp = ConstantRamp | StepRamp | LinearRamp


@dataclass(frozen=True, slots=True)
class Metric:
    """What a condition measures.

    name: "latency" (with stat), "tps", "tpm", "qps", "nopm", "error_rate", "cpu", "saturation".
    "nopm" is new orders per minute (TPC-C's tpmC): committed new_order transactions only.
    stat: for latency, "p" with a percentile, or "avg" / "max" / "min".
    """

    name: str
    stat: str | None = None
    percentile: float | None = None
    transaction: str | None = None  # None: all transactions together
    source: str | None = None  # cpu: server | host | client

    def label(self) -> str:
        if self.name == "latency":
            base = f"p{_fmt_pct(self.percentile)}" if self.stat == "p" else str(self.stat)
        else:
            base = self.name
        arg = self.transaction or self.source
        return f"{base}({arg})" if arg else base


def _fmt_pct(p: float | None) -> str:
    if p is None:
        return "?"
    return str(int(p)) if float(p).is_integer() else str(p)


@dataclass(frozen=True, slots=True)
class Condition:
    kind: Literal["threshold", "plateau", "kink"]
    metric: Metric
    op: str | None  # threshold only
    limit: float  # seconds, percent, the rate's own unit (tps per second, tpm and nopm per minute), users, factor
    unit: str  # how to show values: "ms", "%", "tps", "tpm", "qps", "nopm", "users", "x", ""
    window: float | None  # `for D`: judged live over a sliding window of D seconds
    text: str  # as written in the file
    span: Span | None = None
    # `text` with each $name and env() replaced by its value ("p90 > $p90_limit" -> "p90 > 250ms"),
    # for reports that must show the limit a run used; the same as `text` when it has neither.
    resolved: str = ""

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
class Scenario:
    name: str
    file: str
    text: str
    parameters: dict[str, object]
    target: str | None  # None: an embedded throwaway server
    target_from: str | None  # "env BENCH_DSN" etc., for messages
    seed: int
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
    # Findings that do not stop a run (a TPC-C mix below the minimums of clause 5.2.3), each
    # rendered like an error with severity "warning".
    warnings: tuple[Diagnostic, ...] = field(default_factory=tuple)
