"""What the provoked bottleneck tests (test_bottleneck_provoked.py) start and always take down: a
throwaway server of the test's own (its pid is what a control group holds), control groups of
cgroup v1 that hold it to a CPU quota or a device's write rate, and a side session that holds a
table's lock for a while. Each is a context manager whose exit undoes what it did, whatever the
test did in between."""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

from bench_dsl.core.dsn import Dsn
from bench_dsl.language.model import ServerSetting
from bench_dsl.server.connect import connect
from bench_dsl.server.embedded import EmbeddedServer

CGROUP_V1 = Path("/sys/fs/cgroup")


@contextlib.contextmanager
def throwaway(settings: dict[str, int | str] | None = None, parent: str | None = None) -> Iterator[EmbeddedServer]:
    """A throwaway server with these settings (sizes in bytes), stopped at the end."""
    srv = EmbeddedServer(settings=tuple(ServerSetting(k, v, str(v)) for k, v in (settings or {}).items()),
                         max_connections=200, parent=parent)
    try:
        asyncio.run(srv.start())
        yield srv
    finally:
        srv.stop()


@contextlib.contextmanager
def cgroup(controller: str, files: dict[str, str], pid: int | None = None) -> Iterator[Path]:
    """A cgroup v1 group of `controller` with `files` written, holding the process `pid` (all its
    threads, and those it starts later) or, without one, whatever the caller puts in it; every
    task goes back to the root group and the group is removed at the end."""
    group = CGROUP_V1 / controller / f"bench-test-{uuid.uuid4().hex[:8]}"
    group.mkdir()
    try:
        for name, value in files.items():
            (group / name).write_text(value)
        if pid is not None:
            (group / "cgroup.procs").write_text(str(pid))
        yield group
    finally:
        for _ in range(50):  # the kernel lets a group go once its last task has left it
            with contextlib.suppress(OSError):  # a task gone has left by itself
                for tid in (group / "tasks").read_text().split():
                    with contextlib.suppress(OSError):
                        (CGROUP_V1 / controller / "tasks").write_text(tid)
            try:
                group.rmdir()
                break
            except OSError:
                time.sleep(0.1)


def device_of(path: Path) -> str:
    """MAJ:MIN of the whole disk under `path` (a partition's parent), as blkio's files take it."""
    dev = os.stat(path).st_dev
    major, minor = os.major(dev), os.minor(dev)
    part = Path(f"/sys/dev/block/{major}:{minor}")
    if (part / "partition").exists():
        return (part.resolve().parent / "dev").read_text().strip()
    return f"{major}:{minor}"


class HeldLock:
    """A side session that takes `LOCK TABLES <table> WRITE` after `after_s`, holds it `hold_s`,
    then lets go, over and over until stopped: every user's statement on the table waits for it
    ("Waiting for table metadata lock") for most of each step, on any machine."""

    def __init__(self, dsn: Dsn, table: str, after_s: float, hold_s: float, gap_s: float) -> None:
        self.dsn, self.table = dsn, table
        self.after_s, self.hold_s, self.gap_s = after_s, hold_s, gap_s
        self.done = threading.Event()
        self.held = 0  # times it took the lock
        self.thread = threading.Thread(target=lambda: asyncio.run(self._run()), daemon=True)

    async def _run(self) -> None:
        conn = await connect(self.dsn, self.dsn.database)
        try:
            async with conn.cursor() as cur:
                if self.done.wait(self.after_s):
                    return
                while not self.done.is_set():
                    await cur.execute(f"LOCK TABLES {self.table} WRITE")
                    self.held += 1
                    self.done.wait(self.hold_s)
                    await cur.execute("UNLOCK TABLES")
                    self.done.wait(self.gap_s)
        finally:
            conn.close()

    def __enter__(self) -> HeldLock:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.done.set()
        self.thread.join(timeout=30)
