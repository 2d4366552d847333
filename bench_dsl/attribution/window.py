"""What a rule sees: the saturated step S and its baseline B as the result records them (a step row
of a result JSON), the time profile of each, and what the caller knows of the machine. Reading a
row goes through Step, so that a figure absent or null reads as None and a rule says "no signal"
instead of failing on a result written before its figure existed."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bench_dsl.attribution.model import Outcome, Profile, r3
from bench_dsl.core.numbers import num

# The extra figures the rules read when a step row carries them (the package's docstring says who
# should record each); a result without them gets "no signal" from the rules that need them.
PRESSURE = "pressure"  # {"cpu"|"io"|"memory": {"some": %, "full": %}} of the step's wall time
SERVER_SCHED = "server_sched"  # {"run_delay_s_per_s", "throttled_s_per_s"} of mysqld's threads
PROCESSLIST = "processlist"  # {"samples", "active_mean", "states": {state: mean sessions}}
THREAD_POOL = "thread_pool"  # {"samples", "queued_share", "queue_mean"}
NETWORK = "network"  # {"rtt_ms", "retransmits_per_s", "bytes_per_s", "link_bytes_per_s"}
LOCK_WAITS = "lock_waits"  # {"samples", "table", "index", "share"}: the hot row's table seen most
# the processlist's states of a session waiting for a table's lock (ATTRIBUTION.md: the only
# metadata-lock signal without performance_schema)
LOCK_STATES = ("Waiting for table metadata lock", "Waiting for table level lock", "Waiting for global read lock",
               "Waiting for backup lock")
# a session waiting in GET_LOCK for a named lock another session holds (MariaDB's and MySQL's word)
USER_LOCK_STATES = ("User lock",)


@dataclass(frozen=True, slots=True)
class Context:
    """What the step row does not say and the caller knows."""

    # the cores of the machine cpu.server is a % of: result.machine.cpu_count for a server on this
    # machine (bench_dsl.measure.cpu divides the process's CPU by them); the server host's cores
    # with monitor (node_exporter), where cpu.server is that host's whole CPU
    cores: float | None = None
    # the cores mysqld may use (its affinity, a cgroup's quota), when known; else all of `cores`.
    # Host CPU % understates a mysqld held to fewer cores: this is what the server CPU rule divides by.
    allowed_cores: float | None = None
    shared_machine: bool | None = None  # client and server on one machine (None: not known)
    refused: int = 0  # users refused a connection (error 1040) in the step
    client_limit: str | None = None  # bench_dsl.engine.client_limit.why() for this step, if it said one
    # the engine ran that probe on this step, so that no client_limit means "not the client"; a
    # caller that did not (a replay of an older result) leaves the client without a signal
    client_probed: bool = False
    client_cores: float | None = None  # the CPU bench-dsl's processes may use, in cores, when known
    max_connections: int | None = None  # the server's max_connections


class Step:
    """A step row read safely: every figure is a finite number or None."""

    def __init__(self, row: Mapping[str, Any]) -> None:
        self.row = row

    def get(self, *path: str) -> Any:
        at: Any = self.row
        for key in path:
            if not isinstance(at, Mapping) or key not in at:
                return None
            at = at[key]
        return at

    def num(self, *path: str) -> float | None:
        return finite(self.get(*path))

    def numbers(self, *path: str) -> dict[str, float]:
        """A figure by name (each process's CPU, each state's sessions): its finite numbers."""
        got = self.get(*path)
        if not isinstance(got, Mapping):
            return {}
        return {str(k): x for k, v in got.items() if (x := finite(v)) is not None}

    @property
    def number(self) -> int | None:
        n = self.get("step")
        return n if isinstance(n, int) else None

    @property
    def tps(self) -> float | None:
        return self.num("tps")

    @property
    def open_loop(self) -> bool:
        return "offered_tps" in self.row or "rate_tps" in self.row

    def per_s(self, var: str) -> float | None:
        return self.num("server_status", var, "per_s")

    def value(self, var: str) -> float | None:
        return self.num("server_status", var, "value")

    def readings(self, var: str) -> list[float]:
        got = self.get("server_status", var, "readings")
        if not isinstance(got, list):
            return []
        return [x for v in got if (x := finite(v)) is not None]

    def gauge(self, var: str) -> tuple[float | None, str | None]:
        """A gauge over the step (Threads_running): its mean when the engine recorded one, else the
        mean of its readings, else the one value read at the end, said as such: a point sample."""
        if (mean := self.num("server_status", var, "mean")) is not None:
            return mean, "mean"
        if got := self.readings(var):
            return sum(got) / len(got), "readings"
        if (v := self.value(var)) is not None:
            return v, "one reading"
        return None, None

    def cpu(self, source: str) -> float | None:
        return self.num("cpu", source)

    def latency_avg_ms(self) -> float | None:
        """A transaction's mean time in flight: from when it was sent (an open loop's latency_ms
        counts from when it was due, queueing for a user included)."""
        if self.open_loop and (service := self.num("service_ms", "avg")) is not None:
            return service
        return self.num("latency_ms", "avg")

    def client_lag_p90(self) -> float | None:
        """The worse probe's p90 of bench-dsl's scheduling lag, all its processes together."""
        got = [v for probe in ("loop", "thread") if (v := self.num("client_lag_ms", probe, "p90")) is not None]
        return max(got) if got else None


@dataclass(frozen=True, slots=True)
class Window:
    s: Step
    b: Step | None
    profile: Profile
    b_profile: Profile | None
    ctx: Context

    def allowed_cores(self) -> float | None:
        return self.ctx.allowed_cores if self.ctx.allowed_cores is not None else self.ctx.cores

    def cpu_util(self, step: Step | None = None) -> float | None:
        """The server's CPU as a share of the cores it may use (not of the host's)."""
        step = step or self.s
        pct, cores, allowed = step.cpu("server"), self.ctx.cores, self.allowed_cores()
        if pct is None or not cores or not allowed:
            return None
        return pct * cores / 100.0 / allowed

    def waiting_in(self, states: tuple[str, ...]) -> dict[str, float] | None:
        """Sessions the processlist saw in each of these states, on average (None: not sampled)."""
        seen = self.s.numbers(PROCESSLIST, "states")
        if not isinstance(self.s.get(PROCESSLIST, "states"), Mapping):
            return None
        return {k: v for k, v in seen.items() if k in states}

    def lock_waiting(self) -> float | None:
        """Sessions the processlist saw waiting for a lock no row lock counts, on average: a table's,
        a metadata lock, a named lock (GET_LOCK). None: not sampled."""
        each = self.waiting_in(LOCK_STATES + USER_LOCK_STATES)
        return None if each is None else sum(each.values())

    def other_share(self) -> float | None:
        """The profile's other share (in the server, neither on CPU nor on a row lock) less the
        sessions the processlist saw waiting for a table's or a named lock: what is left for I/O,
        fsync and the like. Such a lock's waiters run in the server off CPU, and are no disk's."""
        other, n = self.profile.other_share, self.profile.sessions_in_flight
        if other is None or not n or not (waiting := self.lock_waiting()):
            return other
        return r3(max(0.0, other - waiting / n))

    def other_of_active(self) -> float | None:
        return self.profile.of_active(self.other_share())

    def pressure(self, kind: str, which: str = "some") -> float | None:
        return self.s.num(PRESSURE, kind, which)


@dataclass(frozen=True, slots=True)
class Rule:
    """One class: its name in the JSON, its title in words, and its judge. A new class is one
    module that defines RULE and one line in bench_dsl.attribution.registry."""

    cls: str
    title: str
    judge: Callable[[Window], Outcome]
    # classes this one is a symptom of when both are found (the disk is busy because the buffer
    # pool misses): it is listed, but neither wins nor lowers the cause's confidence
    symptom_of: tuple[str, ...] = ()


def baseline(step: Mapping[str, Any], earlier: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """B: the latest earlier step at half S's throughput or less (the nearest to S that is still
    unsaturated: DBSherlock's normal window), else the first step; complete steps first."""
    rows = [r for r in earlier if r.get("complete") is not False] or list(earlier)
    if not rows:
        return None
    tps = Step(step).tps
    if tps is not None:
        half = [r for r in rows if (t := Step(r).tps) is not None and t <= tps / 2]
        if half:
            return half[-1]
    return rows[0]


def finite(v: object) -> float | None:
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
        return None
    return float(v)


def pct(x: float | None) -> str:
    return "?" if x is None else f"{100 * x:.0f}%"


def cores_words(n: float | None) -> str:
    return "?" if n is None else f"{num(round(n, 2))} core{'' if n == 1 else 's'}"
