"""How long a step of many users takes to connect: a custom workload (examples/custom-hot-rows.bench's
transactions, built in Python on each user's thread) and sysbench's point selects (built in C),
alternated, each a headless `bench run` on its own throwaway server, as a user runs them. Issue 21,
item 5: 3,000 custom users had not all connected after 60 s.

    .venv/bin/python bench/connect.py [--users 3000] [--rounds 2]

`connect s` is the time from the run's "virtual users run in" line to its first phase line (the
phase starts once its users are connected, or after the workers' 60 s); then the users still
without a connection at the end of the hold (the run's `users_not_connected` stop), the kernel's
ListenOverflows during the run (connections dropped from a full accept queue), the step's tps. Run as a script (not -m), so that PYTHONPATH=<another checkout> measures that checkout's
engine the same way (its workers inherit the variable). Prints a markdown table.

A harness that drives the fleet itself (ProcessFleet.resize on a server it started) did not show
the slow connects on the engine before the fix, where `bench run` did in 4 runs of 4: measure
through the command."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

BENCH = str(Path(sys.executable).with_name("bench"))

WORKLOADS = {
    "custom": """
  setup {
    sql "CREATE TABLE IF NOT EXISTS kv (id INT PRIMARY KEY, v BIGINT NOT NULL)"
    fill kv rows 100000 { id = sequence(1)  v = uniform(0, 1000000) }
  }
  workload custom {
    transaction read weight 80 { let id = zipf(1, 100000, 1.1)  query "SELECT v FROM kv WHERE id = :id" }
    transaction write weight 20 retry 3 on deadlock {
      let id = uniform(1, 100000)
      query "UPDATE kv SET v = v + 1 WHERE id = :id"
    }
  }""",
    "sysbench": """
  workload sysbench oltp_point_select { tables = 2  table_size = 10000 }""",
}


def listen_overflows() -> int:
    """The kernel's count of connections dropped because a listening socket's queue was full (the
    whole machine's: another program's overflows count too)."""
    lines = Path("/proc/net/netstat").read_text().splitlines()
    for head, values in zip(lines[::2], lines[1::2], strict=False):
        if head.startswith("TcpExt:"):
            return int(dict(zip(head.split()[1:], values.split()[1:], strict=True))["ListenOverflows"])
    return 0


@dataclass
class Round:
    workload: str
    connect_s: float | None  # None: the run never reached its first phase
    short: int  # users without a connection at the end of the hold
    tps: float
    status: str
    overflows: int  # connections the server's accept queue dropped during the run


def one(kind: str, users: int, folder: Path) -> Round:
    path = folder / f"{kind}.bench"
    path.write_text(f'scenario "connect {kind}" {{{WORKLOADS[kind]}\n  users {users}\n  warmup 2s\n'
                    f"  duration 10s\n}}\n")
    out = folder / f"{kind}.json"
    proc = subprocess.Popen([BENCH, "run", str(path), "--headless", "--json", str(out)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, env=os.environ.copy())
    assert proc.stderr is not None
    started: float | None = None
    phase: float | None = None
    dropped = listen_overflows()
    try:
        for line in proc.stderr:
            if "virtual users run in" in line:
                started = time.monotonic()
            elif started is not None and phase is None and line.startswith("warmup:"):
                phase = time.monotonic()
    finally:
        proc.wait()
    doc = json.loads(out.read_text()) if out.exists() else {}
    stop = doc.get("stop") or {}
    short = int(stop["users"]) - int(stop["connected"]) if stop.get("reason") == "users_not_connected" else 0
    return Round(kind, None if started is None or phase is None else phase - started, short,
                 float((doc.get("summary") or {}).get("tps") or 0.0), str(doc.get("status", proc.returncode)),
                 listen_overflows() - dropped)


def _s(v: float | None) -> str:
    return "-" if v is None else f"{v:.1f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--users", type=int, default=3000)
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    rounds: list[Round] = []
    with tempfile.TemporaryDirectory() as folder:
        for r in range(args.rounds):
            for kind in (("custom", "sysbench") if r % 2 == 0 else ("sysbench", "custom")):
                rounds.append(one(kind, args.users, Path(folder)))
                print(rounds[-1], file=sys.stderr, flush=True)
    print(f"{args.users} users, a throwaway server each run\n")
    print("| workload | connect s | not connected at the hold's end | listen overflows | tps | status |")
    print("|---|---:|---:|---:|---:|---|")
    for x in rounds:
        print(f"| {x.workload} | {_s(x.connect_s)} | {x.short} | {x.overflows} | {x.tps:.0f} | {x.status} |")
    for kind in WORKLOADS:
        times = [x.connect_s for x in rounds if x.workload == kind and x.connect_s is not None]
        if times:
            print(f"\n{kind}: median {statistics.median(times):.1f} s to connect")


if __name__ == "__main__":
    main()
