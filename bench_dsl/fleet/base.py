"""Where the virtual users run: in this process (LocalFleet) or spread over worker processes
(ProcessFleet). The run sees one interface: resize, collect a tick's figures, health, the
scheduling lag of the processes that run users, stop."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import pickle
import sys
from collections.abc import Callable
from typing import Any, Protocol

from bench_dsl.core.dsn import Dsn
from bench_dsl.core.errors import BenchError
from bench_dsl.measure.metrics import Recorder, TxStats
from bench_dsl.language.model import Scenario
from bench_dsl.measure.schedlag import LagProbe, Samples
from bench_dsl.measure.stalls import Quiet
from bench_dsl.fleet.users import Health, UserPool
from bench_dsl.workloads.base import Workload

REPLY_TIMEOUT = 10.0  # a worker that does not answer a report in this time is stuck or dead


class WorkerFailed(BenchError):
    """A worker process died or stopped answering: bench-dsl's own failure, not the server's.
    `partial`: when it happened during a report, what the other workers reported (already taken
    from them, so lost unless the caller counts it)."""

    def __init__(self, message: str, partial: dict[str, TxStats] | None = None) -> None:
        super().__init__(message)
        self.partial = partial


class Fleet(Protocol):
    @property
    def active(self) -> int: ...

    @property
    def processes(self) -> int: ...

    async def start(self) -> None: ...

    async def resize(self, n: int, wait: bool = True) -> None: ...

    async def collect(self) -> dict[str, TxStats]:
        """Everything measured since the last collect, per transaction name."""

    def health(self) -> Health: ...

    def lag(self) -> dict[str, Samples]:
        """The scheduling lag each process that runs users measured up to the last collect, by
        process ("coordinator", "worker 1", ...): bench_dsl.measure.schedlag's samples."""

    def quiet(self) -> list[Quiet]:
        """Each process's gaps between completions up to the last collect (bench_dsl.measure.stalls)."""

    def cancel_in_flight(self) -> None: ...

    async def stop(self, grace: float = 5.0) -> dict[str, TxStats]:
        """Stop every user; returns what was measured since the last collect."""


class LocalFleet:
    """All users on this process's event loop: no messages, no encoding."""

    def __init__(self, dsn: Dsn, workload: Workload, seed: int) -> None:
        self.recorder = Recorder(workload.names)
        self.pool = UserPool(dsn, workload, self.recorder, seed)
        self._health = self.pool.health()
        self.probe = LagProbe()  # the users share this process's loop: its lag is theirs
        self._lag: dict[str, Samples] = {}
        self._quiet: list[Quiet] = []

    @property
    def active(self) -> int:
        return self.pool.active

    @property
    def processes(self) -> int:
        return 1

    async def start(self) -> None:
        self.probe.start()

    async def resize(self, n: int, wait: bool = True) -> None:
        try:
            await self.pool.resize(n, wait, hold=wait)
        finally:
            self.pool.release()

    async def collect(self) -> dict[str, TxStats]:
        stats = self.recorder.swap()
        self._health = self.pool.health(sum(st.count for st in stats.values()))
        self._lag = {"coordinator": self.probe.take()}
        self._quiet = [self.recorder.quiet()]
        return stats

    def health(self) -> Health:
        return self._health

    def lag(self) -> dict[str, Samples]:
        return self._lag

    def quiet(self) -> list[Quiet]:
        return self._quiet

    def cancel_in_flight(self) -> None:
        self.pool.cancel_in_flight()

    async def stop(self, grace: float = 5.0) -> dict[str, TxStats]:
        self.probe.stop()
        await self.pool.stop_all(grace)
        return self.recorder.swap()


class _Proc:
    def __init__(self, index: int, proc: asyncio.subprocess.Process) -> None:
        self.index = index
        self.proc = proc
        self.pending: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self.active = 0
        self.reader: asyncio.Task[None] | None = None
        self.stderr: asyncio.Task[None] | None = None
        self.dead = False


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
        self.log = log
        self.procs: list[_Proc] = []
        self._next_id = 0
        self._last_health = Health(0, 0.0, None, {})
        self._last_lag: dict[str, Samples] = {}
        self._last_quiet: list[Quiet] = []

    @property
    def active(self) -> int:
        return sum(p.active for p in self.procs)

    @property
    def processes(self) -> int:
        return len(self.procs)

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
        setup = [base64.b64encode(pickle.dumps((sc.workload, sc.setup, sc.seed, self.dsn, p.index, self.count))).decode()
                 for p in self.procs]
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
        except asyncio.TimeoutError:
            raise WorkerFailed(f"worker process {p.index} did not answer {msg['op']!r} in {timeout:g}s") from None

    def share(self, n: int) -> list[int]:
        """n users over the workers, as evenly as possible (the first ones take the remainder)."""
        base, extra = divmod(n, self.count)
        return [base + (1 if i < extra else 0) for i in range(self.count)]

    async def resize(self, n: int, wait: bool = True) -> None:
        # waited for: the new users of every worker are held until all of them are ready (UserPool.resize),
        # so that no worker's running users slow another's connecting ones
        futs = [self._send(p, {"op": "users", "n": k, "wait": wait, "hold": wait})
                for p, k in zip(self.procs, self.share(n), strict=True)]
        if wait:
            try:
                await asyncio.wait_for(asyncio.gather(*futs), 90)
            except asyncio.TimeoutError:
                raise WorkerFailed(f"the worker processes did not start {n} users in 90s") from None
            finally:
                for p in self.procs:  # the answer says nothing: later messages come after it anyway
                    self._send(p, {"op": "go"}).add_done_callback(lambda f: f.exception())
        else:
            for f in futs:  # the answer only updates `active`; a failure shows at the next collect
                f.add_done_callback(lambda f: f.exception())

    def _merge(self, replies: list[tuple[_Proc, dict[str, Any]]]) -> dict[str, TxStats]:
        # named as bench_dsl.measure.cpu names the client's processes (its workers by pid: started in order)
        self._last_lag = {f"worker {p.index + 1}": r["lag"] for p, r in replies if r.get("lag")}
        self._last_quiet = [Quiet.from_wire(r["quiet"]) for _, r in replies if r.get("quiet")]
        out = {n: TxStats() for n in self.names}
        fails, idle, fatal, messages, executors = 0, float("inf"), None, {}, set()
        connected, refused, connect_error, never = 0, 0, None, 0
        for _, r in replies:
            for name, wire in r["tx"].items():
                if wire["count"] or wire["errors"] or wire["retries"]:
                    out[name].merge(TxStats.from_wire(wire))
            h = r["health"]
            fails += int(h["connect_failures"])
            idle = min(idle, float(h["idle_s"]))
            fatal = fatal or (tuple(h["fatal"]) if h["fatal"] else None)
            for code, msg in h["error_messages"].items():
                messages.setdefault(int(code), msg)
            executors.update(h.get("executors", ()))
            connected += int(h["connected"])
            refused += int(h["refused"])
            never += int(h.get("never_connected", 0))
            connect_error = connect_error or (tuple(h["connect_error"]) if h["connect_error"] else None)
        self._last_health = Health(fails, 0.0 if idle == float("inf") else idle, fatal, messages,  # type: ignore[arg-type]
                                   tuple(sorted(executors)), connected, refused, connect_error,  # type: ignore[arg-type]
                                   never)
        return out

    async def collect(self) -> dict[str, TxStats]:
        results = await asyncio.gather(*(self._ask(p, {"op": "report"}) for p in self.procs), return_exceptions=True)
        replies = [(p, r) for p, r in zip(self.procs, results, strict=True) if isinstance(r, dict)]
        failed = next((r for r in results if isinstance(r, BaseException)), None)
        if failed is None:
            return self._merge(replies)
        if isinstance(failed, WorkerFailed):
            # the others reset their counts when they answered: their interval goes with the failure
            raise WorkerFailed(str(failed), partial=self._merge(replies))
        raise failed

    def health(self) -> Health:
        return self._last_health

    def lag(self) -> dict[str, Samples]:
        return self._last_lag

    def quiet(self) -> list[Quiet]:
        return self._last_quiet

    def cancel_in_flight(self) -> None:
        for p in self.procs:
            self._send(p, {"op": "cancel"}).add_done_callback(lambda f: f.exception())

    async def stop(self, grace: float = 5.0) -> dict[str, TxStats]:
        live = [p for p in self.procs if not p.dead]
        results = await asyncio.gather(*(self._ask(p, {"op": "stop", "grace": grace}, timeout=grace + 5) for p in live),
                                       return_exceptions=True)
        replies = [(p, r) for p, r in zip(live, results, strict=True) if isinstance(r, dict)]
        for p in self.procs:
            if p.proc.stdin is not None:
                with contextlib.suppress(Exception):
                    p.proc.stdin.close()
            try:
                await asyncio.wait_for(p.proc.wait(), 5)
            except asyncio.TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    p.proc.kill()
                await p.proc.wait()
            for t in (p.reader, p.stderr):
                if t is not None:
                    with contextlib.suppress(Exception):
                        await asyncio.wait_for(t, 2)
        return self._merge(replies)


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
