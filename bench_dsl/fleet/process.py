"""Users spread over worker processes on this machine (the `process` fleet): each worker
(bench_dsl.fleet.worker) runs its share on its own event loop and core, and answers each collect
with its WorkerReport; the coordinator adds its own CPU to theirs."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import math
import os
import pickle
import sys
from collections.abc import Callable
from typing import Any

from bench_dsl.core.dsn import Dsn
from bench_dsl.fleet.base import Health, WorkerFailed, WorkerReport, own_figures
from bench_dsl.language.model import Scenario
from bench_dsl.measure.cpu import OwnCpu

REPLY_TIMEOUT = 10.0  # a worker that does not answer a report in this time is stuck or dead


class _Proc:
    def __init__(self, index: int, proc: asyncio.subprocess.Process) -> None:
        self.index = index
        self.proc = proc
        self.pending: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self.active = 0
        self.reader: asyncio.Task[None] | None = None
        self.stderr: asyncio.Task[None] | None = None
        self.dead = False


def rate_shares(rate: float, queue: int, users: list[int]) -> list[tuple[float, int, float]]:
    """Each worker's (rate, queue, offset) for `users` users each. A share of the rate as large as
    its share of the users, so that every user of the pool serves the same rate and a worker with
    fewer users does not drop sooner (users max 5 on 2 workers: 3 and 2 users, 3/5 and 2/5 of the
    rate); its timeline offset by where its share starts among them, so that equal shares (the
    usual split) merge into evenly spaced arrivals. The queue is shared the same way, rounded up:
    a worker with users never has none."""
    total = sum(users)
    return [(rate * u / total, math.ceil(queue * u / total), sum(users[:i]) / total) for i, u in enumerate(users)]


class ProcessFleet:
    """Users spread over worker processes (bench_dsl.fleet.worker), each on its own event loop and core."""

    def __init__(self, sc: Scenario, dsn: Dsn, names: tuple[str, ...], count: int,
                 log: Callable[[str, str], None]) -> None:
        if sc.seed is None:  # each user's seed comes from the run's: a run draws it first (Scenario.seeded)
            raise ValueError("a fleet needs the run's seed")
        self.sc = sc
        self.dsn = dsn
        self.names = names
        self.count = count
        self._users = 0  # the users asked for last (resize): a rate is shared as they are
        self.log = log
        self.procs: list[_Proc] = []
        self._next_id = 0
        self._last_health = Health(0, 0.0, None, {})
        self.cpu = OwnCpu()  # the coordinator's own: merging the reports, the screen, the sinks

    @property
    def active(self) -> int:
        return sum(p.active for p in self.procs)

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
                if "active" in msg:
                    p.active = int(msg["active"])
                if fut is not None and not fut.done():
                    fut.set_result(msg)
        finally:
            p.dead = True
            for fut in p.pending.values():
                if not fut.done():
                    fut.set_exception(WorkerFailed(f"worker process {p.index} exited"))
            p.pending.clear()

    async def _read_stderr(self, p: _Proc) -> None:
        assert p.proc.stderr is not None
        while line := await p.proc.stderr.readline():
            text = line.decode(errors="replace").rstrip()
            if text:
                self.log(f"worker {p.index}: {text}", "warning")

    def _send(self, p: _Proc, msg: dict[str, Any]) -> asyncio.Future[dict[str, Any]]:
        self._next_id += 1
        msg["id"] = self._next_id
        fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        if p.dead or p.proc.stdin is None:
            fut.set_exception(WorkerFailed(f"worker process {p.index} exited"))
            return fut
        p.pending[self._next_id] = fut
        try:
            p.proc.stdin.write(json.dumps(msg, separators=(",", ":")).encode() + b"\n")
        except (ConnectionError, RuntimeError):
            p.pending.pop(self._next_id, None)
            fut.set_exception(WorkerFailed(f"worker process {p.index} exited"))
        return fut

    async def _ask(self, p: _Proc, msg: dict[str, Any], timeout: float | None = REPLY_TIMEOUT) -> dict[str, Any]:
        try:
            return await asyncio.wait_for(self._send(p, msg), timeout)
        except TimeoutError:
            raise WorkerFailed(f"worker process {p.index} did not answer {msg['op']!r} in {timeout:g}s") from None

    def share(self, n: int) -> list[int]:
        """n users over the workers, as evenly as possible (the first ones take the remainder)."""
        base, extra = divmod(n, self.count)
        return [base + (1 if i < extra else 0) for i in range(self.count)]

    async def resize(self, n: int, wait: bool = True) -> None:
        self._users = n
        # waited for: the new users of every worker are held until all of them are ready (UserPool.resize),
        # so that no worker's running users slow another's connecting ones
        futs = [self._send(p, {"op": "users", "n": k, "wait": wait, "hold": wait})
                for p, k in zip(self.procs, self.share(n), strict=True)]
        if wait:
            try:
                await asyncio.wait_for(asyncio.gather(*futs), 90)
            except TimeoutError:
                raise WorkerFailed(f"the worker processes did not start {n} users in 90s") from None
            finally:
                for p in self.procs:  # the answer says nothing: later messages come after it anyway
                    self._send(p, {"op": "go"}).add_done_callback(lambda f: f.exception())
        else:
            for f in futs:  # the answer only updates `active`; a failure shows at the next collect
                f.add_done_callback(lambda f: f.exception())

    async def pace(self, rate: float, poisson: bool, queue: int) -> None:
        users = self.share(self._users) if self._users >= self.count else [1] * self.count
        futs = [self._send(p, {"op": "pace", "rate": r, "poisson": poisson, "queue": q, "offset": o})
                for p, (r, q, o) in zip(self.procs, rate_shares(rate, queue, users), strict=True)]
        try:
            await asyncio.wait_for(asyncio.gather(*futs), REPLY_TIMEOUT)
        except TimeoutError:
            raise WorkerFailed(f"the worker processes did not take a new rate in {REPLY_TIMEOUT:g}s") from None

    def _merge(self, replies: list[dict[str, Any]]) -> WorkerReport:
        """The workers' reports and the coordinator's own figures (it runs no users: no lag)."""
        mine = WorkerReport({}, Health(0, float("inf"), None, {}), 0, [], {"coordinator": own_figures(self.cpu, {})})
        report = WorkerReport.merge([mine, *(WorkerReport.from_wire(r) for r in replies)], self.names)
        self._last_health = report.health
        return report

    async def collect(self) -> WorkerReport:
        results = await asyncio.gather(*(self._ask(p, {"op": "report"}) for p in self.procs), return_exceptions=True)
        replies = [r for r in results if isinstance(r, dict)]
        failed = next((r for r in results if isinstance(r, BaseException)), None)
        if failed is None:
            return self._merge(replies)
        if isinstance(failed, WorkerFailed):
            # the others reset their counts when they answered: their interval goes with the failure
            raise WorkerFailed(str(failed), partial=self._merge(replies))
        raise failed

    def health(self) -> Health:
        return self._last_health

    def cancel_in_flight(self) -> None:
        for p in self.procs:
            self._send(p, {"op": "cancel"}).add_done_callback(lambda f: f.exception())

    async def stop(self, grace: float = 5.0) -> WorkerReport:
        live = [p for p in self.procs if not p.dead]
        results = await asyncio.gather(*(self._ask(p, {"op": "stop", "grace": grace}, timeout=grace + 5) for p in live),
                                       return_exceptions=True)
        replies = [r for r in results if isinstance(r, dict)]
        for p in self.procs:
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
        return self._merge(replies)
