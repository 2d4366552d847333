"""Users spread over worker processes on this machine (the `process` fleet): each worker
(bench_dsl.fleet.worker) runs its share on its own event loop and core, and answers each collect
with its WorkerReport over its stdin/stdout, one JSON object a line; the coordinator's side of the
protocol is bench_dsl.fleet.coordinator's."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import pickle
import signal
import sys
from typing import Any

from bench_dsl.core import priority
from bench_dsl.core.dsn import redact
from bench_dsl.fleet.base import WorkerLostError
from bench_dsl.fleet.coordinator import WorkerFleet, WorkerHandle


class _Proc(WorkerHandle):
    def __init__(self, index: int, proc: asyncio.subprocess.Process) -> None:
        super().__init__(index)
        self.proc = proc
        self.pending: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self.reader: asyncio.Task[None] | None = None
        self.stderr: asyncio.Task[None] | None = None
        self.said = ""  # the last line it wrote on stderr: why it exited, when it could say
        self.exited = f"worker process {index} exited"  # with how, once known (`_exit_words`)


class ProcessFleet(WorkerFleet):
    """Users spread over worker processes (bench_dsl.fleet.worker), each on its own event loop and core."""

    async def start(self) -> None:
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        for i in range(self.count):
            # a process group of its own: Ctrl-C at the terminal must reach the coordinator only, which
            # stops the workers. Not a session of its own: under the kernel's autogroup each session
            # is weighed as one user of the CPU, so two worker sessions took two shares against the
            # server's one, where sysbench's threads, in one process, take one.
            # -P: the current directory is not put first on the path, so a folder there named like one
            # of our modules (a checkout of this repository) is never imported instead of the package
            proc = await asyncio.create_subprocess_exec(
                sys.executable, "-P", "-m", "bench_dsl.fleet.worker", stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=env,
                preexec_fn=os.setpgrp, limit=1 << 24)
            p = _Proc(i, proc)
            p.reader = asyncio.create_task(self._read(p))
            p.stderr = asyncio.create_task(self._read_stderr(p))
            self.procs.append(p)
        # the coordinator answers no one but reads every report in time: its threads rank with the
        # workers' control threads, above every user's. After the workers started: they inherit the
        # niceness of this thread at their start, and take their users' from it (priority.control_first)
        priority.control_first()
        sc = self.sc
        setup = [base64.b64encode(pickle.dumps((sc.workload, sc.setup, sc.seed, self.dsn, p.index, self.count)))
                 .decode() for p in self.procs]
        await asyncio.gather(*(self._ask(p, {"op": "start", "setup": s}, timeout=60)
                               for p, s in zip(self.procs, setup, strict=True)))

    async def _read(self, p: _Proc) -> None:
        assert p.proc.stdout is not None
        try:
            while line := await p.proc.stdout.readline():
                msg = json.loads(line)
                fut = p.pending.pop(msg["id"], None)
                self._answered(p, msg)
                if fut is not None and not fut.done():
                    fut.set_result(msg)
        finally:
            p.dead = True
            # how it ended, as far as can be known, for whoever waits for its answer now or asks later
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(p.proc.wait(), 2)
            p.exited = _exit_words(p)
            for fut in p.pending.values():
                if not fut.done():
                    fut.set_exception(WorkerLostError(p.exited))
            p.pending.clear()

    async def _read_stderr(self, p: _Proc) -> None:
        assert p.proc.stderr is not None
        while line := await p.proc.stderr.readline():
            text = line.decode(errors="replace").rstrip()
            if text:
                p.said = text
                self.log(f"worker {p.index}: {text}", "warning")

    def _send(self, p: _Proc, msg: dict[str, Any]) -> asyncio.Future[dict[str, Any]]:
        msg = self._next(msg)
        fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        if p.dead or p.proc.stdin is None:
            fut.set_exception(WorkerLostError(p.exited))
            return fut
        p.pending[self._next_id] = fut
        try:
            p.proc.stdin.write(json.dumps(msg, separators=(",", ":")).encode() + b"\n")
        except (ConnectionError, RuntimeError):
            p.pending.pop(self._next_id, None)
            fut.set_exception(WorkerLostError(p.exited))
        return fut

    async def _alive(self, p: _Proc) -> bool:
        return not p.dead and p.proc.returncode is None and starved(p.proc.pid)

    async def _end(self) -> None:
        for p in [*self.procs, *self.gone]:
            if p.proc.stdin is not None:
                with contextlib.suppress(Exception):
                    p.proc.stdin.close()
            try:
                await asyncio.wait_for(p.proc.wait(), 5)
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    p.proc.kill()
                await p.proc.wait()
            for t in (p.reader, p.stderr):
                if t is not None:
                    with contextlib.suppress(Exception):
                        await asyncio.wait_for(t, 2)


def _exit_words(p: _Proc) -> str:
    """How a worker process ended, for the run's failure: its exit status or the signal that killed
    it (SIGKILL: the kernel's OOM killer, or a person), and the last thing it said; "exited" alone
    left a 10,000-user run's failure unexplained."""
    rc = p.proc.returncode
    how = ("" if rc is None else f", killed by {_signal_name(-rc)}" if rc < 0 else f", exit status {rc}")
    said = f": {redact(p.said)[:300]}" if p.said else ""
    return f"worker process {p.index} exited{how}{said}"


def _signal_name(n: int) -> str:
    try:
        return signal.Signals(n).name
    except ValueError:
        return f"signal {n}"


def starved(pid: int) -> bool:
    """Whether process `pid` is there, neither stopped nor exited, and one of its threads runs or
    waits for a core: a worker short of CPU (its users busy, the machine full), not stuck. One whose
    every thread sleeps (a deadlock, a hang in bench-dsl) is not: its report's deadline stands."""
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return False
    runnable = False
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state in ("Z", "X", "T", "t"):
            return False
        runnable = runnable or state == "R"
    return runnable
