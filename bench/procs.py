"""Client processes measured from the outside: CPU of a process tree over a window, peak memory,
stdout lines as they come, and a stop by pid (also when the benchmark is interrupted).

Both clients are measured the same way, by psutil on their process tree, so that sysbench (one
process, many threads) and bench-dsl (one process, or a coordinator with worker processes) are
charged for exactly what they burn between the same two events of their own output."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import psutil

# Every child started here, so that Ctrl-C or SIGTERM can stop them by pid before the harness exits.
_LIVE: dict[int, subprocess.Popen[str]] = {}
_LIVE_LOCK = threading.Lock()


def _proc_cpu(p: psutil.Process) -> float:
    t = p.cpu_times()
    # children_* holds the reaped children (a worker that already exited); live ones are counted
    # on their own below, so nothing is counted twice.
    return float(t.user + t.system + t.children_user + t.children_system)


def tree_cpu(pid: int) -> dict[int, float]:
    """CPU seconds (user + system) of a process and all its live descendants, per pid."""
    out: dict[int, float] = {}
    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.Error:
        return out
    for p in procs:
        with contextlib.suppress(psutil.Error):
            out[p.pid] = _proc_cpu(p)
    return out


def tree_rss(pid: int) -> int:
    """Resident memory of a process and its descendants, in bytes (shared pages counted in each)."""
    total = 0
    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.Error:
        return 0
    for p in procs:
        with contextlib.suppress(psutil.Error):
            total += int(p.memory_info().rss)
    return total


def _host_times() -> tuple[float, float]:
    """(busy, stolen) CPU seconds of the whole machine, all cores together."""
    t = psutil.cpu_times()
    total = sum(t)
    idle = t.idle + getattr(t, "iowait", 0.0)
    steal = getattr(t, "steal", 0.0)
    return total - idle - steal, steal


@dataclass(frozen=True)
class Snapshot:
    at: float  # time.monotonic()
    client: dict[int, float]
    server: float | None
    host_busy: float
    host_steal: float


def snapshot(client_pid: int, server_pid: int | None) -> Snapshot:
    server: float | None = None
    if server_pid is not None:
        with contextlib.suppress(psutil.Error):
            server = _proc_cpu(psutil.Process(server_pid))
    busy, steal = _host_times()
    return Snapshot(time.monotonic(), tree_cpu(client_pid), server, busy, steal)


@dataclass(frozen=True)
class Usage:
    """What one window cost: in CPU seconds, and as cores (CPU seconds per wall second)."""

    wall_s: float
    client_cpu_s: float
    client_busiest_cores: float  # the busiest single process of the client tree
    client_processes: int
    server_cpu_s: float | None
    host_busy_s: float
    host_steal_s: float

    @property
    def client_cores(self) -> float:
        return self.client_cpu_s / self.wall_s if self.wall_s > 0 else 0.0

    @property
    def server_cores(self) -> float | None:
        return None if self.server_cpu_s is None or self.wall_s <= 0 else self.server_cpu_s / self.wall_s

    @property
    def host_busy_cores(self) -> float:
        return self.host_busy_s / self.wall_s if self.wall_s > 0 else 0.0

    @property
    def other_cores(self) -> float:
        """Busy cores neither client nor server used: other people's load on a shared machine."""
        return max(0.0, self.host_busy_cores - self.client_cores - (self.server_cores or 0.0))

    def to_json(self) -> dict[str, float | int | None]:
        return {"wall_s": round(self.wall_s, 3), "client_cpu_s": round(self.client_cpu_s, 4),
                "client_cores": round(self.client_cores, 3),
                "client_busiest_cores": round(self.client_busiest_cores, 3),
                "client_processes": self.client_processes,
                "server_cpu_s": None if self.server_cpu_s is None else round(self.server_cpu_s, 4),
                "server_cores": None if self.server_cores is None else round(self.server_cores, 3),
                "host_busy_cores": round(self.host_busy_cores, 3), "other_cores": round(self.other_cores, 3),
                "host_steal_cores": round(self.host_steal_s / self.wall_s, 3) if self.wall_s > 0 else 0.0}


def usage(a: Snapshot, b: Snapshot) -> Usage:
    wall = b.at - a.at
    deltas = {pid: cpu - a.client.get(pid, 0.0) for pid, cpu in b.client.items()}
    busiest = max(deltas.values(), default=0.0)
    server = None if a.server is None or b.server is None else b.server - a.server
    return Usage(wall, sum(deltas.values()), busiest / wall if wall > 0 else 0.0, len(deltas), server,
                 b.host_busy - a.host_busy, b.host_steal - a.host_steal)


@dataclass
class PeakMemory:
    """Samples a process tree's resident memory in the background; keeps the peak."""

    pid: int
    every_s: float = 0.25
    peak: int = 0
    samples: int = 0
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="rss-sampler", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            rss = tree_rss(self.pid)
            if rss:
                self.peak = max(self.peak, rss)
                self.samples += 1
            self._stop.wait(self.every_s)

    def stop(self) -> int:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        return self.peak


class Child:
    """A client process in its own session (so Ctrl-C at the terminal reaches the harness only,
    which then stops it by pid), stdout read line by line, stderr kept in a file."""

    def __init__(self, cmd: list[str], log: Path, env: dict[str, str] | None = None,
                 cwd: Path | None = None) -> None:
        self.cmd = cmd
        self.log = log
        self._err = open(log, "w", encoding="utf-8")  # noqa: SIM115 - closed in wait()
        self.proc: subprocess.Popen[str] = subprocess.Popen(
            cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=self._err, text=True, bufsize=1,
            env=env, cwd=cwd, start_new_session=True)
        with _LIVE_LOCK:
            _LIVE[self.proc.pid] = self.proc

    @property
    def pid(self) -> int:
        return self.proc.pid

    def lines(self, deadline: float) -> Iterator[str]:
        """stdout lines until the process closes it; past `deadline` (monotonic) the process is stopped."""
        assert self.proc.stdout is not None
        timer = threading.Timer(max(0.0, deadline - time.monotonic()), self.stop)
        timer.daemon = True
        timer.start()
        try:
            for line in self.proc.stdout:
                yield line.rstrip("\n")
        finally:
            timer.cancel()

    def wait(self, timeout: float = 60) -> int:
        try:
            code = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.stop()
            code = self.proc.wait()
        finally:
            self._err.close()
        with _LIVE_LOCK:
            _LIVE.pop(self.proc.pid, None)
        return code

    def stop(self) -> None:
        stop_pid(self.proc)

    def stderr_tail(self, lines: int = 15) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""


def stop_pid(proc: subprocess.Popen[str], grace: float = 10.0) -> None:
    """SIGTERM by pid, SIGKILL after `grace` seconds. Only ever our own child, never by name."""
    if proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.kill(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, signal.SIGKILL)
        proc.wait()


def stop_all_children() -> None:
    with _LIVE_LOCK:
        procs = list(_LIVE.values())
        _LIVE.clear()
    for p in procs:
        stop_pid(p)


def raise_fd_limit(wanted: int) -> int:
    """1,000 virtual users need more than the usual 1,024 open files: raise the soft limit (which
    the clients inherit) up to the hard one, as one would with `ulimit -n` before sysbench."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if soft != resource.RLIM_INFINITY and soft < target:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        return target
    return soft
