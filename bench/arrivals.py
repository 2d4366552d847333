"""Open-loop schedule accuracy, and the closed-loop speed beside it, on `SELECT 1` against a
throwaway server (the C executor's users, bench_dsl/native/src/schedule.c's Schedule):

- at each rate asked (default 1,000, 10,000 and 50,000 a second): arrivals offered, transactions
  started and completed per second, dropped, and the lag (send minus due) at p50 / p99;
- closed loop: transactions per second of the same users without a schedule, alternated between
  this tree and another one (`--against DIR`, e.g. a checkout before a change of the C executor), to
  show that a change left the closed loop's hot path as fast as it was;
- the client's cost (`--cost`, with `--against`): the process's CPU and its threads' voluntary
  context switches (each one a sleep, so a wakeup) per completed transaction, open loop at each
  rate and closed loop, each tree in a process of its own, alternated round after round.

    python -m bench.arrivals [--rates 1000,10000,50000] [--users 64] [--seconds 5]
                             [--against DIR --closed-users 8 --rounds 3 [--cost]]

Timings on a shared or loaded machine say what that machine could do then: read them beside its
load (printed first). CPU per transaction is the steadier figure there: throughput falls with the
cores others take, the client's work per transaction much less."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

SQL = "SELECT 1"
HERE = Path(__file__).resolve().parent.parent  # this tree


async def _users(dsn: Any, n: int, schedule: Any) -> tuple[list[Any], Any]:
    from bench_dsl.language.statements import Execute, StatementStep, Transaction, Transactions
    from bench_dsl.measure.recorder import new_counts
    from bench_dsl.native import executor

    tx = Transactions((Transaction((StatementStep(1, 1, (), (Execute((SQL,), ()),)),), False),))
    prog = executor.program(tx, (1.0,))
    counts = new_counts(1)
    more = () if schedule is None else (schedule,)  # closed loop: as a tree without schedules calls it
    users = [executor.NativeUser(prog, counts, i, executor.options(dsn, 10), *more) for i in range(n)]
    for u in users:
        outcome, code, message = await u.connect()
        if outcome != 0:
            raise SystemExit(f"cannot connect: ({code}) {message}")
    return users, counts


def _usage() -> tuple[float, int]:
    """The process's CPU seconds (all its threads, the ended ones too) and its voluntary context
    switches: a thread that blocks (a futex, a socket, a timer) switches once and is woken once."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime, r.ru_nvcsw


def _cost(before: tuple[float, int], completed: int) -> dict[str, float | None]:
    cpu, switches = _usage()
    if not completed:
        return {"cpu_us_per_tx": None, "wakeups_per_tx": None}
    return {"cpu_us_per_tx": round((cpu - before[0]) * 1e6 / completed, 2),
            "wakeups_per_tx": round((switches - before[1]) / completed, 3)}


def _percentile(d: dict[int, int], p: float) -> float | None:
    total = sum(d.values())
    if not total:
        return None
    acc = 0
    for k in sorted(d):
        acc += d[k]
        if acc >= total * p / 100:
            return k / 1000
    return None


def _any_percentile(hist: dict[int, int] | str | None, p: float) -> float | None:
    """A percentile (ms) of a Schedule.take() latency: a histogram encoded, or (a tree from before the
    histograms were recorded in C) a dict of microseconds."""
    if isinstance(hist, dict):
        return _percentile(hist, p)
    from bench_dsl.measure.txstats import decoded

    return None if hist is None else decoded(hist).get_value_at_percentile(p) / 1000


def _taken(done: list[Any]) -> tuple[int, dict[str, float | None]]:
    """The first type's completions and response-time percentiles (ms) of a Counts.take(): a histogram
    encoded, or (a tree from before the histograms were recorded in C) a dict of microseconds."""
    first = done[0]
    if isinstance(first[0], dict):
        lat = first[0]
        return sum(lat.values()), {f"response_ms_p{p}": _percentile(lat, p) for p in (50, 99)}
    return first[1], {f"response_ms_p{p}": _any_percentile(first[0], p) for p in (50, 99)}


async def rate_run(dsn: Any, rate: float, n: int, seconds: float) -> dict[str, Any]:
    from bench_dsl import native

    schedule = native.compiled.Schedule(1)  # type: ignore[union-attr]
    users, counts = await _users(dsn, n, schedule)
    runs = [asyncio.create_task(u.run(False)) for u in users]
    await asyncio.sleep(0.5)
    schedule.set(rate)
    await asyncio.sleep(1.0)  # the first second: connections warm, the pool settled
    # the clock read before each take: a take counts what was due when it starts, then spends a
    # while (tens of ms at 50,000 a second) turning its samples into dicts
    start = time.monotonic()
    schedule.take()
    counts.take()
    usage = _usage()
    await asyncio.sleep(seconds)
    end = time.monotonic()
    d = schedule.take()
    elapsed = end - start
    completed, response = _taken(counts.take())
    cost = _cost(usage, completed)  # before the users are stopped and their samples tallied
    for u in users:
        u.stop = True
    await asyncio.gather(*runs)
    for u in users:
        u.close()
    return {"rate": rate, "users": n, "seconds": round(elapsed, 3),
            "offered_tps": round(d["offered"] / elapsed, 1), "started_tps": round(d["started"] / elapsed, 1),
            "completed_tps": round(completed / elapsed, 1),
            "offered_vs_asked_pct": round(100 * d["offered"] / (rate * elapsed), 2),
            "started_vs_offered_pct": round(100 * d["started"] / d["offered"], 2) if d["offered"] else None,
            "dropped": d["dropped"], "busy_max": d["busy_max"],
            "lag_ms_p50": _any_percentile(d["lag"], 50), "lag_ms_p99": _any_percentile(d["lag"], 99),
            "service_ms_p50": _any_percentile(d["service"], 50),
            **response,
            **cost}


async def closed_run(dsn: Any, n: int, seconds: float) -> dict[str, Any]:
    users, counts = await _users(dsn, n, None)
    runs = [asyncio.create_task(u.run(False)) for u in users]
    await asyncio.sleep(0.5)
    counts.take()
    usage = _usage()
    start = time.monotonic()
    await asyncio.sleep(seconds)
    completed, _ = _taken(counts.take())
    elapsed = time.monotonic() - start
    cost = _cost(usage, completed)
    for u in users:
        u.stop = True
    await asyncio.gather(*runs)
    for u in users:
        u.close()
    return {"users": n, "tps": round(completed / elapsed, 1), **cost}


def _in(tree: Path, call: str) -> Any:
    """`call` (a coroutine expression of this module, as `m`) awaited in a process importing
    bench_dsl from `tree`, and this module from this tree (the other tree's may not measure the same)."""
    code = ("import asyncio, importlib.util, json, sys; "
            f"sys.path.insert(0, {str(tree)!r}); "
            "from bench_dsl.core.dsn import parse_dsn; "
            f"spec = importlib.util.spec_from_file_location('arrivals_here', {__file__!r}); "
            "m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m); "
            f"print(json.dumps(asyncio.run({call})))")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _closed_in(tree: Path, url: str, n: int, seconds: float) -> dict[str, Any]:
    """One closed-loop measurement in a process importing bench_dsl from `tree`."""
    return _in(tree, f"m.closed_run(parse_dsn({url!r}), {n}, {seconds})")


def _rate_in(tree: Path, url: str, rate: float, n: int, seconds: float) -> dict[str, Any]:
    """One open-loop measurement in a process importing bench_dsl from `tree`."""
    return _in(tree, f"m.rate_run(parse_dsn({url!r}), {rate}, {n}, {seconds})")


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rates", default="1000,10000,50000")
    ap.add_argument("--users", type=int, default=64)
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--against", type=Path, help="another tree holding bench_dsl/ (with its built _native)")
    ap.add_argument("--closed-users", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--cost", action="store_true",
                    help="with --against: each rate too, alternated, with CPU and wakeups per transaction")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()

    from bench_dsl.server.embedded import EmbeddedServer

    print(f"load average {os.getloadavg()}, {os.cpu_count()} cores", flush=True)
    srv = EmbeddedServer(max_connections=400)
    dsn = await srv.start()
    out: dict[str, Any] = {"load_before": os.getloadavg(), "rates": [], "closed": {}}
    try:
        rates = [float(r) for r in args.rates.split(",") if r]
        if not (args.cost and args.against is not None):
            for rate in rates:
                r = await rate_run(dsn, rate, args.users, args.seconds)
                out["rates"].append(r)
                print(json.dumps(r), flush=True)
        if args.against is not None:
            mine: list[dict[str, Any]] = []
            theirs: list[dict[str, Any]] = []
            for _ in range(args.rounds):  # alternated: the machine's drift falls on both
                for tree, into, name in ((args.against, theirs, "against"), (HERE, mine, "this tree")):
                    c = _closed_in(tree, srv.url(), args.closed_users, args.seconds)
                    into.append(c)
                    print(f"{name}: closed loop, {json.dumps(c)}", flush=True)
                    for rate in rates if args.cost else []:
                        r = _rate_in(tree, srv.url(), rate, args.users, args.seconds)
                        out["rates"].append({"tree": name, **r})
                        print(f"{name}: {json.dumps(r)}", flush=True)
                print(f"closed loop, {args.closed_users} users: against {theirs[-1]['tps']:.0f} tps, this tree "
                      f"{mine[-1]['tps']:.0f} tps; load average {os.getloadavg()}", flush=True)
            out["closed"] = {"users": args.closed_users, "against": theirs, "this": mine}
    finally:
        srv.stop()
    out["load_after"] = os.getloadavg()
    print(f"load average {os.getloadavg()}")
    if args.json:
        args.json.write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    asyncio.run(main())
