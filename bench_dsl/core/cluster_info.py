"""Where a cluster's users ran (`workers ray`), as its fleet says it (bench_dsl.fleet.ray.RayFleet.cluster):
its kind, its nodes with their workers and users, how long its actors took to be ready, how long
each step's users took to connect, the workers lost and the coordinator's calls. The `Cluster` event
carries it; the result's "cluster" is its JSON (the document adds each node's CPU over the measured
run). Types only: a replay and the live screen read it and may load no fleet (the import contracts
keep a replay from bench_dsl.fleet)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


def _int(v: Any) -> int:
    return int(v) if isinstance(v, int | float) else 0


@dataclass(frozen=True, slots=True)
class ClusterNode:
    node_id: str
    host: str
    address: str | None
    ray_cpus: int  # the CPUs the node offers to Ray
    cores: int | None  # the node machine's (None: no worker of it answered yet)
    workers: tuple[str, ...]  # their names, as client_cpu_by_process has them
    users: int  # the most users its workers ran at once
    # how long after each tick's ask its workers' reports came, in ms over the run: p50, p99, max,
    # and how many (answers); None before any came
    answers_late_ms: dict[str, float | int] | None = None

    def to_json(self) -> dict[str, Any]:
        return {"node_id": self.node_id, "host": self.host, "address": self.address, "ray_cpus": self.ray_cpus,
                **({"cores": self.cores} if self.cores is not None else {}),
                "workers": list(self.workers), "users": self.users, "answers_late_ms": self.answers_late_ms}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> ClusterNode:
        cores, late, address = d.get("cores"), d.get("answers_late_ms"), d.get("address")
        return cls(str(d.get("node_id") or ""), str(d.get("host") or "?"),
                   str(address) if address is not None else None, _int(d.get("ray_cpus")),
                   _int(cores) if cores is not None else None,
                   tuple(str(w) for w in d.get("workers") or ()), _int(d.get("users")),
                   dict(late) if isinstance(late, dict) else None)


@dataclass(frozen=True, slots=True)
class LostWorker:
    """A worker lost mid-run (its node gone) that the run went on without (on worker loss continue)."""
    worker: str
    node_id: str
    host: str
    reason: str | None

    def to_json(self) -> dict[str, Any]:
        return {"worker": self.worker, "node_id": self.node_id, "host": self.host, "reason": self.reason}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> LostWorker:
        reason = d.get("reason")
        return cls(str(d.get("worker") or ""), str(d.get("node_id") or ""), str(d.get("host") or ""),
                   str(reason) if reason is not None else None)


@dataclass(frozen=True, slots=True)
class ClusterCalls:
    """The coordinator's calls over the run: a tick is one report call per node (report_calls) for
    one report per worker (reports); calls and messages count every kind."""
    collects: int
    report_calls: int
    reports: int
    calls: int
    messages: int

    def to_json(self) -> dict[str, int]:
        return {"collects": self.collects, "report_calls": self.report_calls, "reports": self.reports,
                "calls": self.calls, "messages": self.messages}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> ClusterCalls:
        return cls(_int(d.get("collects")), _int(d.get("report_calls")), _int(d.get("reports")),
                   _int(d.get("calls")), _int(d.get("messages")))


@dataclass(frozen=True, slots=True)
class ClusterInfo:
    kind: str  # the cluster engine: ray
    nodes: tuple[ClusterNode, ...]  # those that ran workers
    actors_ready_s: float | None  # from joining the cluster to every actor ready (not measured)
    users_started: tuple[tuple[int, float], ...] = ()  # each step's (users, seconds until all connected)
    lost: tuple[LostWorker, ...] = ()
    calls: ClusterCalls | None = None  # None: a result written before they were counted

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "nodes": [n.to_json() for n in self.nodes], "actors_ready_s": self.actors_ready_s,
                "users_started": [{"users": n, "seconds": s} for n, s in self.users_started],
                "lost": [x.to_json() for x in self.lost],
                **({"calls": self.calls.to_json()} if self.calls is not None else {})}

    @classmethod
    def from_json(cls, d: Any) -> ClusterInfo | None:
        """A result's "cluster" (None where it has none: the users ran on the coordinator's machine)."""
        if not isinstance(d, dict):
            return None
        ready, calls = d.get("actors_ready_s"), d.get("calls")
        return cls(str(d.get("kind") or "cluster"),
                   tuple(ClusterNode.from_json(n) for n in d.get("nodes") or () if isinstance(n, dict)),
                   float(ready) if isinstance(ready, int | float) else None,
                   tuple((_int(u.get("users")), float(u.get("seconds") or 0.0))
                         for u in d.get("users_started") or () if isinstance(u, dict)),
                   tuple(LostWorker.from_json(x) for x in d.get("lost") or () if isinstance(x, dict)),
                   ClusterCalls.from_json(calls) if isinstance(calls, dict) else None)
