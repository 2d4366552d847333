"""Coordinated omission, shown: `SELECT 1` at a steady open-loop rate (default 1,000 tps, `users max
64 queue Q` with a queue that holds the whole stall), then the same test closed loop (`users 8`), each
a real `bench run` during which the throwaway server is stopped once (SIGSTOP by its pid, SIGCONT
after 2 s). In each run's measured response-time histogram (the step's HDR histogram), the
transactions slower than 1 s are counted:

- open loop: the arrivals due in the stop's first (stop - 1 s) wait over a second each, so about
  rate x (stop - 1 s) of them (the stop's length as measured between the two signals), within 15%;
- closed loop: each user is stuck in one transaction and sends nothing more, so about one per user.

A chart (SVG, and PNG) draws each report interval's p99 and max of the response and service times
of the open-loop run, the closed-loop run's latency beside it, and the stop. A section of `make
bench` (`--sections omission`, on the harness's throwaway server), or on its own:

    python -m bench.omission [--rate 1000] [--stall 2] [--duration 10] [--chart-dir docs/images]

Only a server this process started is ever stopped; it is always resumed (also on an error or Ctrl-C)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from bench.clients import BENCH_CMD, Target, bench_env
from bench.compare import Log
from bench.procs import Child, stop_all_children
from bench.rate import rate_lines, select1_file

RATE = 1_000
USERS = 64
CLOSED_USERS = 8
STALL_S = 2.0
STALL_AT_S = 4.0  # into the measured window: steady before, room to drain after
WARMUP, DURATION = 2, 10
SLOW_US = 1_000_000
TOLERANCE = 0.15  # the bar for the open-loop count
CHART = "coordinated-omission"  # the image's name (.svg, .png)


class Stall:
    """SIGSTOP to `pid` `after` seconds from start(), SIGCONT `seconds` later (or at once on close())."""

    def __init__(self, pid: int, after: float, seconds: float) -> None:
        self.pid, self.after, self.seconds = pid, after, seconds
        self.at_s: float | None = None  # start() to the SIGSTOP (run_stalled: from the measured window)
        self.stopped_at: float | None = None  # time.monotonic() of the SIGSTOP
        self.stopped_s: float | None = None  # SIGSTOP to SIGCONT, as measured here
        self.error: str | None = None
        self._cancel = threading.Event()
        self._thread = threading.Thread(target=self._run, name="stall", daemon=True)
        self._t0 = 0.0
        self.started = False

    def start(self) -> None:
        self._t0, self.started = time.monotonic(), True
        self._thread.start()

    def _run(self) -> None:
        if self._cancel.wait(self.after):
            return
        try:
            os.kill(self.pid, signal.SIGSTOP)
        except OSError as exc:
            self.error = f"SIGSTOP {self.pid}: {exc}"
            return
        t = time.monotonic()
        try:
            self._cancel.wait(self.seconds)
        finally:
            with contextlib.suppress(OSError):
                os.kill(self.pid, signal.SIGCONT)
            self.stopped_s, self.at_s, self.stopped_at = time.monotonic() - t, t - self._t0, t

    def close(self) -> None:
        self._cancel.set()
        if self._thread.is_alive():
            self._thread.join()


def slower_than(encoded: list[str | None], micros: int = SLOW_US) -> int:
    """Transactions at `micros` or slower in HDR histograms as a result stores them (base64, in us),
    counted as tests/engine/test_arrivals.py counts them."""
    from hdrh.histogram import HdrHistogram

    n = 0
    for e in encoded:
        if e:
            h = HdrHistogram.decode(e)
            n += sum(i.count_at_value_iterated_to for i in h.get_recorded_iterator() if i.value_iterated_to >= micros)
    return n


def measured_histograms(doc: dict[str, Any]) -> list[str | None]:
    return [e for s in doc.get("steps") or [] for e in (s.get("histograms") or {}).values()]


def expected_open(rate: float, stopped_s: float) -> float:
    """Arrivals due in the stop's first (stop - 1 s): each waits over 1 s for the server."""
    return rate * max(0.0, stopped_s - 1.0)


def judge(count: int, expected: float) -> dict[str, Any]:
    """The count of slow transactions against what was expected of it."""
    ratio = count / expected if expected > 0 else None
    return {"expected": round(expected, 1), "ratio": None if ratio is None else round(ratio, 3),
            "within_15pct": ratio is not None and abs(ratio - 1.0) <= TOLERANCE}


def timeline(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """Each measured interval's p99 and max (ms) of response, service and lag, its span in seconds
    from the start of the measured window (a latency counts in the interval its transaction ended)."""
    steps = doc.get("steps") or []
    if not steps or steps[0].get("start_s") is None:
        return []
    t0 = float(steps[0]["start_s"])
    rows = []
    for i in doc.get("intervals") or []:
        if i.get("phase") != "hold" or i.get("start_s") is None:
            continue
        start = float(i["start_s"]) - t0
        row: dict[str, Any] = {"start": round(start, 3), "end": round(start + float(i.get("seconds") or 0), 3),
                               "tps": i.get("tps"), "offered_tps": i.get("offered_tps")}
        for key in ("latency_ms", "service_ms", "lag_ms"):
            for p in ("p99", "max"):
                row[f"{key}_{p}"] = (i.get(key) or {}).get(p)
        rows.append(row)
    return rows


def _event(line: str) -> dict[str, Any]:
    with contextlib.suppress(json.JSONDecodeError):
        ev = json.loads(line)
        return ev if isinstance(ev, dict) else {}
    return {}


def run_clock(arrivals: list[tuple[float, float]]) -> float | None:
    """The run's clock against time.monotonic(): of each event line, (when it arrived here, its own
    `t`, seconds since the run began); the line that came soonest after its `t` says it best (a
    loaded machine delays a line, never advances it). monotonic() - this = the run's seconds."""
    return min((got - t for got, t in arrivals), default=None)


def run_stalled(text: str, label: str, target: Target, after: float, seconds: float, duration: int, warmup: int,
                workdir: Path, env: dict[str, str]) -> tuple[dict[str, Any] | None, Stall, str | None]:
    """One `bench run` with the server stopped `after` s into its measured window for `seconds`."""
    assert target.server_pid is not None
    src, out = workdir / f"{label}.bench", workdir / f"{label}.json"
    src.write_text(text)
    out.unlink(missing_ok=True)
    child = Child([*BENCH_CMD, "run", str(src), "--headless", "--json", str(out), "--jsonl", "-"],
                  workdir / f"{label}.err", env=env, cwd=workdir)
    stall = Stall(target.server_pid, after, seconds)
    arrivals: list[tuple[float, float]] = []
    try:
        for line in child.lines(time.monotonic() + warmup + duration + seconds + 120):
            ev = _event(line) if line.startswith("{") else {}
            if isinstance(ev.get("t"), int | float):
                arrivals.append((time.monotonic(), float(ev["t"])))
            if not stall.started and ev.get("type") == "phase" and ev.get("phase") == "hold":
                stall.start()
    finally:
        stall.close()  # the server resumed whatever happened
    code = child.wait()
    try:
        doc = json.loads(out.read_text())
    except (OSError, json.JSONDecodeError):
        doc = None
    origin, steps = run_clock(arrivals), (doc or {}).get("steps") or [{}]
    if origin is not None and stall.stopped_at is not None and steps[0].get("start_s") is not None:
        # where the stop fell in the run's own clock, from its measured window's start
        stall.at_s = stall.stopped_at - origin - float(steps[0]["start_s"])
    error = None
    if code != 0 or doc is None or not doc.get("steps"):
        error = f"bench exit {code}: {child.stderr_tail()}"
    elif stall.error or stall.stopped_s is None:
        error = stall.error or "the server was never stopped (no `hold` phase in the run's stream?)"
    return doc, stall, error


def omission(target: Target, workdir: Path, env: dict[str, str], log: Log, rate: float = RATE, users: int = USERS,
             closed_users: int = CLOSED_USERS, warmup: int = WARMUP, duration: int = DURATION,
             stall_s: float = STALL_S, stall_at: float = STALL_AT_S, seed: int = 42, workers: str | None = None,
             chart_dir: Path | None = None, chart_name: str = CHART) -> dict[str, Any]:
    if not target.embedded or target.server_pid is None:
        return {"skipped": "skipped: the stall stops the server (SIGSTOP by its pid), so it runs only on the "
                           "harness's own throwaway server"}
    queue = int(rate * (stall_s + 1) + users)  # the whole stall's arrivals wait: none is dropped
    texts = {"open": select1_file("omission open loop", target, rate_lines(rate, users, queue=queue), warmup,
                                  duration, seed, workers, report_s=1),
             "closed": select1_file("omission closed loop", target, [f"users {closed_users}"], warmup, duration,
                                    seed, workers, report_s=1)}
    runs: dict[str, Any] = {}
    for kind, text in texts.items():
        doc, stall, error = run_stalled(text, f"omission-{kind}", target, stall_at, stall_s, duration, warmup,
                                        workdir, env)
        if error is not None or doc is None:
            raise RuntimeError(f"{kind} loop: {error}")
        s = doc.get("summary") or {}
        runs[kind] = {"slow": slower_than(measured_histograms(doc)), "stopped_s": round(stall.stopped_s or 0.0, 3),
                      "stop_at_s": round(stall.at_s or 0.0, 3), "transactions": s.get("count"), "tps": s.get("tps"),
                      "dropped": s.get("dropped"), "latency_ms": s.get("latency_ms"),
                      "service_ms": s.get("service_ms"), "timeline": timeline(doc)}
        log(f"omission, {kind} loop: server stopped {runs[kind]['stopped_s']:.2f}s; {runs[kind]['slow']} "
            f"transactions slower than 1 s of {s.get('count')}")
    o, c = runs["open"], runs["closed"]
    out: dict[str, Any] = {
        "rate": rate, "users": users, "queue": queue, "closed_users": closed_users, "warmup": warmup,
        "duration": duration, "stall_asked_s": stall_s, "stall_at_s": stall_at,
        "open": {**judge(o["slow"], expected_open(rate, o["stopped_s"])), **o},
        "closed": {**judge(c["slow"], float(closed_users)), **c,
                   "per_user": round(c["slow"] / closed_users, 2)},
    }
    if chart_dir is not None:
        from bench.omission_chart import write_chart

        out["chart"] = [str(p) for p in write_chart(out, chart_dir, chart_name)]
    return out


def settings(text: str) -> dict[str, float]:
    """`--omission rate=1000,stall=2`: the keyword arguments of omission() (`stall`: stall_s)."""
    keys = {"rate", "users", "closed_users", "stall", "stall_at", "warmup", "duration"}
    out = {k.strip(): float(v) for k, v in (x.split("=", 1) for x in text.split(",") if x.strip())}
    if set(out) - keys:
        raise argparse.ArgumentTypeError(f"unknown {', '.join(sorted(set(out) - keys))}; of {', '.join(sorted(keys))}")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.omission", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rate", type=float, default=RATE, help=f"open-loop tps (default {RATE})")
    ap.add_argument("--users", type=int, default=USERS, help=f"the open loop's pool (default {USERS})")
    ap.add_argument("--closed-users", type=int, default=CLOSED_USERS, help=f"closed loop (default {CLOSED_USERS})")
    ap.add_argument("--stall", type=float, default=STALL_S, help=f"seconds the server is stopped (default {STALL_S})")
    ap.add_argument("--stall-at", type=float, default=STALL_AT_S,
                    help=f"seconds into the measured window (default {STALL_AT_S})")
    ap.add_argument("--warmup", type=int, default=WARMUP)
    ap.add_argument("--duration", type=int, default=DURATION)
    ap.add_argument("--chart-dir", type=Path, help=f"write {CHART}.svg and .png there")
    ap.add_argument("--json", type=Path, help="write the figures there")
    a = ap.parse_args(argv)
    from bench_dsl.server.embedded import EmbeddedServer

    def log(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    log(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}, {os.cpu_count()} cores")
    srv = EmbeddedServer(max_connections=a.users + a.closed_users + 50)
    dsn = asyncio.run(srv.start())
    target = Target("127.0.0.1", dsn.port, "root", dsn.password, dsn.database, None, srv.pid, True)
    workdir = Path(tempfile.mkdtemp(prefix="bench-omission-"))
    try:
        r = omission(target, workdir, bench_env(target), log, a.rate, a.users, a.closed_users, a.warmup, a.duration,
                     a.stall, a.stall_at, chart_dir=a.chart_dir)
    finally:
        stop_all_children()  # a run still going (Ctrl-C), by its pid
        srv.stop()
        import shutil

        shutil.rmtree(workdir, ignore_errors=True)
    r["loadavg_end"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
    if a.json:
        a.json.write_text(json.dumps(r, indent=1) + "\n")
    from bench.report import omission_table

    print(omission_table(r))
    return 0


if __name__ == "__main__":
    sys.exit(main())
