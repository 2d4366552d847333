"""What the live terminal UI costs the engine: the same short scenario run headless (A) and with the
UI in a pseudo-terminal of 120x40 (B), alternately A B A B on one server and one data set, and the
median of the paired throughput ratios B/A. The goal (issue 4): the UI costs less than 5%.

    .venv/bin/python -m bench.ui_overhead [--pairs 5] [--duration 6] [--workers auto --workers 1]
                                          [--target DSN] [--out results/ui-overhead.json]

Without --target (or BENCH_DSN) a throwaway server is started for the whole measurement. With
`--workers 1` the virtual users share the event loop with the UI: the worst case; `auto` (one
process per core) is what a run gets by default. The UI's run ends as a person's would: the verdict
appears, then q.

On a shared machine, throughput moves with everyone else's load, often by more than the UI costs:
the pairs run back to back and the median of their ratios is reported, with the machine's load.
Beside it, the client's own CPU time per 1000 transactions (bench-dsl's processes, from the run's
cpu(client)), which other load hardly changes: what the UI adds there is what it would take from
throughput were the client the bottleneck. And the redraw cost itself, which no other load moves:
the recorded run of the UI tests (tests/fixtures/steps.jsonl) replayed to the app at 120x40 without
a terminal, CPU time per second of run (the UI redraws once per tick, once a second)."""

from __future__ import annotations

import argparse
import asyncio
import fcntl
import json
import os
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
BENCH = [sys.executable, "-m", "bench_dsl.cli.main"]
GOAL_PCT = 5.0
COLS, ROWS = 120, 40

SCENARIO = """
scenario "ui overhead" {{
  target env("BENCH_DSN")
  seed 1
  workload sysbench oltp_point_select {{ tables = 2  table_size = 10000 }}
  users {users}
  warmup {warmup}s
  duration {duration}s
  report every 1s
}}
"""


@dataclass(frozen=True)
class Run:
    mode: str  # headless | ui
    workers: str
    tps: float
    count: int
    cpu_client: float | None
    cpu_server: float | None
    client_cpu_ms_per_1000_tx: float | None
    wall_s: float


def _env(dsn: str) -> dict[str, str]:
    # COLUMNS/LINES would override the pty's size (readline may have put them in the C environment)
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    env.update(BENCH_DSN=dsn, TERM="xterm-256color")
    return env


def _figures(mode: str, workers: str, out: Path, wall: float) -> Run:
    doc = json.loads(out.read_text())
    if doc["status"] != "completed" or not doc["summary"]:
        raise RuntimeError(f"{mode} run did not complete: status {doc['status']}, stop {doc['stop']}")
    s = doc["summary"]
    client = s["cpu"].get("client")  # percent of all the machine's cores, over the measured seconds
    cores = doc["machine"]["cpu_count"] or 1
    per_tx = (None if client is None or not s["count"]
              else round(client / 100 * cores * s["seconds"] * 1e6 / s["count"], 3))
    return Run(mode, workers, float(s["tps"]), int(s["count"]), client, s["cpu"].get("server"), per_tx,
               round(wall, 2))


def run_headless(scenario: Path, out: Path, dsn: str, workers: str) -> Run:
    t = time.monotonic()
    r = subprocess.run([*BENCH, "run", str(scenario), "--headless", "--json", str(out), "--workers", workers],
                       cwd=ROOT, env=_env(dsn), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                       timeout=600)
    if r.returncode != 0:
        raise RuntimeError(f"headless run failed ({r.returncode}): {r.stderr[-2000:]}")
    return _figures("headless", workers, out, time.monotonic() - t)


def run_with_ui(scenario: Path, out: Path, dsn: str, workers: str) -> Run:
    """`bench run` at a terminal: a pty of 120x40 as its stdin, stdout and stderr, read continuously
    (as a terminal does) so that drawing never blocks; q once the results are written."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLS, 0, 0))
    t = time.monotonic()
    proc = subprocess.Popen([*BENCH, "run", str(scenario), "--json", str(out), "--workers", workers], cwd=ROOT,
                            env=_env(dsn), stdin=slave, stdout=slave, stderr=slave, start_new_session=True)
    os.close(slave)
    tail = bytearray()

    def drain() -> None:
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:  # the child closed the terminal
                return
            if not data:
                return
            tail.extend(data)
            del tail[:-8192]

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline and proc.poll() is None:
            if out.exists() and json.loads(out.read_text()).get("finished_at"):
                wall = time.monotonic() - t
                os.write(master, b"q")  # the verdict is on the screen: leave, as a person would
                proc.wait(timeout=60)
                break
            time.sleep(0.2)
        else:
            wall = time.monotonic() - t
        if proc.returncode != 0:
            raise RuntimeError(f"UI run failed ({proc.returncode}): {bytes(tail[-2000:]).decode(errors='replace')}")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
        reader.join(timeout=5)
    return _figures("ui", workers, out, wall)


def summarize(runs: list[Run], workers: str) -> dict[str, Any]:
    """Paired ratios ui/headless, in the order they ran (A B A B ...): each pair shares the
    machine's load of its minute, the median keeps one disturbed pair from deciding."""
    a = [r for r in runs if r.workers == workers and r.mode == "headless"]
    b = [r for r in runs if r.workers == workers and r.mode == "ui"]
    ratios = [y.tps / x.tps for x, y in zip(a, b, strict=False) if x.tps > 0]
    median = statistics.median(ratios) if ratios else None
    overhead = None if median is None else round(100.0 * (1.0 - median), 2)
    cpu = [y.client_cpu_ms_per_1000_tx / x.client_cpu_ms_per_1000_tx for x, y in zip(a, b, strict=False)
           if x.client_cpu_ms_per_1000_tx and y.client_cpu_ms_per_1000_tx]
    cpu_median = statistics.median(cpu) if cpu else None
    return {"workers": workers, "pairs": len(ratios), "ratios": [round(r, 4) for r in ratios],
            "median_ratio": None if median is None else round(median, 4), "overhead_pct": overhead,
            "goal_pct": GOAL_PCT, "met": overhead is not None and overhead < GOAL_PCT,
            "client_cpu_per_tx_ratios": [round(r, 4) for r in cpu],
            "client_cpu_per_tx_overhead_pct": None if cpu_median is None else round(100.0 * (cpu_median - 1.0), 2),
            "headless_tps": [round(r.tps, 1) for r in a], "ui_tps": [round(r.tps, 1) for r in b]}


async def _redraws(rounds: int) -> dict[str, Any]:
    from bench_dsl.engine import events as ev
    from bench_dsl.tui.app import BenchApp, UiSink
    from bench_dsl.tui.state import LiveState
    from tests.fixtures.replay import FakeControls, events  # the UI tests' recorded run

    per_tick: list[float] = []
    for _ in range(rounds):
        sink = UiSink(LiveState())
        app = BenchApp(sink.state, FakeControls(), refresh_s=3600)  # only the pulls below draw
        async with app.run_test(size=(COLS, ROWS)) as pilot:
            await pilot.pause()
            cpu, ticks = 0.0, 0
            for e in events():
                sink.emit(e)
                if isinstance(e, ev.LiveTick):
                    t = time.process_time()
                    app.pull()
                    await pilot.pause()
                    cpu += time.process_time() - t
                    ticks += 1
        per_tick.append(1000 * cpu / ticks)
    ms = statistics.median(per_tick)
    return {"cpu_ms_per_s_of_run": round(ms, 1), "of_one_core_pct": round(ms / 10, 2),
            "of_the_machine_pct": round(ms / 10 / (os.cpu_count() or 1), 2), "rounds": [round(x, 1) for x in per_tick],
            "how": "the recorded run of tests/fixtures/steps.jsonl replayed to the app at 120x40, headless; "
                   "includes Textual's compositing, not the writes to a terminal"}


async def _start_server() -> tuple[Any, str]:
    from bench_dsl.server.embedded import EmbeddedServer

    srv = EmbeddedServer(max_connections=200)
    await srv.start()
    return srv, srv.url()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.ui_overhead", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", type=int, default=5, help="A B pairs per worker setting (default 5)")
    ap.add_argument("--duration", type=int, default=6, help="measured seconds of each run (default 6)")
    ap.add_argument("--warmup", type=int, default=2, help="warm-up seconds of each run (default 2)")
    ap.add_argument("--users", type=int, default=8)
    ap.add_argument("--workers", action="append", help="auto or N; repeat to compare (default: auto and 1)")
    ap.add_argument("--target", help="a server to use (default: BENCH_DSN, else a throwaway server)")
    ap.add_argument("--out", type=Path, default=ROOT / "results" / "ui-overhead.json", help="JSON results")
    args = ap.parse_args(argv)
    workers = args.workers or ["auto", "1"]
    dsn = args.target or os.environ.get("BENCH_DSN")
    srv = None
    if not dsn:
        srv, dsn = asyncio.run(_start_server())
    load_before = os.getloadavg()
    runs: list[Run] = []
    try:
        with tempfile.TemporaryDirectory(prefix="ui-overhead-") as tmp:
            scenario = Path(tmp) / "ui-overhead.bench"
            scenario.write_text(SCENARIO.format(users=args.users, warmup=args.warmup, duration=args.duration))
            prep = subprocess.run([*BENCH, "prepare", str(scenario)], cwd=ROOT, env=_env(dsn),
                                  capture_output=True, text=True, timeout=600)
            if prep.returncode != 0:
                print(prep.stderr, file=sys.stderr)
                return 1
            for w in workers:
                for i in range(args.pairs):
                    for mode, fn in (("headless", run_headless), ("ui", run_with_ui)):
                        r = fn(scenario, Path(tmp) / f"{mode}-{w}-{i}.json", dsn, w)
                        runs.append(r)
                        print(f"workers {w:>4}  pair {i + 1}  {mode:<8}  tps {r.tps:10.1f}  "
                              f"client cpu {r.client_cpu_ms_per_1000_tx} ms per 1000 tx", file=sys.stderr)
    finally:
        if srv is not None:
            srv.stop()
    redraws = asyncio.run(_redraws(3))
    result = {
        "benchmark": "ui-overhead", "goal": f"the UI costs less than {GOAL_PCT:g}% of the headless throughput",
        "settings": {"pairs": args.pairs, "duration_s": args.duration, "warmup_s": args.warmup, "users": args.users,
                     "terminal": f"{COLS}x{ROWS}", "workload": "sysbench oltp_point_select, 2 x 10000 rows"},
        "machine": {"cpu_count": os.cpu_count(), "loadavg_before": [round(x, 2) for x in load_before],
                    "loadavg_after": [round(x, 2) for x in os.getloadavg()],
                    "note": "other processes share this machine: see the load averages"},
        "results": [summarize(runs, w) for w in workers],
        "redraws": redraws,
        "runs": [asdict(r) for r in runs],
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    for s in result["results"]:
        print(f"workers {s['workers']}: ui/headless throughput {s['median_ratio']} (median of {s['pairs']} pairs "
              f"{s['ratios']}): the UI costs {s['overhead_pct']}% of throughput "
              f"({'within' if s['met'] else 'over'} the {GOAL_PCT:g}% goal); client CPU per transaction "
              f"{s['client_cpu_per_tx_overhead_pct']:+}% (pairs {s['client_cpu_per_tx_ratios']})")
    print(f"redraws: {redraws['cpu_ms_per_s_of_run']} ms of CPU per second of run "
          f"({redraws['of_one_core_pct']}% of one core, {redraws['of_the_machine_pct']}% of the machine)")
    print(f"results: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
