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


class SlowLink:
    """A TCP proxy on 127.0.0.1 that delays every chunk `delay_ms` each way, in order: a network
    with that much latency between the users and `target` (no netem here). Its own thread and event
    loop; `port` is where to connect."""

    def __init__(self, target_port: int, delay_ms: float) -> None:
        self.target_port, self.delay = target_port, delay_ms / 1000.0
        self.port = 0
        self.loop = asyncio.new_event_loop()
        self.ready = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)

    def _serve(self) -> None:
        asyncio.set_event_loop(self.loop)
        server = self.loop.run_until_complete(asyncio.start_server(self._client, "127.0.0.1", 0))
        self.port = server.sockets[0].getsockname()[1]
        self.ready.set()
        try:
            self.loop.run_forever()
        finally:
            server.close()
            for task in asyncio.all_tasks(self.loop):
                task.cancel()
            self.loop.run_until_complete(asyncio.sleep(0))
            self.loop.close()

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_r, up_w = await asyncio.open_connection("127.0.0.1", self.target_port)
        except OSError:
            writer.close()
            return
        await asyncio.gather(self._pump(reader, up_w), self._pump(up_r, writer), return_exceptions=True)

    async def _pump(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        queue: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()

        async def send() -> None:
            while True:
                due, data = await queue.get()
                if not data:
                    break
                if (wait := due - self.loop.time()) > 0:
                    await asyncio.sleep(wait)
                writer.write(data)
                await writer.drain()
            writer.close()

        sender = asyncio.ensure_future(send())
        try:
            while data := await reader.read(65536):
                queue.put_nowait((self.loop.time() + self.delay, data))
        finally:
            queue.put_nowait((0.0, b""))
            await sender

    def __enter__(self) -> SlowLink:
        self.thread.start()
        self.ready.wait(10)
        return self

    def __exit__(self, *exc: object) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=10)
