"""Users on a Ray cluster (the `ray` fleet: `workers ray`): one actor per worker, each running the
same Worker as a worker process (bench_dsl.fleet.ray_actor), placed on the cluster's nodes and
pinned there. Ray's calls carry the protocol's messages (bench_dsl.fleet.coordinator), never one
per transaction: the messages of a moment (a tick's reports, a step's users) go to each node's relay
actor in one call, which forwards them to its node's actors (ray_actor.RelayActor), so the
coordinator's cost per tick grows with the nodes, not the actors. The coordinator is this
process, a Ray driver: it needs a Ray node on its own machine (`ray start --address=HEAD:6379
--num-cpus=0`), and bench-dsl installed on every node (its C core is built against each node's
libmariadb). docs/cluster.md says how to set one up and what is measured where.

Ray is imported when the fleet starts, in a thread: `bench check` and local runs never load it."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import importlib
import logging
import math
import os
import pickle
import platform
import socket
import time
from collections import Counter
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any, NoReturn

import psutil
from hdrh.histogram import HdrHistogram

import bench_dsl
from bench_dsl.core import priority
from bench_dsl.core.cluster_info import ClusterCalls, ClusterInfo, ClusterNode, LostWorker
from bench_dsl.core.dsn import Dsn
from bench_dsl.fleet.base import ClusterError, WorkerFailed, WorkerLostError, WorkerReport
from bench_dsl.fleet.clocks import ClockMap
from bench_dsl.fleet.coordinator import REPLY_TIMEOUT, WorkerFleet, WorkerHandle
from bench_dsl.fleet.process import starved
from bench_dsl.fleet.ray_actor import fault
from bench_dsl.language.model import Scenario
from bench_dsl.measure.txstats import HIGHEST_US, new_histogram

START_TIMEOUT = 60.0  # an actor placed, its process started, bench-dsl imported and the workload built
INSTALL = "pip install 'bench-dsl[ray]'"
LOCAL_NODE = "ray start --address=HEAD:6379 --num-cpus=0"


class _Actor(WorkerHandle):
    def __init__(self, index: int, node_id: str, host: str) -> None:
        super().__init__(index)
        self.node_id = node_id
        self.host = host  # the node's, as Ray knows it (its own hostname once it answered)
        self.actor: Any = None
        self.clock = ClockMap()
        self.peak = 0  # the most users it ran at once
        self.pid: int | None = None  # its process's, on its node


def place(requested: int | None, nodes: list[tuple[str, int]]) -> list[tuple[str, float]]:
    """Each actor's (node id, CPUs it reserves), in worker order. `requested` None: one per CPU of
    each node; a number: shared over the nodes in proportion to their CPUs (largest remainders).
    An actor reserves a whole CPU, or its share of its node's when more actors than CPUs are asked
    for (otherwise Ray would hold the extra ones back forever). Workers alternate between nodes, so
    that users shared over the workers in order spread over the nodes."""
    total = sum(c for _, c in nodes)
    n = requested or total
    quotas = [n * c / total for _, c in nodes]
    counts = [math.floor(q) for q in quotas]
    for i in sorted(range(len(nodes)), key=lambda i: (counts[i] - quotas[i], i))[: n - sum(counts)]:
        counts[i] += 1
    out: list[tuple[str, float]] = []
    for k in range(max(counts, default=0)):
        for (node, cpus), c in zip(nodes, counts, strict=True):
            if k < c:
                out.append((node, 1.0 if c <= cpus else math.floor(10000 * cpus / c) / 10000))
    return out


def _quiet_ray(ray: ModuleType, say: Callable[[str], None]) -> None:
    """Ray's error listener prints the cluster's errors ("(raylet) ...") on the driver's stdout
    even with log_to_driver off: they would corrupt a JSON stream or the live screen. They go to
    the run's log instead (a private hook of Ray's, pinned by tests/unit/test_ray_fleet.py)."""
    said: set[str] = set()

    def to_log(data: dict[str, Any], ignore_prefix: bool = False) -> None:
        for line in data.get("lines", ()):
            text = str(line).strip()
            first = text.splitlines()[0] if text else ""
            first = first[:first.find(". ", 0, 200) + 1] if ". " in first[:200] else first[:200]  # its first sentence
            if first and first not in said:  # each of the cluster's nodes may say it
                said.add(first)
                say(f"ray ({data.get('pid', '?')}): {first}")

    ray._private.worker.print_to_stdstream = to_log
    logging.getLogger("ray").setLevel(logging.ERROR)


def _has_local_node() -> bool:
    """A raylet this process can reach: on this machine, in its network namespace (one in a
    container's or another namespace listens where this process cannot connect). A raylet whose
    namespace cannot be read (another user's) counts: Ray's own error then says more."""
    mine = _netns(os.getpid())
    return any(proc.info["name"] == "raylet" and (mine is None or _netns(proc.info["pid"]) in (None, mine))
               for proc in psutil.process_iter(["name", "pid"]))


def _local_node_ip() -> str | None:
    """The address the Ray node(s) of this machine registered with (their raylets' --node_ip_address),
    when they agree: the one a driver on this machine must join them at."""
    mine = _netns(os.getpid())
    ips: set[str] = set()
    for proc in psutil.process_iter(["name", "pid", "cmdline"]):
        if proc.info["name"] != "raylet" or (mine is not None and _netns(proc.info["pid"]) not in (None, mine)):
            continue
        ips |= {a.partition("=")[2] for a in proc.info["cmdline"] or () if a.startswith("--node_ip_address=")}
    return ips.pop() if len(ips) == 1 else None


_PROBE = "node_ip_address_from_perspective"  # ray._private.services' name for its C++ probe


@contextlib.contextmanager
def _no_ip_probe() -> Iterator[None]:
    """While joining: this machine's node's own address, where Ray would look for it. Given a local
    address (RAY_ADDRESS=127.0.0.1:6379, or the node's file), Ray asks the network which address is
    this machine's with a UDP connect to 8.8.8.8:53; where there is no route out (a lab without
    internet, a container) it fails, and Ray's C++ logger writes a warning straight to the process's
    stderr, in among bench's lines or over the live screen. The node's address is the answer Ray
    would have to settle on anyway (a private name of Ray's, pinned by tests/unit/test_ray_fleet.py)."""
    ip = _local_node_ip()
    services = importlib.import_module("ray._private.services")
    probe = getattr(services, _PROBE, None)
    if ip is None or probe is None:
        yield
        return
    setattr(services, _PROBE, lambda address=None: ip)
    try:
        yield
    finally:
        setattr(services, _PROBE, probe)


def _netns(pid: int) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/ns/net")
    except OSError:
        return None


def connect(address: str | None, say: Callable[[str], None]) -> ModuleType:
    """Ray, connected to the cluster at `address` (else RAY_ADDRESS, else the local node's). Blocks:
    run it in a thread (which also keeps Ray from replacing the run's SIGTERM handler)."""
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"  # nothing bench-dsl starts reports to Ray's servers
    try:
        ray = importlib.import_module("ray")
    except ImportError:
        raise ClusterError(f"workers ray needs Ray: {INSTALL}") from None
    where = address or os.environ.get("RAY_ADDRESS") or "auto"  # never None: that would start a new cluster
    if not _has_local_node():
        raise ClusterError(f"no Ray node runs on this machine: the coordinator joins the cluster through one "
                           f"(on this machine: {LOCAL_NODE}, with the head's address)")
    _quiet_ray(ray, say)
    try:
        with _no_ip_probe():
            ray.init(address=where, log_to_driver=False, configure_logging=False, namespace="bench-dsl")
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise ClusterError(f"could not join the Ray cluster at {where}: {str(exc).splitlines()[0]}") from None
    return ray


class RayFleet(WorkerFleet):
    kind = "ray"

    def __init__(self, sc: Scenario, dsn: Dsn, names: tuple[str, ...], requested: int | None, max_users: int,
                 address: str | None, log: Callable[[str, str], None]) -> None:
        super().__init__(sc, dsn, names, requested or 0, log)
        self.requested = requested
        self.max_users = max_users
        self.address = address
        self.ray: Any = None
        self.nodes: dict[str, dict[str, Any]] = {}  # node id -> what the result lists of it
        self.ready_s: float | None = None
        self._joined_s = 0.0  # how long joining the cluster took (reach)
        # how long after a tick's ask each node's reports came (µs), over the run: a node whose
        # answers come late holds every tick back, and its own figures do not say so
        self._asked: float | None = None
        self._answers: dict[str, HdrHistogram] = {}
        self.relays: dict[str, Any] = {}  # node id -> its relay actor, once its workers started
        self._batches: dict[tuple[str, str], list[tuple[_Actor, dict[str, Any], asyncio.Future[Any]]]] = {}
        self._relaying: set[asyncio.Future[None]] = set()
        self.collects = 0
        self.calls: Counter[str] = Counter()  # the coordinator's Ray calls, by message kind
        self.messages: Counter[str] = Counter()  # the messages they carried

    def _label(self, p: _Actor) -> str:
        return f"worker {p.index + 1} on node {p.node_id[:8]} ({p.host})"

    async def reach(self) -> None:
        """The cluster joined and the nodes that offer CPUs found: before the run loads its data."""
        if self.ray is not None:
            return
        t0 = time.monotonic()
        loop = asyncio.get_running_loop()

        def say(text: str) -> None:  # from Ray's threads
            loop.call_soon_threadsafe(self.log, text, "warning")

        self.ray = ray = await asyncio.to_thread(connect, self.address, say)
        priority.control_first()  # this driver's threads, Ray's among them, above any user's on this machine
        alive = [n for n in await asyncio.to_thread(ray.nodes) if n.get("Alive") and n["Resources"].get("CPU", 0) >= 1]
        if not alive:
            raise ClusterError("the Ray cluster offers no CPU for workers: start its nodes with --num-cpus=N")
        for n in alive:
            self.nodes[n["NodeID"]] = {"node_id": n["NodeID"], "host": n.get("NodeManagerHostname") or "?",
                                       "address": n.get("NodeManagerAddress"), "ray_cpus": int(n["Resources"]["CPU"])}
        self._joined_s = time.monotonic() - t0

    async def start(self) -> None:
        await self.reach()  # done already when the run joined before loading its data
        t0 = time.monotonic()
        ray = self.ray
        cpus = [(nid, int(n["ray_cpus"])) for nid, n in self.nodes.items()]
        wanted = self.requested or sum(c for _, c in cpus)
        placement = place(min(wanted, max(1, self.max_users)), cpus)  # never an actor with no user to run
        self.count = len(placement)
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        from bench_dsl.fleet.ray_actor import WorkerActor

        actor_class = ray.remote(WorkerActor)
        for i, (node_id, num_cpus) in enumerate(placement):
            p = _Actor(i, node_id, self.nodes[node_id]["host"])
            p.actor = actor_class.options(
                num_cpus=num_cpus, max_restarts=0, max_task_retries=0, max_concurrency=1000,
                scheduling_strategy=NodeAffinitySchedulingStrategy(node_id, soft=False)).remote()
            self.procs.append(p)
        relays = self._place_relays()  # their processes start beside the actors'
        sc = self.sc
        setup = [base64.b64encode(pickle.dumps((sc.workload, sc.setup, sc.seed, self.dsn, p.index, self.count)))
                 .decode() for p in self.procs]
        replies = await asyncio.gather(*(self._ask(p, {"op": "start", "setup": s}, timeout=START_TIMEOUT)
                                         for p, s in zip(self.procs, setup, strict=True)))
        for p, r in zip(self.procs, replies, strict=True):
            self._check(p, r)
        await self._relays_ready(relays)
        self.ready_s = round(self._joined_s + time.monotonic() - t0, 3)  # Ray's start-up, the joining included
        self.log(f"Ray: {self.count} actors ready in {self.ready_s:.1f}s (Ray's start-up: not measured)", "info")

    def _check(self, p: _Actor, r: dict[str, Any]) -> None:
        """A node's actor runs what this coordinator runs, or the run would mix two meanings."""
        mine = {"bench_dsl": bench_dsl.__version__, "python": platform.python_version(), "ray": self.ray.__version__}
        theirs = {k: r.get(k) for k in mine}
        if theirs != mine:
            raise ClusterError(f"{self._label(p)} runs bench-dsl {theirs['bench_dsl']}, Python {theirs['python']}, "
                               f"Ray {theirs['ray']}; this coordinator {mine['bench_dsl']}, {mine['python']}, "
                               f"{mine['ray']}: install the same on every node")
        if int(r.get("nice", 0)) > 0:  # Ray's default for its workers, which only root may lower
            self.log(f"{self._label(p)}: its users run at nice {r['nice']}, behind anything else on that "
                     "machine: start Ray's nodes with RAY_worker_niceness=0 in their environment", "warning")
        p.host, p.pid = str(r["host"]), int(r["pid"]) if r.get("pid") is not None else None
        node = self.nodes[p.node_id]
        node.update(host=p.host, cores=int(r["cores"]))
        node.setdefault("workers", []).append(p.name)

    def _place_relays(self) -> dict[str, Any]:
        """One relay actor per node with workers, on that node, holding no CPU (it only forwards)."""
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        from bench_dsl.fleet.ray_actor import RelayActor

        relay_class = self.ray.remote(RelayActor)
        relays = {}
        for node_id in dict.fromkeys(p.node_id for p in self.procs):
            relays[node_id] = relay_class.options(
                num_cpus=0, max_restarts=0, max_task_retries=0, max_concurrency=1000,
                scheduling_strategy=NodeAffinitySchedulingStrategy(node_id, soft=False)).remote(
                {p.index: p.actor for p in self.procs if p.node_id == node_id})
        self.relays = relays
        return relays

    async def _relays_ready(self, relays: dict[str, Any]) -> None:
        for node_id, relay in relays.items():
            try:
                await asyncio.wait_for(relay.ready.remote(), START_TIMEOUT)
            except (TimeoutError, self.ray.exceptions.RayError) as exc:
                why = "did not start" if isinstance(exc, TimeoutError) else fault(exc)[1]
                raise WorkerFailed(f"the relay on node {node_id[:8]} ({self.nodes[node_id]['host']}) failed: "
                                   f"{why}") from None

    def _send(self, p: _Actor, msg: dict[str, Any]) -> asyncio.Future[dict[str, Any]]:
        msg = self._next(msg)
        self.messages[msg["op"]] += 1
        relay = None if msg["op"] == "start" else self.relays.get(p.node_id)
        if relay is None:  # the start: each actor's own call, whose answer says what it runs
            return asyncio.ensure_future(self._call(p, msg))
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[dict[str, Any]] = loop.create_future()
        if p.dead:
            fut.set_exception(WorkerLostError(f"{self._label(p)} lost"))
            return fut
        # the messages of one kind sent to a node's workers in this pass of the loop (a collect's, a
        # resize's): one call to its relay, made once the pass is over
        key = (p.node_id, msg["op"])
        if key not in self._batches:
            self._batches[key] = []
            loop.call_soon(self._relay, key)
        self._batches[key].append((p, msg, fut))
        return fut

    def _relay(self, key: tuple[str, str]) -> None:
        batch = self._batches.pop(key)
        self.calls[key[1]] += 1
        sent = time.monotonic()
        ref = self.relays[key[0]].ask.remote(pickle.dumps({p.index: msg for p, msg, _ in batch},
                                                          protocol=pickle.HIGHEST_PROTOCOL))
        task = asyncio.ensure_future(self._relayed(batch, ref, sent))
        self._relaying.add(task)  # the loop holds its tasks weakly
        task.add_done_callback(self._relaying.discard)

    async def _relayed(self, batch: list[tuple[_Actor, dict[str, Any], asyncio.Future[Any]]], ref: Any,
                       sent: float) -> None:
        try:
            replies: dict[int, list[Any]] = pickle.loads(await ref)
        except self.ray.exceptions.RayError as exc:  # the relay: its node is gone, and its workers with it
            replies = {p.index: fault(exc) for p, _, _ in batch}
        except BaseException as exc:  # cancelled (the run ends), or not Ray's: its workers' waits end too
            for _, _, fut in batch:
                if not fut.done():
                    fut.cancel() if isinstance(exc, asyncio.CancelledError) else fut.set_exception(exc)
            raise
        for p, msg, fut in batch:
            if fut.done():  # no longer waited for (an _ask's timeout)
                continue
            kind, reply = replies[p.index]
            try:
                if kind != "ok":
                    self._raise(p, kind, reply)
                fut.set_result(self._took(p, msg, sent, reply))
            except WorkerFailed as exc:
                fut.set_exception(exc)

    def _raise(self, p: _Actor, kind: str, why: str) -> NoReturn:
        """The fault of a call to `p` (ray_actor.fault), as the run reports it."""
        if kind == "lost":  # its process, or its node, is gone
            p.dead = True
            raise WorkerLostError(f"{self._label(p)} lost: its process or its node is gone ({why})") from None
        if kind == "missing":
            raise ClusterError(f"bench-dsl is not installed on node {p.node_id[:8]} ({p.host}): "
                               f"{INSTALL} there") from None
        raise WorkerFailed(f"{self._label(p)} failed: {why}") from None

    async def _call(self, p: _Actor, msg: dict[str, Any]) -> dict[str, Any]:
        if p.dead:
            raise WorkerLostError(f"{self._label(p)} lost")
        self.calls[msg["op"]] += 1
        sent = time.monotonic()
        try:
            reply: dict[str, Any] = await p.actor.ask.remote(msg)
        except self.ray.exceptions.RayError as exc:
            self._raise(p, *fault(exc))
        return self._took(p, msg, sent, reply)

    def _took(self, p: _Actor, msg: dict[str, Any], sent: float, reply: dict[str, Any]) -> dict[str, Any]:
        """`p`'s reply to `msg`, asked at `sent`: its times on this clock, its figures noted. Through a
        relay, the round trip is its node's whole batch's: still a bound on the clock's error, a looser
        one when a node's actors answer apart (the clock keeps its shortest recent round trip)."""
        if reply.get("quiet"):  # its clock's times, on the coordinator's (the scheduler cuts ticks on it)
            p.clock.observe(sent, time.monotonic(), float(reply["quiet"][0][2]))
            reply["quiet"] = p.clock.quiet_wire(reply["quiet"])
        self._answered(p, reply)
        p.peak = max(p.peak, p.active)
        if msg["op"] == "report" and self._asked is not None:
            late_us = max(1, round(1e6 * (time.monotonic() - self._asked)))
            if p.node_id not in self._answers:  # not setdefault: a new histogram is 0.1 ms of CPU, each answer
                self._answers[p.node_id] = new_histogram()
            self._answers[p.node_id].record_value(min(late_us, HIGHEST_US))
        return reply

    async def collect(self) -> WorkerReport:
        self.collects += 1
        self._asked = time.monotonic()  # the tick's ask, from which every node's answers are timed
        return await super().collect()

    def answers_late(self, node_id: str) -> dict[str, float | int] | None:
        """How long after a tick's ask the node's reports came, in ms over the run: p50, p99, max."""
        h = self._answers.get(node_id)
        if h is None or not h.get_total_count():
            return None
        return {"p50": round(h.get_value_at_percentile(50) / 1000, 3),
                "p99": round(h.get_value_at_percentile(99) / 1000, 3),
                "max": round(h.get_max_value() / 1000, 3), "answers": h.get_total_count()}

    async def _alive(self, p: _Actor) -> bool:
        """Silent past the deadline, alive: Ray still calls its node alive (its raylet's health checks)
        and, on this machine, its process is starved rather than stuck (process.starved). Ray says so
        when its actor or node dies: its answer is then that error, at the next collect."""
        if p.dead:
            return False
        try:
            nodes = await asyncio.wait_for(asyncio.to_thread(self.ray.nodes), REPLY_TIMEOUT)
        except Exception:  # the GCS itself does not answer: nothing to tell a late worker by
            return False
        if not any(n["NodeID"] == p.node_id and n.get("Alive") for n in nodes):
            return False
        return p.pid is None or p.host != socket.gethostname() or starved(p.pid)

    def capacity_pct(self) -> float:
        """The coordinator's machine and every node's, each host's cores once; each worker at most a core."""
        cores = {socket.gethostname(): os.cpu_count() or 1}
        for n in self.nodes.values():
            if n.get("workers"):
                cores[n["host"]] = int(n.get("cores", n["ray_cpus"]))
        total = sum(cores.values())
        return 100.0 * min(self.count + 1, total) / total

    def cluster(self) -> ClusterInfo:
        nodes = []
        for node in self.nodes.values():
            mine = [p for p in [*self.procs, *self.gone] if p.node_id == node["node_id"]]
            if mine:
                nodes.append(ClusterNode(node["node_id"], node["host"], node.get("address"), int(node["ray_cpus"]),
                                         node.get("cores"), tuple(p.name for p in mine), sum(p.peak for p in mine),
                                         self.answers_late(node["node_id"])))
        return ClusterInfo("ray", tuple(nodes), self.ready_s, tuple(self.started),
                           tuple(LostWorker(p.name, p.node_id, p.host, p.lost) for p in self.gone),
                           ClusterCalls(self.collects, self.calls["report"], self.messages["report"],
                                        sum(self.calls.values()), sum(self.messages.values())))

    async def _end(self) -> None:
        if self.ray is None:
            return
        ray, actors = self.ray, [p.actor for p in [*self.procs, *self.gone] if p.actor is not None]
        actors += self.relays.values()

        def end() -> None:
            for a in actors:
                try:
                    ray.kill(a, no_restart=True)
                except Exception:  # a lost node's actor: nothing left to end
                    pass
            ray.shutdown()

        await asyncio.to_thread(end)
