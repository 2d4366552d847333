"""Two costs of the engine measured on their own, each beside a reference taken in the same run:

- measurement overhead: timing and recording one transaction, as the user loop does it
  (`time.perf_counter_ns()` twice and `Recorder.ok`), against the same loop calling a method that
  does nothing but count (what any Python per-transaction step costs on this machine right now);
- embedded server start to first query: `EmbeddedServer.start()` then a first `SELECT 1` over TCP,
  against the same steps done bare (mariadb-install-db, mariadbd, poll, `SELECT 1`), so that the
  part bench-dsl adds shows apart from what MariaDB itself takes on this disk at this moment."""

from __future__ import annotations

import asyncio
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.stats import ratio_summary

OVERHEAD_TARGET_NS = 2_000
SERVER_START_TARGET_S = 1.5
# A latency a real transaction could have: the histogram's bucket arithmetic is the same for every
# value, but a constant 0 (back-to-back clock reads) would hide nothing and look unrealistic.
TYPICAL_US = 250


class _Counting:
    """The reference: a method of the same shape as Recorder.ok that only counts."""

    __slots__ = ("n",)

    def __init__(self) -> None:
        self.n = 0

    def ok(self, i: int, micros: int, queries: int) -> None:
        self.n += 1


def _timed_loop(rec: Any, n: int) -> float:
    """ns per transaction of the engine's measuring code, written as the user loop writes it."""
    i, q = 0, 1
    start = time.perf_counter_ns()
    for _ in range(n):
        t0 = time.perf_counter_ns()
        rec.ok(i, (time.perf_counter_ns() - t0) // 1000 + TYPICAL_US, q)
    return (time.perf_counter_ns() - start) / n


def _reference_loop(ref: _Counting, n: int) -> float:
    i, q, t0 = 0, 1, 0
    start = time.perf_counter_ns()
    for _ in range(n):
        ref.ok(i, (t0 - t0) // 1000 + TYPICAL_US, q)
    return (time.perf_counter_ns() - start) / n


def measurement_overhead(pairs: int, iterations: int) -> dict[str, Any]:
    from bench_dsl.measure.recorder import Recorder

    rec = Recorder(("tx",))
    ref = _Counting()
    _timed_loop(rec, iterations // 10)  # warm the caches and the histogram's first buckets
    _reference_loop(ref, iterations // 10)
    timed: list[float] = []
    refs: list[float] = []
    for _ in range(pairs):  # A B A B: reference, then the engine's code
        refs.append(_reference_loop(ref, iterations))
        timed.append(_timed_loop(rec, iterations))
        rec.swap()  # as each tick does: fresh histograms, so the run never grows one without bound
    net = [t - r for t, r in zip(timed, refs, strict=True)]
    med = statistics.median(timed)
    return {
        "what": "time.perf_counter_ns() x2 + Recorder.ok(), ns per transaction",
        "pairs": pairs, "iterations": iterations,
        "ns_per_tx": round(med, 1), "reference_ns": round(statistics.median(refs), 1),
        "net_ns": round(statistics.median(net), 1),
        "ratio_to_reference": ratio_summary(refs, timed),
        "target_ns": OVERHEAD_TARGET_NS, "meets_target": med < OVERHEAD_TARGET_NS,
        "samples_ns": [round(t, 1) for t in timed], "reference_samples_ns": [round(r, 1) for r in refs],
    }


# server start -----------------------------------------------------------------------------------

async def _first_query(host: str, port: int, password: str) -> None:
    import asyncmy

    conn = await asyncmy.connect(host=host, port=port, user="root", password=password, connect_timeout=5)
    try:
        async with conn.cursor() as cur:
            await cur.execute("SELECT 1")
            await cur.fetchone()
    finally:
        conn.close()


async def _embedded_once() -> float:
    from bench_dsl.server.embedded import EmbeddedServer

    srv = EmbeddedServer()
    t0 = time.perf_counter()
    try:
        dsn = await srv.start()
        await _first_query("127.0.0.1", dsn.port, dsn.password)
        return time.perf_counter() - t0
    finally:
        srv.stop()  # by its own pid (its Popen), and its files removed


async def _poll_first_query(port: int, proc: subprocess.Popen[bytes]) -> None:
    """Connect as soon as the server listens, as EmbeddedServer.start() does (every 20 ms)."""
    import asyncmy

    deadline = time.monotonic() + 60
    while True:
        try:
            await _first_query("127.0.0.1", port, "")  # a bare server of its own: no password
            return
        except (OSError, asyncmy.errors.MySQLError):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the bare server did not answer") from None
            await asyncio.sleep(0.02)


def _bare_once() -> float:
    """The reference: the same steps without bench-dsl (its own helpers only find the binaries)."""
    from bench_dsl.server.embedded import _free_port, find_binary

    mysqld = find_binary("mariadbd", "mysqld")
    installer = find_binary("mariadb-install-db", "mysql_install_db")
    if mysqld is None:
        raise RuntimeError("no mariadbd or mysqld")
    base = Path(tempfile.mkdtemp(prefix="bench-harness-bare-"))
    user = ["--user=root"] if os.geteuid() == 0 else []
    proc: subprocess.Popen[bytes] | None = None
    t0 = time.perf_counter()
    try:
        if installer is not None:
            cmd = [installer, "--no-defaults", f"--datadir={base / 'data'}", "--auth-root-authentication-method=normal",
                   "--skip-test-db", f"--basedir={Path(mysqld).resolve().parent.parent}", *user]
        else:
            cmd = [mysqld, "--no-defaults", "--initialize-insecure", f"--datadir={base / 'data'}", *user]
        subprocess.run(cmd, capture_output=True, check=True)
        port = _free_port()
        proc = subprocess.Popen([mysqld, "--no-defaults", f"--datadir={base / 'data'}",
                                 f"--socket={base / 's.sock'}", f"--port={port}", "--bind-address=127.0.0.1",
                                 f"--pid-file={base / 'p.pid'}", f"--log-error={base / 'e.log'}",
                                 "--skip-name-resolve", "--skip-log-bin", f"--tmpdir={base}", *user],
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True)
        asyncio.run(_poll_first_query(port, proc))
        return time.perf_counter() - t0
    finally:
        if proc is not None and proc.poll() is None:
            proc.terminate()  # our own child, by its pid
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        shutil.rmtree(base, ignore_errors=True)


def server_start(pairs: int) -> dict[str, Any]:
    bare: list[float] = []
    embedded: list[float] = []
    for _ in range(pairs):
        bare.append(_bare_once())
        embedded.append(asyncio.run(_embedded_once()))
    med = statistics.median(embedded)
    return {
        "what": "EmbeddedServer.start() + first SELECT 1 over TCP, seconds",
        "pairs": pairs, "seconds": round(med, 3), "reference_seconds": round(statistics.median(bare), 3),
        "ratio_to_reference": ratio_summary(bare, embedded),
        "target_s": SERVER_START_TARGET_S, "meets_target": med < SERVER_START_TARGET_S,
        "samples_s": [round(x, 3) for x in embedded], "reference_samples_s": [round(x, 3) for x in bare],
    }
