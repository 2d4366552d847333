"""A worker as a Ray actor (the `ray` fleet, bench_dsl.fleet.ray): the same Worker as a worker
process (bench_dsl.fleet.worker), with Ray's calls for its pipe. One call per message: the answer
to `ask` is the worker's reply to it, so a `users` call lasts until its users are connected while
the `report` calls of each tick are answered beside it (an async actor runs its calls on one event
loop, up to its max_concurrency at once). Imports no ray at module level: bench_dsl.fleet.ray makes
the class an actor, on a machine where Ray is installed; this module is imported on every node."""

from __future__ import annotations

import asyncio
import os
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


def facts() -> dict[str, Any]:
    """Where this actor runs and with what: the coordinator lists the nodes, and refuses a node
    whose bench-dsl, Python or Ray is not its own (their reports would not mean the same)."""
    import ray  # there: the process is a Ray worker

    return {"node_id": ray.get_runtime_context().get_node_id(), "host": socket.gethostname(),
            "cores": os.cpu_count() or 1, "pid": os.getpid(), "bench_dsl": bench_dsl.__version__,
            "python": platform.python_version(),
            "ray": ray.__version__}
