"""TPC-C, when bench-dsl has the workload: how long loading 2 warehouses takes, and NOPM at 8 users
with the transactions sent statement by statement (client-side) and as stored procedures,
alternated A B A B. No TPC-C reference client runs here, so the load time is an absolute figure of
this machine at this moment: compare it with a BenchBase load on the same machine, not across them."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import time
from pathlib import Path
from typing import Any

from bench.clients import BENCH_CMD, Target, bench_check, bench_file, run_bench_dsl
from bench.compare import Log, Settings
from bench.stats import median, ratio_summary

WAREHOUSES = 2
USERS = 8


# The figures (2 warehouses, 8 users, throwaway MariaDB 10.11, the same kind of machine, another
# day): NOPM, client cores, server cores. CPU per new order is steadier across days than NOPM.
REFERENCE = {
    "go-tpc (client-side SQL)": (29_500, 0.55, 1.33),
    "HammerDB v6, stored procedures": (28_800, 0.23, 1.7),
    "BenchBase (REPEATABLE READ)": (21_000, 0.53, 1.4),
    "tpcc-mysql": (16_900, 0.42, 1.54),
    "HammerDB v6, client-side SQL": (13_700, 0.55, 1.3),
}


def per_new_order_ms(cores: float | None, nopm: float | None) -> float | None:
    """CPU milliseconds per new order, from cores used (CPU s per s) and new orders per minute."""
    return None if cores is None or not nopm else round(cores / (nopm / 60) * 1000, 3)


def _costs(runs: list[Any]) -> dict[str, Any]:
    ok = [m for m in runs if m.ok and m.usage is not None and m.extra.get("nopm")]
    client = [per_new_order_ms(m.usage.client_cores, m.extra["nopm"]) for m in ok]
    server = [per_new_order_ms(m.usage.server_cores, m.extra["nopm"]) for m in ok]
    return {"nopm": median([m.extra["nopm"] for m in ok]),
            "client_cores": median([m.usage.client_cores for m in ok]),
            "server_cores": median([m.usage.server_cores for m in ok]),
            "client_ms_per_new_order": median(client), "server_ms_per_new_order": median(server)}


def available() -> str | None:
    """None when the tpcc workload is there; else why the section is skipped."""
    if importlib.util.find_spec("bench_dsl.workloads.tpcc.workload") is None:
        return "skipped: bench-dsl has no TPC-C workload yet (bench_dsl/workloads/tpcc/workload.py)"
    return None


def _workload(procedures: bool) -> str:
    return f"workload tpcc {{ warehouses = {WAREHOUSES}  procedures = {'on' if procedures else 'off'} }}"


def tpcc(target: Target, s: Settings, warmup: int, duration: int, workdir: Path, env: dict[str, str],
         log: Log, against: Path | None = None) -> dict[str, Any]:
    """`against`: another tree whose bench-dsl runs each mode too, alternated with this tree's (its
    runs first in each pair), on the same data."""
    if (why := available()) is not None:
        return {"skipped": why}
    modes = {"client_side": (False, f"{target.database}_tpcc"), "procedures": (True, f"{target.database}_tpcc_sp")}
    texts = {k: bench_file(f"tpcc-{k}", target, _workload(p), USERS, warmup, duration, s.seed, s.workers, db)
             for k, (p, db) in modes.items()}
    for k, text in texts.items():
        src = workdir / f"tpcc-{k}.bench"
        src.write_text(text)
        ok, msg = bench_check(src, env)
        if not ok:
            return {"skipped": f"skipped: bench check does not accept the TPC-C scenario ({k}):\n{msg}"}

    # Each mode gets its own database, loaded once: stored procedures may change what is loaded,
    # and reloading between alternated runs would cost more than the runs.
    loads: dict[str, Any] = {}
    for k in modes:
        t0 = time.perf_counter()
        r = subprocess.run([*BENCH_CMD, "prepare", str(workdir / f"tpcc-{k}.bench"), "--force-prepare"],
                           check=False, capture_output=True, text=True, env=env, cwd=workdir, timeout=3600)
        secs = time.perf_counter() - t0
        if r.returncode != 0:
            return {"error": f"bench prepare (tpcc, {k}) exit {r.returncode}: {r.stderr[-1500:]}"}
        own = re.search(r"prepared (\d+) rows in ([\d.]+)s", r.stderr)
        loads[k] = {"seconds": round(secs, 2), "rows": int(own.group(1)) if own else None,
                    "own_seconds": float(own.group(2)) if own else None}
        log(f"tpcc: loaded {WAREHOUSES} warehouses ({k}) in {secs:.1f}s")

    theirs: dict[str, list[Any]] = {k: [] for k in modes}
    if against is not None:
        their_env = {**env, "PYTHONPATH": str(against)}  # before the editable install on the path
    a_runs, b_runs = [], []
    for i in range(s.pairs):
        if against is not None:
            for k in modes:
                m, _ = run_bench_dsl(texts[k], f"tpcc@{k}@against", USERS, warmup, duration, workdir, their_env,
                                     server_pid=target.server_pid)
                theirs[k].append(m)
                log(f"tpcc against {against}, pair {i + 1}/{s.pairs}: {k} NOPM {m.extra.get('nopm')}"
                    + ("" if m.ok else f" (failed: {(m.error or '')[:200]})"))
        a, _ = run_bench_dsl(texts["client_side"], "tpcc@client", USERS, warmup, duration, workdir, env,
                             server_pid=target.server_pid)
        b, _ = run_bench_dsl(texts["procedures"], "tpcc@procedures", USERS, warmup, duration, workdir, env,
                             server_pid=target.server_pid)
        a_runs.append(a)
        b_runs.append(b)
        log(f"tpcc {USERS} users, pair {i + 1}/{s.pairs}: client-side NOPM {a.extra.get('nopm')}, "
            f"procedures NOPM {b.extra.get('nopm')}" + ("" if a.ok and b.ok else
                                                        f" (failed: {(a.error or b.error or '')[:200]})"))
    na = [m.extra.get("nopm") if m.ok else None for m in a_runs]
    nb = [m.extra.get("nopm") if m.ok else None for m in b_runs]
    mine = {"client_side": _costs(a_runs), "procedures": _costs(b_runs)}
    compared = {}
    if against is not None:
        before = {k: _costs(runs) for k, runs in theirs.items()}
        compared = {"against": {"tree": str(against), "modes": before,
                                "this_vs_against": {k: {f: None if not before[k][f] or mine[k][f] is None
                                                        else round(mine[k][f] / before[k][f], 3)
                                                        for f in ("nopm", "client_ms_per_new_order",
                                                                  "server_ms_per_new_order")}
                                                    for k in modes}}}
    return {
        "modes": mine, **compared,
        "reference": REFERENCE,
        "warehouses": WAREHOUSES, "users": USERS,
        "load_s": median([v["seconds"] for v in loads.values()]), "loads": loads,
        "nopm_client_side": median(na), "nopm_procedures": median(nb),
        "tpm_client_side": median([m.tps * 60 if m.ok and m.tps else None for m in a_runs]),
        "tpm_procedures": median([m.tps * 60 if m.ok and m.tps else None for m in b_runs]),
        "procedures_vs_client_side": ratio_summary(na, nb),
        "errors": sum(m.errors for m in a_runs + b_runs if m.ok),
        "runs": [{"client_side": a.to_json(), "procedures": b.to_json()} for a, b in zip(a_runs, b_runs, strict=True)],
        "note": "load time: no BenchBase in this run; the issue's 11 s for BenchBase was measured on another "
                "day and machine, so compare only on the same machine",
    }
