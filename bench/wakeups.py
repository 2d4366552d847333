"""Where a client's waiting puts the server's work: rescheduling interrupts, server CPU and client
CPU per transaction, for sysbench and for bench-dsl on each of its executors, alternated on one
throwaway server (point selects). This is how the thread-per-user executor was chosen
(docs/performance.md, "What limits bench-dsl today"); run it again when the executor changes.

    .venv/bin/python -m bench.wakeups [--users 16,64,256] [--rounds 2] [--window 6]

Each client warms up for a window from its first executed statement (its start, processes and
connections, is not in it), then the figures are taken over the next window and the client is
stopped (Ctrl-C for bench-dsl, which writes its result and ends). The figures come from
/proc/interrupts (RES: rescheduling IPIs, all cores), the server's and the client's process trees
(psutil) and the server's Com_stmt_execute (every point select is one). Prints a markdown table."""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

from bench_dsl.core.dsn import Dsn
from bench_dsl.server.connect import connect
from bench_dsl.server.embedded import EmbeddedServer

BENCH = str(Path(sys.executable).with_name("bench"))
TABLES = 4
# a client runs until it is stopped after its windows; this bounds it if the harness dies first
LONGER = 120
CLIENTS = (("sysbench", None), ("bench-dsl, C executor", "1"), ("bench-dsl, asyncmy", "0"))


def rescheduling_interrupts() -> int:
    with open("/proc/interrupts") as f:
        for line in f:
            if line.strip().startswith("RES:"):
                return sum(int(x) for x in line.split()[1:] if x.isdigit())
    raise RuntimeError("no RES line in /proc/interrupts")


def tree_cpu(p: psutil.Process) -> float:
    total = 0.0
    for q in [p, *p.children(recursive=True)]:
        try:
            t = q.cpu_times()
            total += t.user + t.system
        except psutil.Error:  # a worker that has just ended
            pass
    return total


async def executions(dsn: Dsn) -> int:
    conn = await connect(dsn, None)
    try:
        async with conn.cursor() as cur:
            await cur.execute("SHOW GLOBAL STATUS LIKE 'Com_stmt_execute'")
            row = await cur.fetchone()
            return int(row[1])
    finally:
        conn.close()


async def started(dsn: Dsn, child: subprocess.Popen[bytes], timeout: float = 120.0) -> None:
    """Returns once the client has executed statements: a loaded machine can take seconds to start
    its processes and connect them, and a window begun before that measures a client not running."""
    before = await executions(dsn)
    deadline = time.monotonic() + timeout
    while await executions(dsn) <= before:
        if child.poll() is not None:
            raise SystemExit(f"the client ended (exit {child.returncode}) before it executed a statement")
        if time.monotonic() > deadline:
            raise SystemExit(f"the client executed no statement in {timeout:.0f} s")
        await asyncio.sleep(0.05)


async def one(dsn: Dsn, port: int, server: psutil.Process, bench_file: Path, users: int, table_size: int,
              mode: str | None, window: float) -> dict[str, float]:
    if mode is None:
        cmd = ["sysbench", "oltp_point_select", "--mysql-host=127.0.0.1", f"--mysql-port={port}", "--mysql-user=root",
               f"--mysql-password={dsn.password}",  # sysbench takes it no other way; a throwaway server's
               "--mysql-db=benchdsl", f"--tables={TABLES}", f"--table-size={table_size}", f"--threads={users}",
               f"--time={LONGER + int(2 * window)}", "run"]
    else:
        cmd = [BENCH, "run", str(bench_file), "--headless", "--json", str(bench_file.with_suffix(".json"))]
    env = {**os.environ, **({"BENCH_RAWEXEC": mode} if mode else {})}
    child = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    try:
        client = psutil.Process(child.pid)
        await started(dsn, child)
        await asyncio.sleep(window)
        x0, i0, s0, c0, t0 = await executions(dsn), rescheduling_interrupts(), tree_cpu(server), tree_cpu(client), \
            time.monotonic()
        await asyncio.sleep(window)
        x1, i1, s1, c1, t1 = await executions(dsn), rescheduling_interrupts(), tree_cpu(server), tree_cpu(client), \
            time.monotonic()
    finally:
        if child.poll() is None:
            child.send_signal(signal.SIGINT)
        child.wait(timeout=120)
    n = max(x1 - x0, 1)
    return {"tps": n / (t1 - t0), "res": (i1 - i0) / n, "server_us": (s1 - s0) / n * 1e6, "client_us": (c1 - c0) / n * 1e6}


async def main(users: list[int], rounds: int, window: float, table_size: int) -> None:
    if shutil.which("sysbench") is None:
        raise SystemExit("sysbench is missing: bench/install-sysbench.sh installs it")
    srv = EmbeddedServer(max_connections=max(users) + 100)
    dsn = await srv.start()
    os.environ["BENCH_WAKEUPS_DSN"] = srv.url()  # the scenarios' target, with its password, off the command line
    workdir = Path(tempfile.mkdtemp(prefix="bench-wakeups-"))
    try:
        assert srv.process is not None
        server = psutil.Process(srv.process.pid)
        rows: list[tuple[int, str, list[dict[str, float]]]] = []
        for u in users:
            bench_file = workdir / f"u{u}.bench"
            bench_file.write_text(
                f'scenario "wakeups" {{ target env("BENCH_WAKEUPS_DSN")\n'
                f"  workload sysbench oltp_point_select {{ tables = {TABLES}  table_size = {table_size} }}\n"
                f"  users {u}  duration {LONGER + int(2 * window)}s }}\n")
            subprocess.run([BENCH, "prepare", str(bench_file)], check=True, capture_output=True)
            got: dict[str, list[dict[str, float]]] = {name: [] for name, _ in CLIENTS}
            for _ in range(rounds):
                for name, mode in CLIENTS:
                    got[name].append(await one(dsn, srv.port, server, bench_file, u, table_size, mode, window))
                    print(f"{u} users, {name}: " + ", ".join(f"{k} {v:.3g}" for k, v in got[name][-1].items()),
                          file=sys.stderr, flush=True)
            rows += [(u, name, got[name]) for name, _ in CLIENTS]
    finally:
        srv.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    print("| users | client | tps | RES interrupts / tx | server CPU us / tx | client CPU us / tx |")
    print("|--:|---|--:|--:|--:|--:|")
    for u, name, runs in rows:
        def col(key: str, fmt: str) -> str:
            return ", ".join(format(r[key], fmt) for r in runs)
        print(f"| {u} | {name} | {col('tps', ',.0f')} | {col('res', '.3f')} | {col('server_us', '.1f')} | "
              f"{col('client_us', '.1f')} |")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(prog="python -m bench.wakeups", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--users", default="16,64,256", help="comma-separated user counts")
    ap.add_argument("--rounds", type=int, default=2, help="runs of each client per user count, alternated")
    ap.add_argument("--window", type=float, default=6.0, help="seconds of the measured window")
    ap.add_argument("--table-size", type=int, default=50_000, help=f"rows in each of the {TABLES} sysbench tables")
    a = ap.parse_args()
    asyncio.run(main([int(x) for x in a.users.split(",") if x.strip()], a.rounds, a.window, a.table_size))
