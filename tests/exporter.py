"""A real Prometheus node_exporter (Debian's prometheus-node-exporter) on a free loopback port, for
the tests that watch a server's host through `monitor`. Stopped by its pid when done."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager

EXPORTER = shutil.which("prometheus-node-exporter") or "/usr/bin/prometheus-node-exporter"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def node_exporter(*collectors: str) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """The exporter's process and its metrics URL, once it accepts connections. `collectors`: its
    flags (default: the CPU's and the disks'; a test's own sysfs tree: --path.sysfs=DIR)."""
    port = free_port()
    proc = subprocess.Popen([EXPORTER, f"--web.listen-address=127.0.0.1:{port}", "--collector.disable-defaults",
                             *(collectors or ("--collector.cpu", "--collector.diskstats"))],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/metrics"
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                break
        except OSError:
            time.sleep(0.05)
    try:
        yield proc, url
    finally:
        if proc.poll() is None:
            proc.terminate()
            proc.wait(timeout=10)
