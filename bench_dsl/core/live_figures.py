"""The figures a live display shows while the run goes, typed: a step's so far beside each interval
(the Interval event's `step_so_far`). Types only, in the lowest floor: the client's aggregate
(bench_dsl.measure.metrics) makes them, bench replay rebuilds them from a result, the live screen
reads them; their JSON is what a stream held before they were typed, key for key.

Which figures a row holds is partly declared (bench_dsl.core.figures: a workload's own throughputs,
a figure derived from the server's status): those stay a mapping of name -> value (`declared`), the
fixed ones are attributes."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

Json = dict[str, Any]

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
class TxSoFar:
    """One transaction's (or all of them's) figures of a step so far: completed, per second, failed,
    and their response times (None: not known, as where a replay adds up intervals)."""
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
    def from_json(cls, d: Any) -> TxSoFar:
        """Also a row's or a transaction's figures as a result holds them (what else they hold is not read)."""
        if not isinstance(d, dict):
            return cls()
        return cls(_int(d.get("count")), _num(d.get("tps")), _int(d.get("errors")),
                   Latency.from_json(d.get("latency_ms")))


def of_row_transactions(row: Mapping[str, Any] | None) -> tuple[dict[str, TxSoFar], TxSoFar | None]:
    """A row's figures as a result holds them (an interval's, a step's), as those of a step so far:
    each transaction's, and all of them's (None: no row)."""
    if not row:
        return {}, None
    txs = row.get("transactions")
    return ({str(n): TxSoFar.from_json(t) for n, t in txs.items()} if isinstance(txs, dict) else {},
            TxSoFar.from_json(row))


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
    transactions: dict[str, TxSoFar] = field(default_factory=dict)

    @property
    def tps(self) -> float | None:
        return self.declared.get("tps")

    def whole(self) -> TxSoFar:
        """All transactions' figures, as one transaction's are."""
        return TxSoFar(self.count, self.tps, self.errors, self.latency_ms)

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
                   {str(n): TxSoFar.from_json(t) for n, t in txs.items()} if isinstance(txs, dict) else {})

    @classmethod
    def of_row(cls, row: Mapping[str, Any], live: Iterable[str]) -> StepSoFar:
        """A step's figures as a result's row or the aggregate's summary holds them, as a live display
        shows them: `live`, the names of those declared live for a step; the row's latency and CPU,
        and of each transaction what TxSoFar holds."""
        picked = {k: row[k] for k in live if k in row}
        made = cls.from_json({**picked, "latency_ms": row.get("latency_ms"), "cpu": row.get("cpu"),
                              "transactions": row.get("transactions")})
        return made if made is not None else cls()
