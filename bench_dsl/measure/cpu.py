"""CPU use of the server process, the whole host and bench-dsl itself, as % of the machine."""

from __future__ import annotations

import contextlib
import time

import psutil


class CpuSampler:
    """bench-dsl itself is this process and its worker processes; a throwaway server is also our
    child process but counts as the server, never as the client."""

    def __init__(self, server_pid: int | None) -> None:
        self.ncpu = psutil.cpu_count() or 1
        self.me = psutil.Process()
        self.server_pid = server_pid
        self.server: psutil.Process | None = None
        if server_pid is not None:
            with contextlib.suppress(psutil.Error):
                self.server = psutil.Process(server_pid)
        self._client_times: dict[int, float] = {}
        self._last = time.monotonic()
        self.sample()  # the first reading of cpu_percent is meaningless: prime it

    def _client_processes(self) -> list[psutil.Process]:
        try:
            kids = self.me.children(recursive=True)
        except psutil.Error:
            kids = []
        # by pid: "worker 1" is the same process from one sample to the next
        return [self.me, *sorted((k for k in kids if k.pid != self.server_pid), key=lambda k: k.pid)]

    def _client_percent(self, wall: float) -> tuple[float, dict[str, float]]:
        """The client's CPU (% of the machine), and each of its processes' (% of one core: a
        process at 100% is out of CPU whatever the machine has left)."""
        # cpu_times deltas rather than cpu_percent: worker processes come and go between samples
        busy = 0.0
        seen: dict[int, float] = {}
        each: dict[str, float] = {}
        for i, p in enumerate(self._client_processes()):
            try:
                t = p.cpu_times()
            except psutil.Error:
                continue
            total = t.user + t.system
            seen[p.pid] = total
            used = total - self._client_times.get(p.pid, total)
            busy += used
            if wall > 0:
                each["coordinator" if i == 0 else f"worker {i}"] = 100.0 * used / wall
        self._client_times = seen
        return (100.0 * busy / wall / self.ncpu if wall > 0 else 0.0), each

    def sample(self) -> dict[str, float | None]:
        """Percent of all cores since the previous call; server is None when it cannot be seen."""
        now = time.monotonic()
        wall, self._last = now - self._last, now
        client, each = self._client_percent(wall)
        server: float | None = None
        if self.server is not None:
            try:
                server = self.server.cpu_percent(None) / self.ncpu
            except psutil.Error:
                self.server = None
        return {
            "server": server,
            "host": psutil.cpu_percent(None),
            "client": client,
            # each client process, % of one core: "client:coordinator", "client:worker 1" ...
            **{f"client:{name}": pct for name, pct in each.items()},
        }
