"""CPU use of the server process, the whole host and bench-dsl itself, as % of the machine.

The server's and the host's are sampled here, on the coordinator (CpuSampler). bench-dsl's own
CPU is measured by each process that runs users, for itself (OwnCpu), and travels in its report
(bench_dsl.fleet.base.WorkerReport): `client_cpu` adds the reports up. A worker on another
machine is then counted as one on this one, which no reading of local child processes could do."""

from __future__ import annotations

import bisect
import contextlib
import os
import time
from collections.abc import Iterable
from pathlib import Path

import psutil

from bench_dsl.core import limits
from bench_dsl.measure.metrics import PRESSURE_KEY, SCHED_KEY


class CpuSampler:
    """The server process (a throwaway one, or one of yours on this machine) and the host."""

    def __init__(self, server_pid: int | None) -> None:
        self.ncpu = psutil.cpu_count() or 1
        self.server: psutil.Process | None = None
        if server_pid is not None:
            with contextlib.suppress(psutil.Error):
                self.server = psutil.Process(server_pid)
        self.waits = Waits(self.server.pid if self.server is not None else None)
        self.sample()  # the first reading of cpu_percent is meaningless: prime it

    def allowed_cores(self) -> float | None:
        """The cores the server process may use: its affinity, and its cgroup's CPU quota where one
        is set (cgroup v2 cpu.max, v1 cpu.cfs_quota_us): a mysqld held to fewer cores than the host
        has shows as a low % of the host while it is out of CPU. None: it cannot be seen."""
        if self.server is None:
            return None
        try:
            cores: float = float(len(self.server.cpu_affinity() or ()) or self.ncpu)
        except (psutil.Error, AttributeError, OSError):
            cores = float(self.ncpu)
        quota = _cgroup_quota(self.server.pid)
        return min(cores, quota) if quota is not None else cores

    def sample(self) -> dict[str, float | None]:
        """Percent of all cores since the previous call; server is None when it cannot be seen."""
        server: float | None = None
        if self.server is not None:
            try:
                server = self.server.cpu_percent(None) / self.ncpu
            except psutil.Error:
                self.server = None
        return {"server": server, "host": psutil.cpu_percent(None), **self.waits.sample()}


PRESSURE = Path("/proc/pressure")


class Waits:
    """Who waited for a CPU or the disks since the last sample: the machine's pressure stall
    information ("some" of the time a task waited: a cgroup's I/O limit shows here and nowhere in
    the disk's counters) and, for a server on this machine, its threads' run delay (schedstat: time
    runnable, not running; RunDelay, a bounded number of threads read a sample) and its cgroup's CPU
    throttling. What the bottleneck's rules need to tell
    a CPU or a disk at its limit from one merely busy (bench_dsl.attribution). A figure that cannot
    be read is left out."""

    def __init__(self, pid: int | None) -> None:
        self.pid = pid
        # the server's CPU controller group with a quota, found once (None: no quota, never throttled);
        # its cpu.stat is then read at each sample, not /proc/PID/cgroup and the quota again
        self._quota_group = _quota_group(pid) if pid is not None else None
        self._at = time.monotonic()
        self._pressure = self._read_pressure()
        self._run_delay = RunDelay(pid) if pid is not None else None
        if self._run_delay is not None:
            self._run_delay.take(self._at)
        self._throttled = self._read_throttled()

    def sample(self) -> dict[str, float | None]:
        now = time.monotonic()
        wall, self._at = now - self._at, now
        pressure, throttled = self._read_pressure(), self._read_throttled()
        delay = self._run_delay.take(now) if self._run_delay is not None else None
        out: dict[str, float | None] = {}
        if wall > 0:
            for kind, us in pressure.items():
                if kind in self._pressure and us >= self._pressure[kind]:
                    out[PRESSURE_KEY + kind] = 100.0 * (us - self._pressure[kind]) / 1e6 / wall
            if delay is not None:
                out[SCHED_KEY + "run_delay_s_per_s"] = delay
            if throttled is not None and self._throttled is not None and throttled >= self._throttled:
                out[SCHED_KEY + "throttled_s_per_s"] = (throttled - self._throttled) / 1e9 / wall
        self._pressure, self._throttled = pressure, throttled
        return out

    @staticmethod
    def _read_pressure() -> dict[str, float]:
        out = {}
        for kind in ("cpu", "io"):
            with contextlib.suppress(OSError, ValueError, IndexError):
                some = (PRESSURE / kind).read_text().splitlines()[0]  # some avg10=.. avg60=.. avg300=.. total=us
                out[kind] = float(some.rsplit("total=", 1)[1])
        return out

    def _read_throttled(self) -> float | None:
        """The ns the server's cgroup was held back by its CPU quota (v1 throttled_time, v2
        throttled_usec), None without a quota: an unlimited group is never throttled."""
        if self._quota_group is None:
            return None
        group, v2, _ = self._quota_group
        with contextlib.suppress(OSError, ValueError):
            stat = dict(line.split() for line in (group / "cpu.stat").read_text().splitlines())
            if v2 and "throttled_usec" in stat:
                return float(stat["throttled_usec"]) * 1e3
            if not v2 and "throttled_time" in stat:
                return float(stat["throttled_time"])
        return None


# The most threads whose schedstat one sample reads. A server has a thread per connection (MariaDB's
# and MySQL's default thread handling): at thousands of connections, reading them all once a second
# on the coordinator's event loop is that many file reads on its control path. One read (open, read,
# close) costs about 4 us here (2,000 threads: 8 ms a sample; pathlib's read_text took 20 us each):
# 512 of them, 2 ms of the loop's second, and the figure is exactly last second's up to 512 threads.
READS_PER_SAMPLE = 512


class RunDelay:
    """The run delay of a process's threads (time runnable, waiting for a CPU), summed: seconds per
    second. No file holds the process's sum: /proc/PID/schedstat is its main thread's alone (the
    kernel prints the task's own sched_info, the group leader's for /proc/PID), /proc/PID/stat has
    no run delay (its field 42 is the block I/O delay), and taskstats' per-process CPU delay needs
    CAP_NET_ADMIN and delay accounting on. So each thread's /proc/PID/task/TID/schedstat (its second
    field, ns), at most `cap` of them a sample: with more threads, each sample reads the next `cap`
    in the order of their ids, round the list, and a thread's rate is over the time since it was read
    before. Up to `cap` threads the figure is the last second's, exactly as reading them all; with N
    threads, a thread's last ceil(N / cap) samples'. A thread gone takes its delay with it; a new one
    counts from its second read."""

    def __init__(self, pid: int, root: Path = Path("/proc"), cap: int = READS_PER_SAMPLE) -> None:
        self.task = f"{root}/{pid}/task/"
        self.cap = max(1, cap)
        self._read_at: dict[int, tuple[int, float]] = {}  # thread id -> (its run delay, ns; when read)
        self._rate: dict[int, float] = {}  # thread id -> its run delay over its last two reads, s/s
        self._next = 0  # the thread id the next sample reads from, round the list

    def take(self, now: float) -> float | None:
        """The threads' run delay per second, `now` the moment of this sample (monotonic seconds);
        None before any thread was read twice, or when the process cannot be seen."""
        try:
            tids = sorted(int(t) for t in os.listdir(self.task))
        except (OSError, ValueError):
            return None
        for gone in self._read_at.keys() - set(tids):
            del self._read_at[gone]
            self._rate.pop(gone, None)
        if not tids:
            return None
        start = bisect.bisect_left(tids, self._next)
        turn = (tids[start:] + tids[:start])[:self.cap]
        self._next = tids[(start + len(turn)) % len(tids)]
        for tid in turn:
            ns = self._read(tid)
            if ns is None:
                continue
            before = self._read_at.get(tid)
            if before is not None and ns >= before[0] and now > before[1]:
                self._rate[tid] = (ns - before[0]) / 1e9 / (now - before[1])
            self._read_at[tid] = (ns, now)
        return sum(self._rate.values()) if self._rate else None

    def _read(self, tid: int) -> int | None:
        try:
            fd = os.open(f"{self.task}{tid}/schedstat", os.O_RDONLY)
        except OSError:
            return None
        try:
            return int(os.read(fd, 256).split()[1])
        except (OSError, ValueError, IndexError):
            return None
        finally:
            os.close(fd)


class OwnCpu:
    """This process's CPU time between two takes: what its report says it used."""

    def __init__(self) -> None:
        self.me = psutil.Process()
        self._last = (time.monotonic(), self._busy())

    def _busy(self) -> float | None:
        try:
            t = self.me.cpu_times()  # user + system of every thread: the C executor's too
        except psutil.Error:
            return None
        return t.user + t.system

    def take(self) -> tuple[float | None, float]:
        """(CPU seconds used, wall seconds) since the previous take."""
        now, busy = time.monotonic(), self._busy()
        (then, before), self._last = self._last, (now, busy)
        return (None if busy is None or before is None else max(0.0, busy - before)), now - then


def client_cpu(processes: Iterable[tuple[str, float | None, float, str, int]]) -> dict[str, float | None]:
    """bench-dsl's CPU from its processes' own (name, CPU seconds, wall seconds, host, cores):
    "client", % of the machines they run on (each host's cores counted once), and "client:NAME",
    each process's % of one core (a process at 100% is out of CPU whatever the machine has left).
    "client" is None when no process said."""
    busy = 0.0
    cores: dict[str, int] = {}
    out: dict[str, float | None] = {}
    for name, cpu_s, wall_s, host, ncpu in processes:
        if cpu_s is None or wall_s <= 0:
            continue
        share = cpu_s / wall_s
        busy += share
        cores[host] = ncpu
        out[f"client:{name}"] = 100.0 * share
    total = sum(cores.values())
    return {"client": 100.0 * busy / total if total else None, **out}


def _cgroup_quota(pid: int) -> float | None:
    """A process's cgroup CPU quota in cores (v2 `cpu.max`, v1 `cpu.cfs_quota_us` over its period);
    None where none is set or it cannot be read."""
    found = _quota_group(pid)
    return found[2] if found is not None else None


def _quota_group(pid: int) -> tuple[Path, bool, float] | None:
    """The CPU controller group of a process that has a quota: its directory, whether it is cgroup v2,
    the quota in cores; None where none is set or it cannot be read."""
    for group, v2 in limits.cgroups(pid, "cpu"):
        try:
            if v2:
                quota, period = (group / "cpu.max").read_text().split()
                if quota != "max":
                    return group, True, int(quota) / int(period)
            elif (quota_us := int((group / "cpu.cfs_quota_us").read_text())) > 0:
                return group, False, quota_us / int((group / "cpu.cfs_period_us").read_text())
        except (OSError, ValueError):
            continue
    return None
