"""CPU use of the server process, the whole host and bench-dsl itself, as % of the machine."""

from __future__ import annotations

import contextlib

import psutil


class CpuSampler:
    def __init__(self, server_pid: int | None) -> None:
        self.ncpu = psutil.cpu_count() or 1
        self.client = psutil.Process()
        self.server: psutil.Process | None = None
        if server_pid is not None:
            with contextlib.suppress(psutil.Error):
                self.server = psutil.Process(server_pid)
        self.sample()  # the first reading of cpu_percent is meaningless: prime it

    def sample(self) -> dict[str, float | None]:
        """Percent of all cores since the previous call; server is None when it cannot be seen."""
        server: float | None = None
        if self.server is not None:
            try:
                server = self.server.cpu_percent(None) / self.ncpu
            except psutil.Error:
                self.server = None
        return {
            "server": server,
            "host": psutil.cpu_percent(None),
            "client": self.client.cpu_percent(None) / self.ncpu,
        }
