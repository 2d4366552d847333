"""A worker as a Ray actor (the `ray` fleet, bench_dsl.fleet.ray): the same Worker as a worker
process (bench_dsl.fleet.worker), with Ray's calls for its pipe. One call per message: the answer
to `ask` is the worker's reply to it, so a `users` call lasts until its users are connected while
the `report` calls of each tick are answered beside it (an async actor runs its calls on one event
loop, up to its max_concurrency at once).

A relay per node (RelayActor) carries the coordinator's messages to that node's workers: one call
from the coordinator per node and message kind, whose answer holds each worker's reply or how its
call failed. A Ray call costs the coordinator's process about half a millisecond of CPU whatever it
carries (make bench, section coordinator), so a tick costs it one call per node, not per actor; the
relay's own calls to the actors are local to their node, their cost that node's.

Imports no ray at module level: bench_dsl.fleet.ray makes the classes actors, on a machine where Ray
is installed; this module is imported on every node."""

from __future__ import annotations

import asyncio
import os
import pickle
import platform
import socket
from typing import Any

import psutil

import bench_dsl
from bench_dsl.core import priority
from bench_dsl.fleet.worker import Worker
from bench_dsl.measure.schedlag import LagProbe


class WorkerActor:
    def __init__(self) -> None:
        self.worker: Worker | None = None
        self.probe = LagProbe()
        self.replies: dict[int, asyncio.Future[dict[str, Any]]] = {}

    def _reply(self, msg: dict[str, Any]) -> None:
        fut = self.replies.pop(msg["id"], None)
        if fut is not None and not fut.done():
            fut.set_result(msg)

    async def ask(self, msg: dict[str, Any]) -> dict[str, Any]:
        loop = asyncio.get_running_loop()
        if self.worker is None:
            # on the loop Ray runs the calls on (not the process's main thread): the users' loop, whose lag it probes
            self.probe.start(loop)
            psutil.cpu_percent(None)  # the first reading is meaningless: prime it
            self.worker = Worker(self._reply, self.probe, host_cpu=lambda: psutil.cpu_percent(None))
            # Ray starts its workers at nice 15 (its own daemons first): at 64 users beside a local
            # server they made 10% fewer transactions than worker processes at nice 0 (make bench,
            # section ray). Their control threads (this loop, Ray's own that carry the calls) rank
            # above the users', which run at 0 where that may be set (priority.control_first)
            self.worker.users_nice = 0
        fut = self.replies[msg["id"]] = loop.create_future()
        await self.worker.handle(msg)
        reply = await fut
        if msg["op"] == "start":
            reply = reply | facts() | {"nice": priority.users_nice()}
        return reply


class RelayActor:
    """The coordinator's messages to one node's workers (their indexes: their actors), each batch
    forwarded at once and answered whole: {index: ["ok", reply]} or the worker's fault."""

    def __init__(self, actors: dict[int, Any]) -> None:
        self.actors = actors

    async def ready(self) -> int:
        return os.getpid()

    async def ask(self, wire: bytes) -> bytes:
        """`wire`: the messages, pickled; the answer too. Ray's own serializer calls back into Python
        for every object of an argument or a result (its hooks for the references they may hold):
        a node's reports, some 30 objects each, cost the coordinator's process more that way than
        pickled by the C pickler in one piece."""
        msgs: dict[int, dict[str, Any]] = pickle.loads(wire)
        # every call submitted before the first await: each worker gets its messages in the order
        # the coordinator sent them, as when it called the actor itself
        refs = [self.actors[i].ask.remote(msg) for i, msg in msgs.items()]
        results = await asyncio.gather(*refs, return_exceptions=True)
        return pickle.dumps({i: fault(r) if isinstance(r, BaseException) else ["ok", r]
                             for i, r in zip(msgs, results, strict=True)}, protocol=pickle.HIGHEST_PROTOCOL)


def reason(exc: BaseException) -> str:
    first = next((line.strip() for line in str(exc).splitlines() if line.strip()), "")
    return f"{type(exc).__name__}: {first[:200]}" if first else type(exc).__name__


def fault(exc: BaseException) -> list[Any]:
    """How a call to an actor (or to a relay) failed, as the coordinator words it for each of its
    workers: ["lost", the error's type] when its process or its node is gone, ["missing", ""] when
    bench-dsl does not import there, else ["failed", why]. Said in words, not as the exception: a
    relay passes it on, and Ray's errors need not survive a second pickling."""
    from ray import exceptions as errors  # there: the process is a Ray worker, or the coordinator

    if isinstance(exc, errors.RayActorError):
        return ["lost", type(exc).__name__]
    if isinstance(exc, errors.RayTaskError):
        cause = exc.cause if exc.cause is not None else exc
        if isinstance(cause, ModuleNotFoundError) and "bench_dsl" in str(cause):
            return ["missing", ""]
        return ["failed", reason(cause)]
    return ["failed", reason(exc)]


def facts() -> dict[str, Any]:
    """Where this actor runs and with what: the coordinator lists the nodes, and refuses a node
    whose bench-dsl, Python or Ray is not its own (their reports would not mean the same)."""
    import ray  # there: the process is a Ray worker

    return {"node_id": ray.get_runtime_context().get_node_id(), "host": socket.gethostname(),
            "cores": os.cpu_count() or 1, "pid": os.getpid(), "bench_dsl": bench_dsl.__version__,
            "python": platform.python_version(),
            "ray": ray.__version__}
