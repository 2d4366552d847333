"""A worker process: runs its share of the virtual users and reports what they measured.

The coordinator (bench_dsl.fleet.process.ProcessFleet) talks to each worker with one JSON object per line on
the worker's stdin/stdout. The protocol is deliberately small so that the same worker can later run
on another machine under a distributed engine without the run noticing:

  coordinator -> worker                       worker -> coordinator
  {"op": "start", "id", "setup": <b64>}       {"op": "ready", "id", "pid"}
  {"op": "users", "id", "n", "wait", "hold"}  {"op": "users", "id", "active"}
  {"op": "go", "id"}                          {"op": "go", "id"}
  {"op": "report", "id"}                      {"op": "report", "id", **WorkerReport.to_wire()}
  {"op": "cancel", "id"}                      {"op": "cancel", "id"}
  {"op": "stop", "id", "grace"}               {"op": "stop", "id", **WorkerReport.to_wire()}, then exit

"hold": the new users connect but start no transaction before "go", which the coordinator sends
once every worker has answered "users": all of a step's users connect before any of them loads the
server. A report (bench_dsl.fleet.base.WorkerReport) holds what its users measured since the last
one, their health, the gaps between their completions (bench_dsl.measure.stalls.Quiet), and the
process's own figures under its name ("worker 1" ...): its CPU time, its scheduling lag
(bench_dsl.measure.schedlag: probe -> oversleeps in ms) and its host. `setup` is the pickled
(workload spec, setup steps, seed, Dsn, worker index, worker count): what the worker needs to
build the workload, not the whole scenario. `wire` is TxStats.to_wire(): counts and HdrHistogram's
compressed encoding, merged exactly by the coordinator (WorkerReport.merge). A worker whose stdin
closes (the coordinator died) stops its users and exits: it never outlives the run.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import pickle
import signal
import sys
import traceback
from collections.abc import Callable
from typing import Any

from bench_dsl.core import priority, stacks
from bench_dsl.core.aio import run_loop
from bench_dsl.fleet.base import WorkerReport, own_figures
from bench_dsl.fleet.users import UserPool
from bench_dsl.measure.cpu import OwnCpu
from bench_dsl.measure.recorder import Recorder
from bench_dsl.measure.schedlag import LagProbe
from bench_dsl.workloads.registry import build_workload


class Worker:
    """One worker's users and its side of the protocol, whatever carries the messages: `send`
    writes a reply (a line on stdout here; a Ray actor's answer in bench_dsl.fleet.ray_actor)."""

    def __init__(self, send: Callable[[dict[str, Any]], None], probe: LagProbe,
                 host_cpu: Callable[[], float | None] | None = None) -> None:
        self.send = send
        self.probe = probe
        self.host_cpu = host_cpu  # its machine's CPU %, where the coordinator cannot read it (a cluster node)
        self.pool: UserPool | None = None
        self.recorder: Recorder | None = None
        self.tasks: set[asyncio.Task[None]] = set()
        self.name = "worker"  # "worker N", as the coordinator's figures name its N-th process
        self.cpu = OwnCpu()
        self.finished = asyncio.Event()  # the stop answer is sent: the worker may exit
        self.users_nice: int | None = None  # the niceness its users' threads should have (priority.control_first)

    def report(self, op: str, mid: int) -> dict[str, Any]:
        assert self.pool is not None and self.recorder is not None
        stats = self.recorder.swap()
        health = self.pool.health(sum(st.count for st in stats.values()))
        report = WorkerReport(stats, health, self.pool.active, [self.recorder.quiet()],
                              {self.name: own_figures(self.cpu, self.probe.take(), self.host_cpu)},
                              self.pool.arrivals())
        return {"op": op, "id": mid, **report.to_wire()}

    async def handle(self, msg: dict[str, Any]) -> None:
        """One request. Answers that take time (users, stop) are sent by tasks."""
        op, mid = msg["op"], msg["id"]
        if op == "start":
            spec, setup, seed, dsn, index, count = pickle.loads(base64.b64decode(msg["setup"]))
            workload = build_workload(spec, setup, seed)
            self.recorder = Recorder(workload.names)
            self.pool = UserPool(dsn, workload, self.recorder, seed, offset=index, stride=count)
            # before any user's thread starts: those inherit the niceness of the thread that starts
            # them. Users with no Program run on asyncmy, on this loop: no thread of their own
            priority.control_first(self.users_nice, apart=self.pool.described)
            self.name = f"worker {index + 1}"
            self.send({"op": "ready", "id": mid, "pid": os.getpid()})
            return
        assert self.pool is not None
        if op == "users":
            # connecting can take a while: answer reports meanwhile
            task = asyncio.create_task(self._resize(mid, int(msg["n"]), bool(msg.get("wait", True)),
                                                    bool(msg.get("hold", False))))
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)
        elif op == "go":
            self.pool.release()
            self.send({"op": "go", "id": mid})
        elif op == "pace":
            self.pool.pace(float(msg["rate"]), bool(msg["poisson"]), int(msg["queue"]), float(msg["offset"]))
            self.send({"op": "pace", "id": mid})
        elif op == "report":
            self.send(self.report("report", mid))
        elif op == "cancel":
            self.pool.cancel_in_flight()
            self.send({"op": "cancel", "id": mid})
        elif op == "stop":
            # in a task, so that a "cancel" (a second Ctrl-C) is still read during the grace period
            task = asyncio.create_task(self._stop(mid, float(msg.get("grace", 5.0))))
            self.tasks.add(task)

    async def _stop(self, mid: int, grace: float) -> None:
        assert self.pool is not None
        await self.pool.stop_all(grace)
        self.send(self.report("stop", mid))
        self.finished.set()

    async def _resize(self, mid: int, n: int, wait: bool, hold: bool) -> None:
        assert self.pool is not None
        await self.pool.resize(n, wait, hold)
        self.send({"op": "users", "id": mid, "active": self.pool.active})


async def serve() -> None:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=1 << 24)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, sys.stdout)
    writer = asyncio.StreamWriter(transport, protocol, reader, loop)
    probe = LagProbe()
    probe.start(loop)
    worker = Worker(lambda msg: writer.write(json.dumps(msg, separators=(",", ":")).encode() + b"\n"), probe)
    finished = asyncio.create_task(worker.finished.wait())
    try:
        while True:
            reading = asyncio.create_task(reader.readline())
            await asyncio.wait({reading, finished}, return_when=asyncio.FIRST_COMPLETED)
            if finished.done():
                reading.cancel()
                break
            line = reading.result()
            if not line:
                break  # the coordinator is gone
            await worker.handle(json.loads(line))
            await writer.drain()
    finally:
        probe.stop()
        if worker.pool is not None:
            await worker.pool.stop_all(1.0)
        try:
            await writer.drain()
        except (ConnectionError, RuntimeError):
            pass


def main() -> None:
    # Ctrl-C at the terminal reaches the whole process group, and a supervisor's TERM or a hang-up
    # may reach every process of the run: only the coordinator decides to stop (and then closes
    # this worker's stdin, which ends it), so that it can still collect what the workers measured.
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
    stacks.on_request()
    try:
        run_loop(serve())
    except Exception as exc:
        # one line on stderr, which the coordinator logs; the whole story only when asked for
        if os.environ.get("BENCH_DEBUG"):
            traceback.print_exc()
        print(f"internal error: {type(exc).__name__}: {exc}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
