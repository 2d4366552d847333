"""Memory per virtual user: bench-dsl at 1 user and at many (1,000 by default), point selects, the
peak resident memory of its process tree sampled during the measured part; sysbench with as many
threads alongside as the reference. bench-dsl itself must report no errors at all."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.clients import Measure, Target, bench_file, run_bench_dsl, run_sysbench, sysbench_workload
from bench.compare import Log, Settings

MiB = 1024 * 1024


def memory_per_user(target: Target, s: Settings, users: int, warmup: int, duration: int, workdir: Path,
                    env: dict[str, str], log: Log) -> dict[str, Any]:
    wl = sysbench_workload("oltp_point_select", s.tables, s.table_size)
    base, _ = run_bench_dsl(bench_file("memory-1", target, wl, 1, warmup, duration, s.seed, s.workers),
                            "memory@1", 1, warmup, duration, workdir, env, sample_rss=True,
                            server_pid=target.server_pid)
    many, doc = run_bench_dsl(bench_file(f"memory-{users}", target, wl, users, warmup, duration, s.seed, s.workers),
                              f"memory@{users}", users, warmup, duration, workdir, env, sample_rss=True,
                              server_pid=target.server_pid)
    ref = run_sysbench(target, "oltp_point_select", s.tables, s.table_size, users, warmup, duration, workdir,
                       sample_rss=True)
    # Every error bench-dsl saw in the whole run (warm-up and connecting included), not only the hold's.
    all_errors = sum(int(e.get("count", 0)) for e in (doc or {}).get("errors", []))
    out: dict[str, Any] = {
        "users": users, "bench_dsl_1_user": base.to_json(), "bench_dsl": many.to_json(), "sysbench": ref.to_json(),
        "errors": all_errors if doc is not None else None,
        "error_codes": (doc or {}).get("errors", []),
        "meets_target": bool(many.ok and doc is not None and all_errors == 0),
    }
    if many.ok and many.rss_peak:
        out["rss_mib"] = round(many.rss_peak / MiB, 1)
        out["rss_per_user_kib"] = round(many.rss_peak / users / 1024, 1)
        if base.ok and base.rss_peak:
            # What one more user costs, without the interpreter and libraries every run pays once.
            out["marginal_per_user_kib"] = round((many.rss_peak - base.rss_peak) / (users - 1) / 1024, 1)
    if ref.ok and ref.rss_peak:
        out["sysbench_rss_mib"] = round(ref.rss_peak / MiB, 1)
        out["sysbench_rss_per_user_kib"] = round(ref.rss_peak / users / 1024, 1)
    log(f"memory: {users} users: " + _line(many, users) + " | " + _line(ref, users)
        + f" | bench-dsl errors {out['errors']}")
    return out


def _line(m: Measure, users: int) -> str:
    if not m.ok:
        return f"{m.client} FAILED ({(m.error or '').splitlines()[0][:160]})"
    rss = (m.rss_peak or 0) / MiB
    return f"{m.client} {rss:.0f} MiB ({rss * 1024 / users:.0f} KiB/user), {m.tps:,.0f} tps"
