"""`make bench`'s TLS row: bench-dsl's point selects at 16 users on the same throwaway server, over
plain TCP and over TLS (ssl-mode=VERIFY_CA, the certificate made by openssl for the run), alternated
plain, TLS, plain, TLS ... and closed by a plain run, each TLS run against the plain runs on either
side of it (the harness's bracketed ratios). What TLS costs the measured server, and what it costs
the client per transaction."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

from bench.clients import Measure, Target, bench_file, dsn_var, run_bench_dsl, sysbench_workload
from bench.stats import ratio_summary

USERS = 16


def tls_vs_plain(target: Target, ca: Path, pairs: int, warmup: int, duration: int, tables: int, table_size: int,
                 seed: int, workdir: Path, env: dict[str, str], log: Callable[[str], None],
                 users: int = USERS) -> dict[str, Any]:
    plain_env = dict(env)
    tls_env = dict(env)
    tls_env[dsn_var(target.database)] = target.url() + f"?ssl-mode=VERIFY_CA&ssl-ca={quote(str(ca), safe='/')}"
    text = bench_file("tls", target, sysbench_workload("oltp_point_select", tables, table_size), users, warmup,
                      duration, seed, None)
    plain: list[Measure] = []
    tls: list[Measure] = []
    for i in range(pairs + 1):
        m, _ = run_bench_dsl(text, f"plain@{users}", users, warmup, duration, workdir, plain_env,
                             server_pid=target.server_pid)
        plain.append(m)
        if i == pairs:
            break
        t, doc = run_bench_dsl(text, f"tls@{users}", users, warmup, duration, workdir, tls_env,
                               server_pid=target.server_pid)
        cipher = ((doc or {}).get("server") or {}).get("tls", {}) or {}
        if t.ok and not cipher.get("cipher"):
            t.ok, t.error = False, "the run was not encrypted (no cipher in its result)"
        tls.append(t)
        log(f"TLS vs plain at {users} users, pair {i + 1}/{pairs}: plain {_tps(m)} | TLS {_tps(t)}"
            f"{' (' + str(cipher.get('cipher')) + ')' if cipher.get('cipher') else ''}")

    def tps(ms: list[Measure]) -> list[float | None]:
        return [m.tps if m.ok else None for m in ms]

    def cpu(ms: list[Measure]) -> list[float | None]:
        return [m.cpu_per_10k if m.ok else None for m in ms]

    failed = [m.error for m in plain + tls if not m.ok]
    return {"users": users, "test": "oltp_point_select", "mode": "VERIFY_CA",
            "tps_plain": [m.tps for m in plain if m.ok], "tps_tls": [m.tps for m in tls if m.ok],
            "tps_ratio": ratio_summary(tps(plain), tps(tls), bracketed=True),
            "cpu_per_10k_plain": [m.cpu_per_10k for m in plain if m.ok],
            "cpu_per_10k_tls": [m.cpu_per_10k for m in tls if m.ok],
            "cpu_ratio": ratio_summary(cpu(plain), cpu(tls), bracketed=True),
            "failed": failed}


def _tps(m: Measure) -> str:
    return f"{m.tps:,.0f} tps" if m.ok and m.tps is not None else f"FAILED ({(m.error or '')[:200]})"
