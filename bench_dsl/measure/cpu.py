"""CPU use of the server process, the whole host and bench-dsl itself, as % of the machine.

The server's and the host's are sampled here, on the coordinator (CpuSampler). bench-dsl's own
CPU is measured by each process that runs users, for itself (OwnCpu), and travels in its report
(bench_dsl.fleet.base.WorkerReport): `client_cpu` adds the reports up. A worker on another
machine is then counted as one on this one, which no reading of local child processes could do."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterable

import psutil

from bench_dsl.core import limits


class CpuSampler:
    """The server process (a throwaway one, or one of yours on this machine) and the host."""

    def __init__(self, server_pid: int | None) -> None:
        self.ncpu = psutil.cpu_count() or 1
        self.server: psutil.Process | None = None
        if server_pid is not None:
            with contextlib.suppress(psutil.Error):
                self.server = psutil.Process(server_pid)
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
        return {"server": server, "host": psutil.cpu_percent(None)}


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
    for group, v2 in limits.cgroups(pid, "cpu"):
        try:
            if v2:
                quota, period = (group / "cpu.max").read_text().split()
                if quota != "max":
                    return int(quota) / int(period)
            elif (quota_us := int((group / "cpu.cfs_quota_us").read_text())) > 0:
                return quota_us / int((group / "cpu.cfs_period_us").read_text())
        except (OSError, ValueError):
            continue
    return None
