"""`make bench`'s rate section: schedule accuracy of an open-loop rate, bench-dsl beside sysbench
`--rate`, on `SELECT 1` against the harness's server.

At each rate (default 1,000, 10,000 and 50,000 a second) sysbench and bench-dsl run alternately
(A B A B), each for the harness's warm-up and measured time, with the same pool of users (threads):
- bench-dsl: a real `bench run` of `workload custom { transaction t { query "SELECT 1" } }`,
  `rate R tps`, `users max N`; its JSON result's summary (the measured window) gives the rate
  offered (arrivals due) and achieved, dropped, the lag of each send behind its due time, the
  response time (from the due moment), the service time (from the send) and the queue's wait.
- sysbench 1.0: a Lua script doing `SELECT 1`, `--rate=R --threads=N`. Its generator thread puts
  events on a queue at Poisson intervals and stamps each when it enqueues it; its latency is the
  wait on that queue plus the execution. It reports no lateness of a send against a schedule (an
  event late out of the generator is stamped late, so its own lateness is nowhere), no drops (it
  queues up to 100,000 events, then aborts with "event queue is full"), and no service time apart.
  Its percentiles come from its `--histogram` (reset at the warm-up's checkpoint, like its counts).

Client CPU is taken as in the comparison: the process tree's CPU over the measured window.

Reading a row: achieved within 1% of the rate asked is the goal where the server keeps up. Where
both clients achieve well below it (under 95%), the server, or the machine, is the limit at that
rate: said so, not counted as a miss of either client."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

from bench.clients import Measure, Target, dsn_var, parse_sysbench_report, run_bench_dsl
from bench.compare import Log
from bench.procs import Child, Snapshot, snapshot, usage
from bench.stats import median

RATES = (1_000, 10_000, 50_000)
USERS = 64
WITHIN_PCT = 1.0  # the bar: achieved within 1% of the rate asked (either way)
KEPT_UP_PCT = 95.0  # both clients below this share of the rate: the server did not keep up
MAX_QUEUE = 100_000  # the language's bound (MAX_USERS), and sysbench's own queue

LUA = """-- SELECT 1 per event, for sysbench --rate beside bench-dsl's rate section
function thread_init()
  drv = sysbench.sql.driver()
  con = drv:connect()
end

function event()
  con:query("SELECT 1")
end

function thread_done()
  con:disconnect()
end
"""


def select1_file(name: str, target: Target, load: list[str], warmup: int, duration: int, seed: int,
                 workers: str | None, report_s: int | None = None) -> str:
    """A scenario of `SELECT 1` transactions; `load` its lines of load (`rate 1000 tps`, `users max
    64`, or `users 8`). A password stays out of the file, as in bench.clients.bench_file."""
    tline = (f'target "{target.url()}"' if not target.password else f'target env("{dsn_var(target.database)}")')
    lines = [f'scenario "{name}" {{', f"  {tline}", f"  seed {seed}",
             '  workload custom { transaction t { query "SELECT 1" } }', *(f"  {x}" for x in load)]
    if warmup:
        lines.append(f"  warmup {warmup}s")
    lines.append(f"  duration {duration}s")
    if report_s is not None:
        lines.append(f"  report every {report_s}s")
    if workers is not None:
        lines.append(f"  workers {workers}")
    return "\n".join([*lines, "}"]) + "\n"


def rate_lines(rate: float, users: int, poisson: bool = False, queue: int | None = None) -> list[str]:
    return [f"rate {rate:g} tps" + (" poisson" if poisson else ""),
            f"users max {users}" + (f" queue {queue}" if queue else "")]


# sysbench ---------------------------------------------------------------------------------------

_HIST_LINE = re.compile(r"^\s*([\d.]+)\s+\|\**\s+(\d+)\s*$")


def parse_histogram(text: str) -> list[tuple[float, int]]:
    """sysbench's `--histogram` lines ("value |*** count", values in ms) as (ms, count), ascending."""
    out = [(float(m.group(1)), int(m.group(2))) for ln in text.splitlines() if (m := _HIST_LINE.match(ln))]
    return sorted(out)


def histogram_percentile(hist: list[tuple[float, int]], p: float) -> float | None:
    """The value at percentile `p` of (value, count) buckets, as sysbench computes its own: the first
    bucket where the running count reaches round(n x p / 100)."""
    n = sum(c for _, c in hist)
    if not n:
        return None
    want = max(1, int(n * p / 100 + 0.5))
    seen = 0
    for value, count in hist:
        seen += count
        if seen >= want:
            return value
    return hist[-1][0]


def sysbench_rate_cmd(target: Target, script: Path, rate: float, users: int, warmup: int, duration: int) -> list[str]:
    cmd = ["sysbench", str(script), *target.sysbench_args(), f"--threads={users}", f"--rate={int(rate)}",
           f"--time={warmup + duration}", "--percentile=99", "--histogram=on"]
    if warmup:
        cmd.append(f"--report-checkpoints={warmup}")
    return [*cmd, "run"]


def run_sysbench_rate(target: Target, script: Path, rate: float, users: int, warmup: int, duration: int,
                      workdir: Path) -> Measure:
    """One sysbench --rate run; the window from the warm-up's checkpoint (or the threads' start) to
    the end of its work (the histogram, printed before its final report)."""
    m = Measure("sysbench", f"rate@{rate:g}", users)
    child = Child(sysbench_rate_cmd(target, script, rate, users, warmup, duration), workdir / "sysbench-rate.err")
    opener = "Checkpoint report:" if warmup else "Threads started!"
    start: Snapshot | None = None
    end: Snapshot | None = None
    blocks, tail, lines = 0, [], []
    for line in child.lines(time.monotonic() + warmup + duration + 60):
        lines.append(line)
        if start is None:
            if opener in line:
                start = snapshot(child.pid, target.server_pid)
            continue
        if line.startswith("SQL statistics:"):
            blocks += 1
        if end is None and (line.startswith("Latency histogram") or blocks == (2 if warmup else 1)):
            end = snapshot(child.pid, target.server_pid)
        if end is not None:
            tail.append(line)
    code = child.wait()
    text = "\n".join(tail)
    if code != 0 or start is None or end is None or "transactions:" not in text:
        full = "\n".join(lines) + child.stderr_tail()
        m.extra = {"queue_full": "queue is full" in full}
        m.error = ("sysbench aborted: its event queue is full (its threads fell 100,000 events behind)"
                   if m.extra["queue_full"] else
                   f"sysbench exit {code}: " + (child.stderr_tail() or "\n".join(lines[-10:]))[-1500:])
        return m
    fig = parse_sysbench_report(text[text.rfind("SQL statistics:"):])
    hist = parse_histogram(text)
    m.ok = True
    m.tps, m.qps, m.count = float(fig["tps"]), float(fig["qps"]), int(fig["count"])
    m.seconds = m.count / m.tps if m.tps else None
    m.usage = usage(start, end)
    m.extra = {"response_ms_p50": histogram_percentile(hist, 50), "response_ms_p99": histogram_percentile(hist, 99),
               "response_ms_max": hist[-1][0] if hist else None, "p99_ms_reported": fig.get("p99_ms"),
               "ignored_errors": fig.get("ignored_errors", 0)}
    return m


# the section ------------------------------------------------------------------------------------

def _pct(v: float | None, of: float) -> float | None:
    return None if v is None or not of else round(100.0 * v / of, 2)


def _us_per_tx(m: Measure) -> float | None:
    return None if m.cpu_per_10k is None else round(m.cpu_per_10k * 100, 2)  # s / 10k tx -> us / tx


def bench_figures(m: Measure, doc: dict[str, Any] | None, rate: float) -> dict[str, Any]:
    """One bench-dsl rate run's figures from its JSON result's summary (the measured window)."""
    s = (doc or {}).get("summary") or {}

    def q(key: str, p: str) -> float | None:
        v = (s.get(key) or {}).get(p)
        return None if v is None else float(v)

    return {"offered_tps": s.get("offered_tps"), "achieved_tps": s.get("achieved_tps"),
            "achieved_pct_of_asked": _pct(s.get("achieved_tps"), rate), "achieved_pct": s.get("achieved_pct"),
            "dropped": s.get("dropped"), "dropped_pct": s.get("dropped_pct"),
            "lag_ms_p50": q("lag_ms", "p50"), "lag_ms_p99": q("lag_ms", "p99"),
            "response_ms_p50": q("latency_ms", "p50"), "response_ms_p99": q("latency_ms", "p99"),
            "service_ms_p50": q("service_ms", "p50"), "service_ms_p99": q("service_ms", "p99"),
            "queue_wait_ms_p99": q("queue_wait_ms", "p99"), "busy_max": s.get("busy_max"),
            "client_us_per_tx": _us_per_tx(m), "errors": s.get("errors")}


def sysbench_figures(m: Measure, rate: float) -> dict[str, Any]:
    return {"offered_tps": None, "achieved_tps": m.tps, "achieved_pct_of_asked": _pct(m.tps, rate),
            "dropped": None, "lag_ms_p50": None, "lag_ms_p99": None,
            "response_ms_p50": m.extra.get("response_ms_p50"), "response_ms_p99": m.extra.get("response_ms_p99"),
            "service_ms_p50": None, "service_ms_p99": None, "client_us_per_tx": _us_per_tx(m)}


def merge(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The medians of several runs' figures, key by key (a figure no run has stays None)."""
    keys = dict.fromkeys(k for r in runs for k in r)
    return {k: median([r.get(k) for r in runs if isinstance(r.get(k), int | float)]) for k in keys}


def verdict(pct: float | None, other_pct: float | None) -> str:
    """What the achieved rate (as % of the rate asked) says, beside the other client's."""
    if pct is None:
        return "failed"
    if abs(pct - 100.0) <= WITHIN_PCT:
        return "within 1%"
    if other_pct is not None and other_pct < KEPT_UP_PCT and pct < KEPT_UP_PCT:
        return "server did not keep up"
    return "missed"


def rate_section(target: Target, rates: list[float], users: int, pairs: int, warmup: int, duration: int,
                 seed: int, workers: str | None, poisson: bool, queue: int | None, workdir: Path,
                 env: dict[str, str], log: Log) -> dict[str, Any]:
    """`queue`: the arrivals bench-dsl's pool may hold waiting (0: none, an arrival that finds no free
    user is dropped, as k6 does; None: a second's worth, min(rate, 100,000)): sysbench queues too, so
    that both are judged on their schedule, not on what the pool does when it is full."""
    script = workdir / "select1.lua"
    script.write_text(LUA)
    rows: list[dict[str, Any]] = []
    for rate in rates:
        q = min(int(rate), MAX_QUEUE) if queue is None else queue
        text = select1_file(f"rate {rate:g}", target, rate_lines(rate, users, poisson, q), warmup, duration, seed,
                            workers)
        sb_runs: list[Measure] = []
        bd_runs: list[tuple[Measure, dict[str, Any]]] = []
        for i in range(pairs):
            a = run_sysbench_rate(target, script, rate, users, warmup, duration, workdir)
            b, doc = run_bench_dsl(text, f"rate@{rate:g}", users, warmup, duration, workdir, env,
                                   server_pid=target.server_pid)
            sb_runs.append(a)
            bd_runs.append((b, bench_figures(b, doc, rate)))
            log(f"rate {rate:>8,.0f} tps, pair {i + 1}/{pairs}: " + _line(a, bd_runs[-1]))
        sb = merge([sysbench_figures(m, rate) for m in sb_runs if m.ok])
        bd = merge([f for m, f in bd_runs if m.ok])
        sb_pct, bd_pct = sb.get("achieved_pct_of_asked"), bd.get("achieved_pct_of_asked")
        # sysbench gives up when 100,000 events wait: it fell behind the rate, as far as it can say
        behind = not any(m.ok for m in sb_runs) and any(m.extra.get("queue_full") for m in sb_runs)
        others = median([m.usage.other_cores for m in [*sb_runs, *(b for b, _ in bd_runs)] if m.usage is not None])
        rows.append({
            "rate": rate, "users": users, "queue": q, "poisson": poisson,
            # the machine's busy cores that were neither client nor server: other people's load
            "other_cores": None if others is None else round(others, 2),
            "sysbench": {**sb, "runs": len(sb_runs), "ok": sum(m.ok for m in sb_runs),
                         "failures": [m.error for m in sb_runs if not m.ok],
                         "verdict": "aborted: event queue full" if behind else verdict(sb_pct, bd_pct)},
            "bench_dsl": {**bd, "runs": len(bd_runs), "ok": sum(m.ok for m, _ in bd_runs),
                          "failures": [m.error for m, _ in bd_runs if not m.ok],
                          "verdict": verdict(bd_pct, 0.0 if behind else sb_pct)},
            "runs": [{"sysbench": a.to_json(), "bench_dsl": {**b.to_json(), "figures": f}}
                     for a, (b, f) in zip(sb_runs, bd_runs, strict=True)],
        })
    return {"rates": rows, "users": users, "pairs": pairs, "warmup": warmup, "duration": duration,
            "arrivals": "Poisson (both)" if poisson else "bench-dsl evenly spaced, sysbench Poisson (its only kind)",
            "sysbench_note": "sysbench reports no lateness against a schedule, no drops and no service time; its "
                             "latency includes the wait on its event queue, from the moment its generator enqueued "
                             "the event"}


def _line(a: Measure, b: tuple[Measure, dict[str, Any]]) -> str:
    sb = (f"sysbench {a.tps:,.0f} tps p99 {a.extra.get('response_ms_p99')} ms" if a.ok
          else f"sysbench FAILED ({(a.error or '').splitlines()[0][:120]})")
    m, f = b
    bd = (f"bench-dsl {f['achieved_tps']:,.0f} of {f['offered_tps']:,.0f} offered, dropped {f['dropped']}, lag p50 "
          f"{f['lag_ms_p50']} ms, p99 {f['response_ms_p99']} ms" if m.ok and f.get("achieved_tps") is not None
          else f"bench-dsl FAILED ({(m.error or '').splitlines()[0][:120] if m.error else 'no figures'})")
    return f"{sb} | {bd}"
