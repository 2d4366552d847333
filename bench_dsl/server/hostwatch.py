"""The server host's CPU and disks.

A server of your own on another machine: `monitor "http://db1:9100/metrics"` scrapes the
Prometheus node_exporter users already run there, once a second with a short timeout, and reads
the host's CPU (`node_cpu_seconds_total`) and each disk (`node_disk_*`). A server on this machine
(the throwaway one, or a local one): the disk that holds its data directory, from the kernel's
counters (/proc/diskstats through psutil).

Per disk, over the time between two readings: util (% of the time the device had I/O in flight,
iostat's %util), iops (reads and writes completed per second) and await (ms a request took on
average, queueing included). `busiest` is the device with the highest util. A scrape that fails
(no answer, or counters that are NaN, infinite or negative) is a warning and a gap in the figures,
never the end of the run; a monitor that never answers at the start, when a condition needs it,
is the scenario's error (bench_dsl.server.side)."""

from __future__ import annotations

import asyncio
import math
import os
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import psutil
from prometheus_client.parser import text_string_to_metric_families

from bench_dsl.core.errors import error_reason
from bench_dsl.server.periodic import Periodic

SCRAPE_TIMEOUT = 2.0
FIRST_TRIES = 3  # scrapes at the start, a second apart, before a monitor a condition needs is given up
MAX_BODY = 16 << 20  # a node_exporter page is some 100 KB; this bounds a wrong URL's cost


@dataclass(frozen=True, slots=True)
class Disk:
    io_s: float  # seconds with I/O in flight, cumulative
    ops: float  # reads + writes completed, cumulative
    op_s: float  # seconds spent by reads and writes, cumulative


@dataclass(frozen=True, slots=True)
class HostReading:
    at: float  # monotonic
    cpu_busy: float | None  # cumulative seconds over all cores (node_exporter only)
    cpu_total: float | None
    disks: dict[str, Disk] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class HostSample:
    """What the host did between two readings."""

    seconds: float
    cpu_pct: float | None  # % of all the host's cores
    disks: dict[str, dict[str, float]]  # device -> util_pct, iops, await_ms

    def busiest(self) -> tuple[str, dict[str, float]] | None:
        if not self.disks:
            return None
        return max(self.disks.items(), key=lambda kv: kv[1]["util_pct"])


class NotCounters(ValueError):
    """A page that answered with figures no counter can have (NaN, infinite, negative): a failed
    scrape, never a reading. Read as numbers they would judge nothing (NaN compares false with any
    limit, so `cpu(server) > 99%` could never fire) or show an infinite disk as "100% busy"."""


READ = ("node_cpu_seconds_total", "node_disk_io_time_seconds_total", "node_disk_reads_completed_total",
        "node_disk_writes_completed_total", "node_disk_read_time_seconds_total", "node_disk_write_time_seconds_total")


def parse_node_exporter(text: str, at: float) -> HostReading:
    busy = total = 0.0
    seen_cpu = False
    io: dict[str, float] = {}
    ops: dict[str, float] = {}
    op_s: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            name, labels, value = s.name, s.labels, float(s.value)
            if name in READ and not (math.isfinite(value) and value >= 0):
                where = ",".join(f'{k}="{v}"' for k, v in labels.items())
                shown = "NaN" if math.isnan(value) else f"{value:+}".replace("inf", "Inf")  # as the page writes it
                raise NotCounters(f"{name}{{{where}}} is {shown}: a counter is a finite number, never negative")
            if name == "node_cpu_seconds_total":
                seen_cpu = True
                total += value
                if labels.get("mode") not in ("idle", "iowait"):  # iowait is idle time waiting on disks
                    busy += value
            elif name == "node_disk_io_time_seconds_total":
                io[labels.get("device", "?")] = value
            elif name in ("node_disk_reads_completed_total", "node_disk_writes_completed_total"):
                d = labels.get("device", "?")
                ops[d] = ops.get(d, 0.0) + value
            elif name in ("node_disk_read_time_seconds_total", "node_disk_write_time_seconds_total"):
                d = labels.get("device", "?")
                op_s[d] = op_s.get(d, 0.0) + value
    disks = {d: Disk(io[d], ops.get(d, 0.0), op_s.get(d, 0.0)) for d in io}
    return HostReading(at, busy if seen_cpu else None, total if seen_cpu else None, disks)


def difference(before: HostReading, after: HostReading) -> HostSample | None:
    secs = after.at - before.at
    if secs <= 0:
        return None
    cpu = None
    if before.cpu_total is not None and after.cpu_total is not None and before.cpu_busy is not None \
            and after.cpu_busy is not None and after.cpu_total > before.cpu_total:
        cpu = round(100.0 * (after.cpu_busy - before.cpu_busy) / (after.cpu_total - before.cpu_total), 2)
    disks: dict[str, dict[str, float]] = {}
    for name, a in after.disks.items():
        b = before.disks.get(name)
        if b is None or a.ops < b.ops or a.io_s < b.io_s:
            continue  # new, or its counters went back (a device replaced): nothing to compare
        done = a.ops - b.ops
        disks[name] = {"util_pct": round(min(100.0, 100.0 * (a.io_s - b.io_s) / secs), 2),
                       "iops": round(done / secs, 2),
                       "await_ms": round(1000.0 * (a.op_s - b.op_s) / done, 3) if done else 0.0}
    return HostSample(round(secs, 3), cpu, disks)


def device_of(path: str) -> str | None:
    """The block device (as /proc/diskstats names it) that holds `path`; None for tmpfs, overlay
    and other file systems with no disk of their own."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    major, minor = os.major(st.st_dev), os.minor(st.st_dev)
    try:
        with open(f"/sys/dev/block/{major}:{minor}/uevent", encoding="ascii") as f:
            for line in f:
                if line.startswith("DEVNAME="):
                    return line.strip().split("=", 1)[1]
    except OSError:
        return None
    return None


class SharedPage:
    """One node_exporter page for every watch that reads it each second (the host's figures, the
    machine's power): a page fetched less than FRESH_S ago is handed again, and a fetch under way
    is awaited, not doubled: one scrape a second where two watches read the same exporter."""

    FRESH_S = 0.9  # under the watches' second: each second's readings share a page, none is older than a second

    def __init__(self, url: str, clock: Callable[[], float] = time.monotonic,
                 fetcher: Callable[[str], str] | None = None) -> None:
        self.url = url
        self._clock = clock
        self._fetcher = fetcher or fetch
        self._page: tuple[float, str] | None = None  # when it was fetched, and its text
        self._fetching: asyncio.Future[tuple[float, str]] | None = None

    async def get(self) -> tuple[float, str]:
        if self._page is not None and self._clock() - self._page[0] < self.FRESH_S:
            return self._page
        if self._fetching is None or self._fetching.done():
            self._fetching = asyncio.ensure_future(self._fetch())
            # a failure is each awaiting watch's to say; none left to say it is no warning at exit
            self._fetching.add_done_callback(lambda f: f.cancelled() or f.exception())
        # shielded: a watch stopped while it waits does not cancel the fetch another waits for
        return await asyncio.shield(self._fetching)

    async def _fetch(self) -> tuple[float, str]:
        text = await asyncio.to_thread(self._fetcher, self.url)
        self._page = (self._clock(), text)
        return self._page


class HostWatch(Periodic[HostReading]):
    """Readings in the background, one a second; `take()` gives what happened since the last take."""

    def __init__(self, url: str | None, data_dir: str | None, warn: Callable[[str], None]) -> None:
        super().__init__()
        self.url = url
        self.page = SharedPage(url) if url is not None else None
        self.device = device_of(data_dir) if data_dir and url is None else None
        self.warn = warn
        self.source = "node_exporter" if url else ("diskstats" if self.device else None)
        self.not_counters = False  # the latest reading failed, answered with figures that are not counters

    @property
    def active(self) -> bool:
        return self.source is not None

    def start(self) -> None:
        if self.active:
            super().start()

    def take(self) -> HostSample | None:
        if (pair := self.newest()) is None:
            return None
        before, now = pair
        return difference(before, now) if before is not None else None

    async def _reading(self) -> HostReading:
        if self.page is not None:
            at, text = await self.page.get()
            return parse_node_exporter(text, at)
        return _local(self.device)

    def _failed(self, exc: Exception, quiet: bool) -> None:
        self.last_error = error_reason(exc)
        self.not_counters = isinstance(exc, NotCounters)
        if not quiet:  # said once; said again when it works again
            self.warn(f"could not read {self.url or '/proc/diskstats'}: {self.last_error}; "
                      "the host's figures have a gap")

    def _again(self) -> None:
        self.warn(f"reading {self.url or '/proc/diskstats'} again")


def fetch(url: str) -> str:
    with urllib.request.urlopen(url, timeout=SCRAPE_TIMEOUT) as r:
        body = r.read(MAX_BODY + 1)
    if len(body) > MAX_BODY:
        raise ValueError(f"the page is larger than {MAX_BODY >> 20} MiB: not a node_exporter")
    return body.decode("utf-8", errors="replace")


def _local(device: str | None) -> HostReading:
    disks: dict[str, Disk] = {}
    if device is not None:
        counters = psutil.disk_io_counters(perdisk=True, nowrap=True) or {}
        c: Any = counters.get(device)
        if c is not None:
            disks[device] = Disk(c.busy_time / 1000.0, float(c.read_count + c.write_count),
                                 (c.read_time + c.write_time) / 1000.0)
    return HostReading(time.monotonic(), None, None, disks)
