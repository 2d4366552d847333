"""Several connections per thread against a thread per connection, the client's CPU per point
select (issue 43, section 2): bench/nonblocking_probe.c built here, its two modes and sysbench 1.0
alternated on one throwaway server, a table of 10,000 rows. docs/performance.md, "Several
connections a thread, tried", has a run.

    .venv/bin/python -m bench.nonblocking [--rounds 2] [--seconds 8]"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import psutil

from bench_dsl.core.dsn import Dsn
from bench_dsl.server.connect import connect
from bench_dsl.server.embedded import EmbeddedServer

SOURCE = Path(__file__).with_name("nonblocking_probe.c")
CASES = (("threads", 64, 64), ("mux", 64, 2), ("mux", 64, 1), ("threads", 16, 16), ("mux", 16, 2))


def build(where: Path) -> Path:
    flags = subprocess.run(["mariadb_config", "--cflags", "--libs"], capture_output=True, text=True, check=True)
    out = where / "nonblocking_probe"
    subprocess.run(["cc", "-O2", "-o", str(out), str(SOURCE), *flags.stdout.split(), "-lpthread"], check=True)
    return out


def sysbench(port: int, password: str, threads: int, seconds: int) -> str:
    """sysbench's point selects over `threads`, its CPU per transaction over the window after 2 s."""
    p = subprocess.Popen(["sysbench", "oltp_point_select", "--tables=1", "--table-size=10000",
                          f"--threads={threads}", f"--time={seconds + 3}", "--mysql-host=127.0.0.1",
                          f"--mysql-port={port}", "--mysql-user=root", f"--mysql-password={password}",
                          "--mysql-db=benchdsl", "--db-ps-mode=auto", "run"],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    proc = psutil.Process(p.pid)
    time.sleep(2)
    t0 = proc.cpu_times()
    time.sleep(seconds)
    t1 = proc.cpu_times()
    out = p.communicate()[0]
    m = re.search(r"transactions:\s+\d+\s+\(([\d.]+) per sec", out)
    tps = float(m.group(1)) if m else float("nan")
    cpu = t1.user + t1.system - t0.user - t0.system
    return f"sysbench threads={threads} tps={tps:.0f} cpu_us_per_tx={cpu * 1e6 / (tps * seconds):.2f}"


async def _started(server: EmbeddedServer) -> Dsn:
    """The server up, with its table of 10,000 rows."""
    await server.start()
    dsn = server.dsn
    assert dsn is not None
    conn = await connect(dsn, dsn.database)
    async with conn.cursor() as cur:
        await cur.execute("DROP TABLE IF EXISTS sbtest1")
        await cur.execute("CREATE TABLE sbtest1 (id INT PRIMARY KEY, k INT NOT NULL, c CHAR(120) NOT NULL, "
                          "pad CHAR(60) NOT NULL)")
        await cur.execute("INSERT INTO sbtest1 SELECT seq, seq, REPEAT('x', 119), REPEAT('y', 59) FROM seq_1_to_10000")
    conn.close()
    return dsn


def main(rounds: int, seconds: int) -> None:
    work = Path(tempfile.mkdtemp(prefix="nonblocking-"))
    server = EmbeddedServer()
    try:
        probe = build(work)
        dsn = asyncio.run(_started(server))
        env = {**os.environ, "PROBE_PASSWORD": dsn.password or ""}
        for _ in range(rounds):
            for mode, conns, threads in CASES:
                r = subprocess.run([str(probe), mode, str(conns), str(threads), str(seconds), "127.0.0.1",
                                    str(dsn.port), dsn.user, dsn.database or "benchdsl"],
                                   capture_output=True, text=True, env=env, check=True)
                print(r.stdout.strip(), flush=True)
            for threads in (64, 16):
                print(sysbench(dsn.port, dsn.password or "", threads, seconds), flush=True)
    finally:
        server.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(prog="python -m bench.nonblocking", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--seconds", type=int, default=8)
    a = ap.parse_args()
    main(a.rounds, a.seconds)
