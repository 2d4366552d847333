"""What the engine sees of the place its virtual users run: the Fleet protocol, and the report each
process that runs users (or coordinates them) sends at every collect.

A fleet is one of the kinds in registry.py: this process (local.py), worker processes on this
machine (process.py); a fleet of another kind (workers on a cluster) implements the same protocol
and sends the same WorkerReport, and the run does not notice. This module loads no driver: the
scheduler and what plans a run import it, `bench check` among them."""

from __future__ import annotations

import os
import socket
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from bench_dsl.core.cluster_info import ClusterInfo
from bench_dsl.core.errors import BenchError
from bench_dsl.measure.arrivals import ArrivalStats
from bench_dsl.measure.cpu import OwnCpu, client_cpu
from bench_dsl.measure.hdrwire import TxStatsSum
from bench_dsl.measure.schedlag import Samples
from bench_dsl.measure.stalls import Quiet
from bench_dsl.measure.txstats import TxStats


@dataclass(frozen=True, slots=True)
class Health:
    """What the run needs to tell a lost target from a slow one, and a wrong scenario from both."""

    connect_failures: int  # consecutive failed connects, 0 once a user connects
    idle_s: float  # seconds since a user last connected or completed a transaction
    fatal: tuple[int, str, str] | None  # (code, message, transaction) of a scenario error
    error_messages: dict[int, str]  # first message seen per MySQL error code, passwords redacted
    executors: tuple[str, ...] = ()  # how statements were sent: "libmariadb" (the C executor), "driver" (asyncmy)
    connected: int = 0  # users with a connection
    refused: int = 0  # users without one whose latest attempt to connect failed
    connect_error: tuple[int, str] | None = None  # (code, message) of the latest failed connect
    never_connected: int = 0  # users still waiting for their first connection (not reconnecting ones)
    elsewhere: str | None = None  # a user reached another server than the run's: what it found there
    no_thread: str | None = None  # a user's thread could not start (bench_dsl.core.threads): the limit's words

    @classmethod
    def from_wire(cls, h: dict[str, Any]) -> Health:
        return cls(int(h["connect_failures"]), float(h["idle_s"]), tuple(h["fatal"]) if h["fatal"] else None,
                   {int(code): msg for code, msg in h["error_messages"].items()}, tuple(h.get("executors", ())),
                   int(h["connected"]), int(h["refused"]),
                   tuple(h["connect_error"]) if h["connect_error"] else None,
                   int(h.get("never_connected", 0)), h.get("elsewhere"), h.get("no_thread"))

    @classmethod
    def merge(cls, healths: Iterable[Health]) -> Health:
        """The fleet's, from its processes': counts add up, the idlest is the least idle process."""
        fails, idle, fatal, connected, refused, connect_error, never = 0, float("inf"), None, 0, 0, None, 0
        elsewhere: str | None = None
        no_thread: str | None = None
        messages: dict[int, str] = {}
        executors: set[str] = set()
        for h in healths:
            fails += h.connect_failures
            idle = min(idle, h.idle_s)
            fatal = fatal or h.fatal
            for code, msg in h.error_messages.items():
                messages.setdefault(code, msg)
            executors.update(h.executors)
            connected += h.connected
            refused += h.refused
            never += h.never_connected
            connect_error = connect_error or h.connect_error
            elsewhere = elsewhere or h.elsewhere
            no_thread = no_thread or h.no_thread
        return cls(fails, 0.0 if idle == float("inf") else idle, fatal, messages, tuple(sorted(executors)),
                   connected, refused, connect_error, never, elsewhere, no_thread)


@dataclass(frozen=True, slots=True)
class ProcessFigures:
    """One process's own figures over a report: its CPU, its scheduling lag, where it runs."""

    cpu_s: float | None  # CPU seconds it used since its previous report (bench_dsl.measure.cpu.OwnCpu)
    wall_s: float  # the seconds that covers
    lag: Samples  # bench_dsl.measure.schedlag's samples; none for a process that runs no users
    host: str
    cores: int  # its host's
    # its whole host's CPU over the report, where only it can read it (a cluster node)
    host_cpu_pct: float | None = None
    runnable_threads: int | None = None  # its host's threads runnable when it made the report (Linux)
    # the seconds the coordinator waited for the report, from its ask (set by the coordinator): a
    # starved worker's is late (issue 39), and one not in yet says how long it has been waited for
    report_wait_s: float | None = None

    def to_wire(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_wire(cls, w: dict[str, Any]) -> ProcessFigures:
        return cls(None if w["cpu_s"] is None else float(w["cpu_s"]), float(w["wall_s"]),
                   {p: [float(v) for v in vs] for p, vs in w["lag"].items()}, str(w["host"]), int(w["cores"]),
                   None if w.get("host_cpu_pct") is None else float(w["host_cpu_pct"]),
                   None if w.get("runnable_threads") is None else int(w["runnable_threads"]),
                   None if w.get("report_wait_s") is None else float(w["report_wait_s"]))


@dataclass(slots=True)
class WorkerReport:
    """What a process (or, merged, the whole fleet) measured since its previous report: per
    transaction, its users' health, their gaps between completions, and each process's own
    figures by name ("coordinator", "worker 1", ...: the names the result's by-process figures
    use). Both ends of a worker's pipe use it: the worker writes to_wire, the coordinator reads
    from_wire and merges."""

    tx: dict[str, TxStats]
    health: Health
    active: int = 0
    quiet: list[Quiet] = field(default_factory=list)
    processes: dict[str, ProcessFigures] = field(default_factory=dict)
    arrivals: ArrivalStats | None = None  # an open-loop rate's (None: closed loop)

    def to_wire(self) -> dict[str, Any]:
        """A JSON object: TxStats' wire (HdrHistogram's compressed encoding, merged exactly)."""
        return {"active": self.active, "tx": {name: st.to_wire() for name, st in self.tx.items()},
                "health": asdict(self.health), "quiet": [q.to_wire() for q in self.quiet],
                "processes": {name: p.to_wire() for name, p in self.processes.items()},
                "arrivals": self.arrivals.to_wire() if self.arrivals is not None else None}

    @classmethod
    def from_wire(cls, w: dict[str, Any], tx: bool = True) -> WorkerReport:
        """`tx` False: without its transactions (merge_wire sums them)."""
        return cls({name: TxStats.from_wire(st) for name, st in w["tx"].items()} if tx else {},
                   Health.from_wire(w["health"]),
                   int(w.get("active", 0)), [Quiet.from_wire(q) for q in w.get("quiet", ())],
                   {name: ProcessFigures.from_wire(p) for name, p in w.get("processes", {}).items()},
                   ArrivalStats.from_wire(w["arrivals"]) if w.get("arrivals") is not None else None)

    @classmethod
    def merge(cls, reports: Iterable[WorkerReport], names: Iterable[str]) -> WorkerReport:
        """The fleet's report from its processes' (every transaction of `names` in it, counted or not)."""
        reports = list(reports)
        out = {n: TxStats() for n in names}
        for r in reports:
            for name, st in r.tx.items():
                if st.count or st.error_count or st.retries:
                    out[name].merge(st)
        arrivals = None
        for r in reports:
            if r.arrivals is not None:
                arrivals = arrivals or ArrivalStats()
                arrivals.merge(r.arrivals, parallel=True)  # the same span, of each process's schedule
        return cls(out, Health.merge(r.health for r in reports), sum(r.active for r in reports),
                   [q for r in reports for q in r.quiet],
                   {name: p for r in reports for name, p in r.processes.items()}, arrivals)

    @classmethod
    def merge_wire(cls, replies: Iterable[dict[str, Any]], names: Iterable[str], *others: WorkerReport) -> WorkerReport:
        """merge() of `others` and of from_wire() of each reply, the same report, with the replies'
        histograms summed as they are decoded (bench_dsl.measure.hdrwire): a coordinator's thousand
        workers a second, where decoding each histogram on its own took most of a core."""
        names = tuple(names)
        sums = {n: TxStatsSum() for n in names}
        reports = list(others)
        for w in replies:
            for name, st in w["tx"].items():
                sums[name].add(st)
            reports.append(cls.from_wire(w, tx=False))
        merged = cls.merge(reports, names)
        for name, s in sums.items():
            st = s.close()
            if st.count or st.error_count or st.retries:
                merged.tx[name].merge(st)
        return merged

    def lag(self) -> dict[str, Samples]:
        """The scheduling lag of each process that runs users (bench_dsl.measure.schedlag)."""
        return {name: p.lag for name, p in self.processes.items() if p.lag}

    def waits(self) -> dict[str, tuple[float, int | None]]:
        """The seconds the coordinator waited for each worker's report, with its host's runnable threads."""
        return {name: (p.report_wait_s, p.runnable_threads) for name, p in self.processes.items()
                if p.report_wait_s is not None}

    def cpu(self) -> dict[str, float | None]:
        """bench-dsl's CPU over the report: "client" and "client:NAME" (bench_dsl.measure.cpu.client_cpu),
        and "client_host:HOST", the whole CPU of each host whose workers read it (a cluster's nodes)."""
        hosts = {f"client_host:{p.host}": p.host_cpu_pct for p in self.processes.values() if p.host_cpu_pct is not None}
        return client_cpu((name, p.cpu_s, p.wall_s, p.host, p.cores) for name, p in self.processes.items()) | hosts


def own_figures(cpu: OwnCpu, lag: Samples, host_cpu: Callable[[], float | None] | None = None) -> ProcessFigures:
    """This process's figures since its previous report (`lag`: what its probe took; `host_cpu`:
    its host's CPU % since the previous call, for a host no other process of the run reads)."""
    cpu_s, wall_s = cpu.take()
    return ProcessFigures(cpu_s, wall_s, lag, socket.gethostname(), os.cpu_count() or 1,
                          None if host_cpu is None else host_cpu(), runnable_threads())


def late_figures(waited_s: float) -> ProcessFigures:
    """What stands for a worker's figures in a collect its report missed (late): how long it has been
    waited for, and this host's runnable threads (its own, for a fleet on this machine)."""
    return ProcessFigures(None, 0.0, {}, socket.gethostname(), os.cpu_count() or 1, None, runnable_threads(), waited_s)


def runnable_threads() -> int | None:
    """The threads of this host that run or wait for a core now (/proc/loadavg's fourth field)."""
    try:
        with open("/proc/loadavg") as f:
            return int(f.read().split()[3].split("/")[0])
    except (OSError, IndexError, ValueError):
        return None


class WorkerFailed(BenchError):
    """A worker process died or stopped answering: bench-dsl's own failure, not the server's.
    `partial`: when it happened during a report, what the other workers reported (already taken
    from them, so lost unless the caller counts it)."""

    def __init__(self, message: str, partial: WorkerReport | None = None) -> None:
        super().__init__(message)
        self.partial = partial


class WorkerLostError(WorkerFailed):
    """A worker's process, or the cluster node it ran on, is gone: the run fails, keeping what was
    measured, unless the scenario says `on worker loss continue`."""


class ClusterError(WorkerFailed):
    """The cluster cannot run the users (not reachable, no CPU offered, a node without bench-dsl):
    the run fails before measuring, and the message says what to do."""


class Fleet(Protocol):
    """Where the users run. `resize` sets how many users there are; closed loop, each runs
    transactions back to back; with `pace` (an open-loop rate) they serve arrivals due at a rate,
    and each process says in its report's `arrivals` how many were due, started and dropped, and
    how late."""

    @property
    def active(self) -> int:
        """The users asked for (those that ran are known from the next report's health)."""

    @property
    def workers(self) -> int:
        """The processes (or actors) that run users, once started."""

    def capacity_pct(self) -> float:
        """% of the client machines' CPU its processes can use, at most all of it: what the judge
        holds the client's CPU to (the client-limit verdict). Known once started."""

    def cluster(self) -> ClusterInfo | None:
        """Where a cluster's users ran, for the result's `cluster` (its kind, its nodes with their
        workers and users, what was lost); None when they run on this machine."""

    def lose(self) -> list[str]:
        """After a collect raised WorkerFailed: drops the lost workers so that the run goes on with
        the others (`on worker loss continue`), and says why each was lost; [] when it cannot go on
        (no worker lost, or none left)."""

    async def reach(self) -> None:
        """Before the data is loaded: finds where the users will run (a cluster joined, its CPUs
        counted), so that one that cannot run them fails the run before an hour of loading. Nothing
        to find on this machine."""

    async def start(self) -> None: ...

    async def resize(self, n: int, wait: bool = True) -> None:
        """`wait`: until the new users are connected, and hold them until every one of them is."""

    async def pace(self, rate: float, poisson: bool, queue: int) -> None:
        """An open-loop rate: `rate` arrivals per second over the whole fleet, from now on, served
        by its users (`resize`); each process takes its share, offset so that the merged timeline
        stays even. `queue`: arrivals that may wait for a free user (0: dropped when none is)."""

    async def collect(self) -> WorkerReport:
        """Everything measured since the last collect, merged. Raises WorkerFailed (with what the
        other processes reported) when a process is lost."""

    def health(self) -> Health:
        """The users' health as of the last collect."""

    def cancel_in_flight(self) -> None: ...

    async def stop(self, grace: float = 5.0) -> WorkerReport:
        """Stop every user; returns what was measured since the last collect."""


def worker_count(requested: int | None, max_users: int, server_local: bool = False, light: bool = True) -> int:
    """`workers auto` (None or 0): one process per core, never more than the users there will be.
    When the server runs on this machine and the users are `light` on the client's CPU (the raw
    executor's C core), a process per core still pays: on 2 cores, two processes gave point selects
    +40% tps at 4 users and +2% to +6% at 16 and 64 (alternated runs). Users on asyncmy (TPC-C,
    BENCH_RAWEXEC=0) are not light: each process's CPU is taken from the server beside it (a second
    process cost 20% of TPC-C's NOPM), so auto takes half the cores."""
    cores = os.cpu_count() or 1
    n = requested if requested else (max(1, cores // 2) if server_local and not light else cores)
    return max(1, min(n, max_users))


def capacity_pct(workers: int) -> float:
    """% of this machine `workers` processes and their coordinator can use, at most every core:
    what the judge holds the client's CPU to (the client-limit verdict)."""
    ncpu = os.cpu_count() or 1
    return 100.0 * min(workers + 1, ncpu) / ncpu
