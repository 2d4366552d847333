"""The figures a live display shows while the run goes, typed: a tick's (the LiveTick event's
`figures`, about a second's, no percentiles) and a step's so far beside each interval (the Interval
event's `step_so_far`). Types only, in the lowest floor: the client's aggregate
(bench_dsl.measure.metrics) makes them, bench replay rebuilds them from a result, the live screen
reads them; their JSON is what a stream held before they were typed, key for key.

Which figures a row holds is partly declared (bench_dsl.core.figures: a workload's own throughputs,
a figure derived from the server's status): those stay a mapping of name -> value (`declared`), the
fixed ones are attributes."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from bench_dsl.core.json_object import Json

LATENCY_KEYS = ("min", "avg", "p50", "p90", "p95", "p99", "p99_9", "max")


def _num(v: Any) -> float | None:
    """A figure as the JSON held it (an int stays an int); None where it is not a number."""
    return v if isinstance(v, int | float) and not isinstance(v, bool) else None


def _int(v: Any) -> int | None:
    return int(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


@dataclass(frozen=True, slots=True)
class Latency:
    """Response times in ms (bench_dsl.measure.txstats.TxStats.latency_ms); None where none completed."""
    min: float | None = None
    avg: float | None = None
    p50: float | None = None
    p90: float | None = None
    p95: float | None = None
    p99: float | None = None
    p99_9: float | None = None
    max: float | None = None

    def at(self, key: str) -> float | None:
        """One of them by its key in the result ("p90", "max"); None for a key that is none of them."""
        v: float | None = getattr(self, key) if key in LATENCY_KEYS else None
        return v

    def to_json(self) -> dict[str, float | None]:
        return {k: getattr(self, k) for k in LATENCY_KEYS}

    @classmethod
    def from_json(cls, d: Any) -> Latency | None:
        if not isinstance(d, dict):
            return None
        return cls(*(_num(d.get(k)) for k in LATENCY_KEYS))


@dataclass(frozen=True, slots=True)
class Cpu:
    """CPU %: the server process's and its host's (of all their cores), bench-dsl's own ("client", of
    the machines its processes run on); a tick's also each client process's (of one core) and each
    client host's, as a cluster's nodes read them. None: not measured."""
    server: float | None = None
    host: float | None = None
    client: float | None = None
    by_process: dict[str, float | None] = field(default_factory=dict)  # JSON "client:NAME"
    by_client_host: dict[str, float | None] = field(default_factory=dict)  # JSON "client_host:HOST"

    def to_json(self) -> dict[str, float | None]:
        return {"server": self.server, "host": self.host, "client": self.client,
                **{f"client:{k}": v for k, v in self.by_process.items()},
                **{f"client_host:{k}": v for k, v in self.by_client_host.items()}}

    @classmethod
    def from_json(cls, d: Any) -> Cpu | None:
        if not isinstance(d, dict):
            return None
        return cls(_num(d.get("server")), _num(d.get("host")), _num(d.get("client")),
                   {k.removeprefix("client:"): _num(v) for k, v in d.items() if k.startswith("client:")},
                   {k.removeprefix("client_host:"): _num(v) for k, v in d.items() if k.startswith("client_host:")})


@dataclass(frozen=True, slots=True)
class TxFigures:
    """One transaction's (or all of them's) live figures, of a tick or of a step so far: completed,
    per second, failed, and their response times (None: not carried, as by a tick, or not known, as
    where a replay adds up intervals)."""
    count: int | None = None
    tps: float | None = None
    errors: int | None = None
    latency_ms: Latency | None = None

    def to_json(self) -> Json:
        out: Json = {"count": self.count, "tps": self.tps, "errors": self.errors}
        if self.latency_ms is not None:
            out["latency_ms"] = self.latency_ms.to_json()
        return out

    @classmethod
    def from_json(cls, d: Any) -> TxFigures:
        """Also a row's or a transaction's figures as a result holds them (what else they hold is not read)."""
        if not isinstance(d, dict):
            return cls()
        return cls(_int(d.get("count")), _num(d.get("tps")), _int(d.get("errors")),
                   Latency.from_json(d.get("latency_ms")))


def of_row_transactions(row: Mapping[str, Any] | None) -> tuple[dict[str, TxFigures], TxFigures | None]:
    """A row's figures as a result holds them (an interval's, a step's), as those of a step so far:
    each transaction's, and all of them's (None: no row)."""
    if not row:
        return {}, None
    txs = row.get("transactions")
    return ({str(n): TxFigures.from_json(t) for n, t in txs.items()} if isinstance(txs, dict) else {},
            TxFigures.from_json(row))


# the fixed figures of a step so far, in the order a stream held them (bench_dsl.measure.figures.FIGURES')
_FIXED = ("count", "errors", "retries", "seconds", "users", "stall_s")
_KEYS = frozenset((*_FIXED, "latency_ms", "cpu", "transactions"))


@dataclass(frozen=True, slots=True)
class StepSoFar:
    """A step still running, as a live display shows it beside an interval: the figures declared live
    for a step (Figure.live "step"), its latency and CPU, and each transaction's. Percentiles do not
    add up: one a replay rebuilds from a step's intervals has none (latency_ms None). A figure a
    stream of before lacks is None (and not written)."""
    count: int | None = None
    errors: int | None = None
    retries: int | None = None
    seconds: float | None = None
    users: int | None = None
    stall_s: float | None = None  # the step's longest stall so far
    # each declared figure, by name: the throughputs (tps, tpm, qps, a workload's own), a derived one
    declared: dict[str, float | None] = field(default_factory=dict)
    latency_ms: Latency | None = None
    cpu: Cpu | None = None
    transactions: dict[str, TxFigures] = field(default_factory=dict)

    @property
    def tps(self) -> float | None:
        return self.declared.get("tps")

    def whole(self) -> TxFigures:
        """All transactions' figures, as one transaction's are."""
        return TxFigures(self.count, self.tps, self.errors, self.latency_ms)

    def to_json(self) -> Json:
        out: Json = {k: v for k in _FIXED if (v := getattr(self, k)) is not None}
        out |= self.declared
        if self.latency_ms is not None:
            out["latency_ms"] = self.latency_ms.to_json()
        if self.cpu is not None:
            out["cpu"] = self.cpu.to_json()
        return out | {"transactions": {n: t.to_json() for n, t in self.transactions.items()}}

    @classmethod
    def from_json(cls, d: Any) -> StepSoFar | None:
        """A stream's `step_so_far` (None where it has none); a key that is not a number is not a figure."""
        if not isinstance(d, dict):
            return None
        txs = d.get("transactions")
        return cls(_int(d.get("count")), _int(d.get("errors")), _int(d.get("retries")), _num(d.get("seconds")),
                   _int(d.get("users")), _num(d.get("stall_s")),
                   {k: v for k, v in d.items() if k not in _KEYS and (v is None or _num(v) is not None)},
                   Latency.from_json(d.get("latency_ms")), Cpu.from_json(d.get("cpu")),
                   {str(n): TxFigures.from_json(t) for n, t in txs.items()} if isinstance(txs, dict) else {})

    @classmethod
    def of_row(cls, row: Mapping[str, Any], live: Iterable[str]) -> StepSoFar:
        """A step's figures as a result's row or the aggregate's summary holds them, as a live display
        shows them: `live`, the names of those declared live for a step; the row's latency and CPU,
        and of each transaction what TxFigures holds."""
        picked = {k: row[k] for k in live if k in row}
        made = cls.from_json({**picked, "latency_ms": row.get("latency_ms"), "cpu": row.get("cpu"),
                              "transactions": row.get("transactions")})
        return made if made is not None else cls()


@dataclass(frozen=True, slots=True)
class BusyDisk:
    """The server host's busiest disk over a tick: its device and how busy it was, %."""
    device: str
    util_pct: float | None

    def to_json(self) -> Json:
        return {"device": self.device, "util_pct": self.util_pct}


@dataclass(frozen=True, slots=True)
class ClientLag:
    """The worst bench-dsl process's scheduling lag (its p90, ms) and the bound the judge holds it to."""
    p90_ms: float
    bound_ms: float

    def to_json(self) -> Json:
        return {"p90_ms": self.p90_ms, "bound_ms": self.bound_ms}


_TICK_KEYS = frozenset(("errors_per_s", "retries_per_s", "cpu", "transactions", "lag_s", "disk", "stall_s",
                        "client_lag"))


@dataclass(frozen=True, slots=True)
class TickFigures:
    """About a second of the run, the cheap figures a live display shows (bench_dsl.measure.metrics.
    TickStats.figures; bench replay's from an interval): errors and retries per second, CPU, each
    transaction's counts; the declared ones by name; what a run measures only where it applies (None:
    not measured, and not written)."""
    # each declared figure of the tick, by name: the throughputs (tps, tpm, qps, a workload's own, of
    # one transaction), an open-loop rate's (offered_tps, achieved_tps, dropped_per_s ...), each
    # figure derived from the server's status
    declared: dict[str, float | None] = field(default_factory=dict)
    errors_per_s: float | None = None
    retries_per_s: float | None = None
    cpu: Cpu = field(default_factory=Cpu)
    transactions: dict[str, TxFigures] = field(default_factory=dict)  # count, tps, errors (no latency)
    lag_s: float | None = None  # the worst replica's lag, s (only with replicas)
    disk: BusyDisk | None = None
    stall_s: float | None = None  # the step's longest stall so far, once there is one
    client_lag: ClientLag | None = None

    @property
    def tps(self) -> float | None:
        return self.declared.get("tps")

    def to_json(self) -> Json:
        out: Json = {**self.declared, "errors_per_s": self.errors_per_s, "retries_per_s": self.retries_per_s,
                     "cpu": self.cpu.to_json(), "transactions": {n: t.to_json() for n, t in self.transactions.items()}}
        for k in ("lag_s", "disk", "stall_s", "client_lag"):
            if (v := getattr(self, k)) is not None:
                out[k] = v.to_json() if isinstance(v, BusyDisk | ClientLag) else v
        return out

    @classmethod
    def from_json(cls, d: Any) -> TickFigures:
        """A tick's figures as a stream's line holds them (beside the tick's own fields); a key that
        is not a number is not a figure."""
        if not isinstance(d, dict):
            return cls()
        txs, disk, lag = d.get("transactions"), d.get("disk"), d.get("client_lag")
        p90, bound = (_num(lag.get("p90_ms")), _num(lag.get("bound_ms"))) if isinstance(lag, dict) else (None, None)
        return cls({k: v for k, v in d.items() if k not in _TICK_KEYS and (v is None or _num(v) is not None)},
                   _num(d.get("errors_per_s")), _num(d.get("retries_per_s")), Cpu.from_json(d.get("cpu")) or Cpu(),
                   {str(n): TxFigures.from_json(t) for n, t in txs.items()} if isinstance(txs, dict) else {},
                   _num(d.get("lag_s")),
                   BusyDisk(str(disk.get("device")), _num(disk.get("util_pct"))) if isinstance(disk, dict) else None,
                   _num(d.get("stall_s")), ClientLag(p90, bound) if p90 is not None and bound is not None else None)
