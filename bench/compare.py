"""sysbench and bench-dsl side by side: one data set prepared once, then at each user count the two
clients alternately (A = sysbench, B = bench-dsl, A B A B ... A), and the medians of the ratios of
each B to the two A runs around it."""

from __future__ import annotations

import asyncio
import re
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.clients import (
    BENCH_CMD,
    Measure,
    Target,
    bench_file,
    run_bench_dsl,
    run_floor,
    run_sysbench,
    sysbench_cmd,
    sysbench_workload,
)
from bench.stats import limit_note, median, ratio_summary

Log = Callable[[str], None]

# The bar of issue 20, as ratios bench-dsl / sysbench: throughput at parity within the pairs' spread
# (the median at least TPS_RATIO_GOAL and the range reaching 1.0: on a shared 2-core machine the
# paired ratios of one code spread by 10-30%), client CPU per transaction at most sysbench's.
TPS_RATIO_GOAL = 0.97
CPU_RATIO_GOAL = 0.8  # issue 43: closed-loop client CPU per transaction at most 0.8x sysbench's

# The ratios of a point: (name in the result, Measure attribute).
RATIOS = (("tps", "tps"), ("qps", "qps"), ("p95", "p95_ms"), ("cpu_per_10k_tx", "cpu_per_10k"))
FLOOR_RATIOS = (RATIOS[0], RATIOS[3])  # the floors measure no latency and run one statement a transaction


@dataclass(frozen=True)
class Settings:
    pairs: int
    warmup: int
    duration: int
    tables: int
    table_size: int
    seed: int
    workers: str | None


async def sql(target: Target, statements: Sequence[str], database: str | None = None) -> list[list[tuple[Any, ...]]]:
    import asyncmy

    args: dict[str, Any] = {"user": target.user, "password": target.password, "connect_timeout": 10}
    if target.socket:
        args["unix_socket"] = target.socket
    else:
        args.update(host=target.host, port=target.port)
    conn = await asyncmy.connect(**args, database=database, autocommit=True)
    out: list[list[tuple[Any, ...]]] = []
    try:
        async with conn.cursor() as cur:
            for s in statements:
                await cur.execute(s)
                out.append(list(await cur.fetchall()))
    finally:
        conn.close()
    return out


def _normalise(create: str) -> str:
    return re.sub(r"\s+AUTO_INCREMENT=\d+", "", create)


def _sysbench_prepare(target: Target, s: Settings, check_db: str) -> float:
    asyncio.run(sql(target, [f"DROP DATABASE IF EXISTS `{check_db}`", f"CREATE DATABASE `{check_db}`"]))
    t0 = time.perf_counter()
    r = subprocess.run(sysbench_cmd(target, "oltp_point_select", s.tables, s.table_size, 1, 0, 0, "prepare",
                                    database=check_db), check=False, capture_output=True, text=True, timeout=3600)
    if r.returncode != 0:
        raise RuntimeError(f"sysbench prepare failed: {(r.stderr or r.stdout)[-1500:]}")
    return time.perf_counter() - t0


def _bench_prepare(src: Path, env: dict[str, str], workdir: Path) -> tuple[float, float | None]:
    """The whole command's seconds, and the load's as bench-dsl reports it (without Python's start)."""
    t0 = time.perf_counter()
    r = subprocess.run([*BENCH_CMD, "prepare", str(src), "--force-prepare"], check=False, capture_output=True,
                       text=True, env=env, cwd=workdir, timeout=3600)
    secs = time.perf_counter() - t0
    if r.returncode != 0:
        raise RuntimeError(f"bench prepare failed (exit {r.returncode}): {r.stderr[-1500:]}")
    own = re.search(r"prepared (\d+) rows in ([\d.]+)s", r.stderr)
    return secs, float(own.group(2)) if own else None


def prepare(target: Target, s: Settings, workdir: Path, env: dict[str, str], log: Log) -> dict[str, Any]:
    """Load the tables with sysbench (into a scratch database) and with bench-dsl, alternated `pairs`
    times (A B A B: each load beside the other at the same moment), then check that both have the same
    layout and size: then both clients run on tables sysbench would have made. bench-dsl loads last,
    so that its marker says the tables are there and it never reloads them between runs."""
    check_db = f"{target.database}_sbcheck"
    src = workdir / "prepare.bench"
    src.write_text(bench_file("harness-prepare", target, sysbench_workload("oltp_point_select", s.tables, s.table_size),
                              1, 0, 1, s.seed, None))
    sysbench_s: list[float] = []
    bench_s: list[float] = []
    own_s: list[float | None] = []
    for _ in range(max(1, min(s.pairs, 3))):
        sysbench_s.append(_sysbench_prepare(target, s, check_db))
        whole, own = _bench_prepare(src, env, workdir)
        bench_s.append(whole)
        own_s.append(own)

    queries: list[str] = []
    for t in range(1, s.tables + 1):
        queries += [f"SHOW CREATE TABLE sbtest{t}", f"SELECT COUNT(*), MIN(id), MAX(id) FROM sbtest{t}"]
    ours = asyncio.run(sql(target, queries, target.database))
    theirs = asyncio.run(sql(target, queries, check_db))
    asyncio.run(sql(target, [f"DROP DATABASE `{check_db}`"]))
    differences = []
    for i in range(0, len(queries), 2):
        t = i // 2 + 1
        if _normalise(ours[i][0][1]) != _normalise(theirs[i][0][1]):
            differences.append(f"sbtest{t}: bench-dsl's table\n{ours[i][0][1]}\nsysbench's\n{theirs[i][0][1]}")
        if tuple(ours[i + 1][0]) != tuple(theirs[i + 1][0]) or int(ours[i + 1][0][0]) != s.table_size:
            differences.append(f"sbtest{t}: rows/min id/max id bench-dsl {tuple(ours[i + 1][0])}, "
                               f"sysbench {tuple(theirs[i + 1][0])}")
    if differences:
        raise RuntimeError("bench-dsl's and sysbench's tables differ, the figures would not compare:\n"
                           + "\n".join(differences))
    ratios = [b / a for a, b in zip(sysbench_s, bench_s)]
    own_ratios = [b / a for a, b in zip(sysbench_s, own_s) if b is not None]
    log(f"prepared {s.tables} x {s.table_size:,} rows, {len(ratios)} alternated pair(s): bench-dsl "
        f"{median(bench_s):.1f}s ({median(own_s) or 0:.1f}s its load alone), sysbench {median(sysbench_s):.1f}s; "
        "same layout and row counts")
    return {"tables": s.tables, "table_size": s.table_size, "layout_identical": True, "pairs": len(ratios),
            "bench_dsl_s": round(median(bench_s) or 0, 2), "bench_dsl_own_s": median(own_s),
            "sysbench_s": round(median(sysbench_s) or 0, 2),
            "ratio": round(median(ratios) or 0, 3), "ratio_range": [round(min(ratios), 3), round(max(ratios), 3)],
            "own_ratio": round(median(own_ratios) or 0, 3) if own_ratios else None,
            "note": "alternated pairs; ratio: bench-dsl's whole command (Python's start included) against "
                    "sysbench's; own_ratio: the load bench-dsl reports against sysbench's whole command"}


def _side(ms: list[Measure]) -> dict[str, Any]:
    ok = [m for m in ms if m.ok]
    u = [m.usage for m in ok if m.usage is not None]
    return {
        "runs": len(ms), "ok": len(ok),
        "tps": _r(median([m.tps for m in ok]), 1), "qps": _r(median([m.qps for m in ok]), 1),
        "p95_ms": _r(median([m.p95_ms for m in ok]), 3),
        "cpu_per_10k_tx_s": _r(median([m.cpu_per_10k for m in ok]), 4),
        "client_cores": _r(median([x.client_cores for x in u]), 3),
        "client_busiest_cores": _r(median([x.client_busiest_cores for x in u]), 3),
        "client_processes": max((x.client_processes for x in u), default=None),
        "server_cores": _r(median([x.server_cores for x in u]), 3),
        # what the server spent per transaction under this client: where the machine is full, the
        # CPU a client leaves goes to the server, and this says whether it bought transactions
        "server_us_per_tx": _r(median([m.usage.server_cores / m.tps * 1e6 for m in ok
                                       if m.usage is not None and m.usage.server_cores is not None and m.tps]), 1),
        "host_busy_cores": _r(median([x.host_busy_cores for x in u]), 3),
        "other_cores": _r(median([x.other_cores for x in u]), 3),
        "errors": sum(m.errors for m in ok),
        "failures": [m.error for m in ms if not m.ok],
    }


def _r(v: float | None, nd: int) -> float | None:
    return None if v is None else round(v, nd)


def run_point(target: Target, test: str, users: int, s: Settings, workdir: Path, env: dict[str, str], ncpu: int,
              log: Log, floor: bool = False) -> dict[str, Any]:
    """With `floor`, each pair is followed by the two floors (plain loops that measure nothing):
    through asyncmy, and on the raw executor, so that bench-dsl's cost splits into what executing
    statements takes and what the engine adds."""
    wl = sysbench_workload(test, s.tables, s.table_size)
    text = bench_file(f"{test}-{users}", target, wl, users, s.warmup, s.duration, s.seed, s.workers)
    a_runs: list[Measure] = []
    b_runs: list[Measure] = []
    c_runs: list[Measure] = []
    d_runs: list[Measure] = []
    for i in range(s.pairs):
        a = run_sysbench(target, test, s.tables, s.table_size, users, s.warmup, s.duration, workdir)
        b, _ = run_bench_dsl(text, f"{test}@{users}", users, s.warmup, s.duration, workdir, env,
                             server_pid=target.server_pid)
        a_runs.append(a)
        b_runs.append(b)
        line = _pair_line(a, b)
        if floor:
            for mode, runs in (("asyncmy", c_runs), ("raw", d_runs)):
                c = run_floor(target, users, s.warmup, s.duration, s.tables, s.table_size, workdir, mode)
                runs.append(c)
                line += " | " + (f"{mode} loop {c.tps:,.0f} tps cpu/10k {c.cpu_per_10k:.2f}s"
                                 if c.ok and c.tps is not None and c.cpu_per_10k is not None
                                 else f"{mode} loop FAILED ({(c.error or '').splitlines()[0][:120]})")
        log(f"{test} {users:>4} users, pair {i + 1}/{s.pairs}: " + line)
    # the closing reference: every bench-dsl run (and floor) then has a sysbench run on either side
    closing = run_sysbench(target, test, s.tables, s.table_size, users, s.warmup, s.duration, workdir)
    refs = [*a_runs, closing]
    log(f"{test} {users:>4} users, closing reference: {_one(closing)}")

    def each(runs: list[Measure], key: str) -> list[float | None]:
        return [getattr(m, key) if m.ok else None for m in runs]

    def bracketed(runs: list[Measure], key: str) -> dict[str, float | int | None]:
        return ratio_summary(each(refs, key), each(runs, key), bracketed=True)

    ratios = {key: bracketed(b_runs, attr) for key, attr in RATIOS}
    # the plain pairs (each bench-dsl run against the sysbench run just before it), for comparison
    paired = {key: ratio_summary(each(a_runs, attr), each(b_runs, attr)) for key, attr in RATIOS}
    sb, bd = _side(refs), _side(b_runs)
    tps_r, cpu_r = ratios["tps"]["median"], ratios["cpu_per_10k_tx"]["median"]
    floor_out: dict[str, Any] | None = None
    if floor:
        floor_out = {}
        for key, runs in (("asyncmy_loop", c_runs), ("raw_loop", d_runs)):
            floor_out[key] = {
                **_side(runs),
                "loop_vs_sysbench": {key: bracketed(runs, attr) for key, attr in FLOOR_RATIOS},
                # the floor runs right after bench-dsl: these stay plain pairs
                "bench_dsl_vs_loop": {key: ratio_summary(each(runs, attr), each(b_runs, attr))
                                      for key, attr in FLOOR_RATIOS},
                "each_run": [m.to_json() for m in runs],
            }
    return {
        "test": test, "users": users, "sysbench": sb, "bench_dsl": bd, "ratios": ratios, "paired_ratios": paired,
        "floor": floor_out,
        "goals": {"tps_ratio_at_least": TPS_RATIO_GOAL, "tps_range_reaches": 1.0, "cpu_ratio_at_most": CPU_RATIO_GOAL,
                  "tps_met": None if tps_r is None else tps_r >= TPS_RATIO_GOAL and ratios["tps"]["max"] >= 1.0,
                  "cpu_met": None if cpu_r is None else cpu_r <= CPU_RATIO_GOAL,
                  "no_errors": bd["errors"] == 0 and not bd["failures"]},
        "limit": {"sysbench": limit_note("sysbench", sb["client_cores"], sb["client_busiest_cores"],
                                         float(min(users, ncpu)), sb["server_cores"], sb["host_busy_cores"], ncpu,
                                         sb["other_cores"]),
                  "bench_dsl": limit_note("bench-dsl", bd["client_cores"], bd["client_busiest_cores"], 1.0,
                                          bd["server_cores"], bd["host_busy_cores"], ncpu, bd["other_cores"])},
        "runs": [{"sysbench": a.to_json(), "bench_dsl": b.to_json()} for a, b in zip(a_runs, b_runs, strict=True)],
        "closing_sysbench": closing.to_json(),
    }


def _one(m: Measure) -> str:
    if not m.ok:
        return f"{m.client} FAILED ({(m.error or '').splitlines()[0][:120]})"
    cpu = m.cpu_per_10k
    return f"{m.client} {m.tps:,.0f} tps p95 {m.p95_ms}ms cpu/10k {cpu:.2f}s" if cpu is not None else \
        f"{m.client} {m.tps:,.0f} tps"


def _pair_line(a: Measure, b: Measure) -> str:
    ratio = f" -> {b.tps / a.tps:.2f}x" if a.ok and b.ok and a.tps and b.tps is not None else ""
    return f"{_one(a)} | {_one(b)}{ratio}"
