"""The result document as a markdown page: the machine, the side-by-side table, what limits each
point, and the engine's own costs."""

from __future__ import annotations

import statistics
from typing import Any


def _n(v: float | None, nd: int = 0) -> str:
    if v is None:
        return "-"
    return f"{v:,.{nd}f}"


def _ratio(r: dict[str, Any] | None, goal_ok: bool | None = None, count_1: bool = False) -> str:
    """median, goal, (range); with `count_1`, how many of the ratios reached 1.0 (where the machine's
    noise is as wide as the difference, the count says more than the median alone)."""
    if not r or r.get("median") is None:
        return "-"
    mark = "" if goal_ok is None else (" ✓" if goal_ok else " ✗")
    n = r.get("pairs", 0)
    count = f"; {r['at_least_1']} of {n} >= 1" if count_1 and "at_least_1" in r else ""
    spread = f" ({r['min']:.2f}-{r['max']:.2f}{count})" if n > 1 else ""
    return f"**{r['median']:.2f}x**{mark}{spread}"


def _median(values: list[float] | None) -> float | None:
    vs = [v for v in values or [] if v is not None]
    return statistics.median(vs) if vs else None


def _f2(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f}"


def _skipped(section: dict[str, Any] | None) -> str | None:
    if section is None:
        return "not run"
    if "skipped" in section:
        return str(section["skipped"])
    if "error" in section:
        return f"failed: {section['error']}"
    return None


# Other people's load (busy cores that were neither client nor server) above which a run is flagged.
BUSY_CORES = 0.2


def others_median(doc: dict[str, Any]) -> float | None:
    """The median over all measured windows of the load that was not ours."""
    vals = sorted(run[side]["usage"]["other_cores"] for p in doc.get("compare") or [] for run in p["runs"]
                  for side in ("sysbench", "bench_dsl") if run[side].get("usage"))
    return vals[len(vals) // 2] if vals else None


def render(doc: dict[str, Any]) -> str:
    m, srv, st = doc["machine"], doc.get("server") or {}, doc["settings"]
    out: list[str] = []
    status = "" if doc.get("status") == "completed" else f" ({doc.get('status')})"
    out.append(f"# bench-dsl vs sysbench: {doc['started_at']}{status}\n")
    out.append(f"- **Machine**: {m['cpu_model']}, {m['cpu_logical']} logical cores ({m['cpu_physical']} physical), "
               f"{m['memory_gib']} GiB, {m['os']}, kernel {m['kernel']}; load average at start "
               f"{m['loadavg_start']}, at end {m.get('loadavg_end', '-')}")
    out.append(f"- **Server**: {srv.get('version', '-')} ({'throwaway, embedded' if srv.get('embedded') else 'given target'}), "
               f"max_connections {srv.get('max_connections', '-')}, buffer pool {srv.get('buffer_pool_mib', '-')} MiB, "
               f"TCP to {srv.get('address', '-')}")
    t = doc["tools"]
    out.append(f"- **Clients**: {t.get('sysbench', '-')}; {t.get('bench_dsl', '-')} (commit {t.get('commit', '-')}"
               f"{', engine with uncommitted changes' if t.get('engine_dirty') else ''}), Python {m['python']}")
    out.append(f"- **Method**: {st['pairs']} pair(s) per point, alternated sysbench then bench-dsl, and a closing "
               f"sysbench run (A B A B ... A); each run "
               f"{st['warmup']}s warm-up + {st['duration']}s measured; {st['tables']} table(s) x "
               f"{st['table_size']:,} rows; `workers` {st['workers'] or 'not set (engine default)'}. Figures are "
               "medians of the runs; ratios are medians, (min-max), of each bench-dsl run against the geometric "
               "mean of the sysbench runs before and after it (for tps, also how many of them reached 1.0); "
               "*plain pairs* against the run before it only.")
    if (busy := others_median(doc)) is not None and busy >= BUSY_CORES:
        out.append(f"- **Note**: the machine was shared: other processes used a median {busy:.2f} of "
                   f"{m['cpu_logical']} cores during the measured windows. Absolute figures are not representative; "
                   "the paired ratios are indicative at best.")
    if doc.get("notes"):
        for note in doc["notes"]:
            out.append(f"- **Note**: {note}")
    out.append("")

    points = doc.get("compare") or []
    if points:
        out.append("## Side by side\n")
        out.append("| test | users | tps sysbench | tps bench-dsl | tps ratio (goal: >= 0.97, range reaching 1.0) | plain pairs "
                   "| qps sysbench / bench-dsl "
                   "| p95 ms sysbench / bench-dsl | p95 ratio | client CPU s / 10k tx sysbench / bench-dsl "
                   f"| CPU ratio (goal <= {points[0].get('goals', {}).get('cpu_ratio_at_most', 1.0)}) | bench-dsl errors |")
        out.append("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
        for p in points:
            sb, bd, r, g = p["sysbench"], p["bench_dsl"], p["ratios"], p["goals"]
            errs = str(bd["errors"]) + (f", {len(bd['failures'])} failed run(s)" if bd["failures"] else "")
            if sb["failures"]:
                errs += f"; sysbench: {len(sb['failures'])} failed run(s)"
            out.append(f"| {p['test']} | {p['users']} | {_n(sb['tps'])} | {_n(bd['tps'])} | "
                       f"{_ratio(r['tps'], g['tps_met'], count_1=True)} | {_ratio((p.get('paired_ratios') or {}).get('tps'))} | "
                       f"{_n(sb['qps'])} / {_n(bd['qps'])} | "
                       f"{_n(sb['p95_ms'], 2)} / {_n(bd['p95_ms'], 2)} | {_ratio(r['p95'])} | "
                       f"{_n(sb['cpu_per_10k_tx_s'], 2)} / {_n(bd['cpu_per_10k_tx_s'], 2)} | "
                       f"{_ratio(r['cpu_per_10k_tx'], g['cpu_met'])} | {errs} |")
        out.append("")
        out.append("## What limits each point\n")
        out.append("Cores are CPU seconds per second over the measured window (client: the whole process tree; "
                   "server: mariadbd; others: the rest of the machine's busy time, i.e. load that is not ours).\n")
        out.append("| test | users | sysbench | bench-dsl | server CPU us / tx sysbench / bench-dsl "
                   "| bench-dsl processes, busiest at |")
        out.append("|---|--:|---|---|--:|--:|")
        for p in points:
            bd = p["bench_dsl"]
            busiest = "-" if bd["client_busiest_cores"] is None else f"{bd['client_busiest_cores']:.0%} of a core"
            out.append(f"| {p['test']} | {p['users']} | {p['limit']['sysbench']} | {p['limit']['bench_dsl']} | "
                       f"{_n(p['sysbench'].get('server_us_per_tx'), 1)} / {_n(bd.get('server_us_per_tx'), 1)} | "
                       f"{bd['client_processes'] or '-'}, {busiest} |")
        out.append("")

    floors = [p for p in points if p.get("floor")]
    if floors:
        out.append("## The floors\n")
        out.append("Two plain loops (one process, uvloop, one prepared point select per loop, nothing measured) "
                   "run right after each pair: through asyncmy (`PreparedStatement.execute`), and on bench-dsl's raw "
                   "executor. *loop / sysbench* is what each way of executing costs against C; *bench-dsl / raw loop* "
                   "is what the engine adds (timing, recording, the distribution of keys, the run's own work).\n")
        out.append("| users | loop | tps sysbench / loop / bench-dsl | loop / sysbench | bench-dsl / loop "
                   "| client CPU s / 10k tx sysbench / loop / bench-dsl | CPU loop / sysbench | CPU bench-dsl / loop |")
        out.append("|--:|---|--:|--:|--:|--:|--:|--:|")
        for p in floors:
            for key, name in (("asyncmy_loop", "asyncmy"), ("raw_loop", "raw executor")):
                f = p["floor"].get(key)
                if f is None:
                    continue
                out.append(f"| {p['users']} | {name} | {_n(p['sysbench']['tps'])} / {_n(f['tps'])} / "
                           f"{_n(p['bench_dsl']['tps'])} | "
                           f"{_ratio(f['loop_vs_sysbench']['tps'])} | {_ratio(f['bench_dsl_vs_loop']['tps'])} | "
                           f"{_n(p['sysbench']['cpu_per_10k_tx_s'], 2)} / {_n(f['cpu_per_10k_tx_s'], 2)} / "
                           f"{_n(p['bench_dsl']['cpu_per_10k_tx_s'], 2)} | "
                           f"{_ratio(f['loop_vs_sysbench']['cpu_per_10k_tx'])} | "
                           f"{_ratio(f['bench_dsl_vs_loop']['cpu_per_10k_tx'])} |")
        out.append("")

    out.append("## The engine's own costs\n")
    out.append("| what | measured | reference in the same run | ratio | target |")
    out.append("|---|--:|--:|--:|---|")
    ov = doc.get("overhead")
    if (why := _skipped(ov)) is None and ov is not None:
        out.append(f"| timing + recording one transaction | {ov['ns_per_tx']:,.0f} ns | {ov['reference_ns']:,.0f} ns "
                   f"(a method call that only counts) | {_ratio(ov['ratio_to_reference'])} | < 2,000 ns "
                   f"{'✓' if ov['meets_target'] else '✗'} |")
    else:
        out.append(f"| timing + recording one transaction | {why} | | | |")
    ss = doc.get("server_start")
    if (why := _skipped(ss)) is None and ss is not None:
        out.append(f"| embedded server start to first query | {ss['seconds']:.2f} s | {ss['reference_seconds']:.2f} s "
                   f"(install-db + mariadbd by hand) | {_ratio(ss['ratio_to_reference'])} | < 1.5 s "
                   f"{'✓' if ss['meets_target'] else '✗'} |")
    else:
        out.append(f"| embedded server start to first query | {why} | | | |")
    mem = doc.get("memory")
    if (why := _skipped(mem)) is None and mem is not None:
        per = mem.get("rss_per_user_kib")
        marg = mem.get("marginal_per_user_kib")
        ref = mem.get("sysbench_rss_per_user_kib")
        out.append(f"| memory at {mem['users']:,} users (RSS, process tree) | {_n(mem.get('rss_mib'))} MiB: "
                   f"{_n(per)} KiB/user, {_n(marg)} KiB per added user | sysbench: {_n(mem.get('sysbench_rss_mib'))} "
                   f"MiB, {_n(ref)} KiB/user | - | no errors from bench-dsl: {mem['errors']} "
                   f"{'✓' if mem['meets_target'] else '✗'} |")
    else:
        out.append(f"| memory per virtual user | {why} | | | |")
    pr = doc.get("prepare")
    if pr and "bench_dsl_s" in pr:
        if "pairs" in pr:
            rng = pr["ratio_range"]
            own = f"; its load alone {pr['bench_dsl_own_s']:.1f} s, {pr['own_ratio']:.2f}x" if pr.get("own_ratio") else ""
            out.append(f"| loading {pr['tables']} x {pr['table_size']:,} sysbench rows | {pr['bench_dsl_s']:.1f} s | "
                       f"sysbench prepare: {pr['sysbench_s']:.1f} s | {pr['ratio']:.2f}x ({rng[0]:.2f}-{rng[1]:.2f}, "
                       f"{pr['pairs']} alternated pairs, the whole command{own}) | <= 1.0 |")
        else:  # a document from before the loads were paired
            out.append(f"| loading {pr['tables']} x {pr['table_size']:,} sysbench rows | {pr['bench_dsl_s']:.1f} s | "
                       f"sysbench prepare: {pr['sysbench_s']:.1f} s | {pr['ratio']:.2f}x (one load each) | - |")
    out.append("")

    tl = doc.get("tls")
    out.append("## TLS\n")
    if (why := _skipped(tl)) is None and tl is not None:
        out.append(f"bench-dsl's {tl['test']} at {tl['users']} users over TLS (ssl-mode={tl['mode']}) against plain "
                   "TCP on the same server, each TLS run against the plain runs on either side of it.\n")
        out.append("| users | tps plain | tps TLS | tps TLS / plain | client CPU s / 10k tx plain / TLS | CPU TLS / plain |")
        out.append("|--:|--:|--:|--:|--:|--:|")
        cp, ct = _median(tl["cpu_per_10k_plain"]), _median(tl["cpu_per_10k_tls"])
        out.append(f"| {tl['users']} | {_n(_median(tl['tps_plain']))} | {_n(_median(tl['tps_tls']))} | "
                   f"{_ratio(tl['tps_ratio'])} | {_f2(cp)} / {_f2(ct)} | {_ratio(tl['cpu_ratio'])} |")
        if tl.get("failed"):
            out.append(f"\n{len(tl['failed'])} failed run(s): {tl['failed'][0][:300]}")
    else:
        out.append(why or "not run")
    out.append("")

    tp = doc.get("tpcc")
    out.append("## TPC-C\n")
    if (why := _skipped(tp)) is None and tp is not None:
        out.append(f"{tp['warehouses']} warehouses, {tp['users']} users.\n")
        out.append("| loading | NOPM client-side | NOPM procedures | procedures / client-side | errors |")
        out.append("|--:|--:|--:|--:|--:|")
        out.append(f"| {_n(tp['load_s'], 1)} s | {_n(tp['nopm_client_side'])} | {_n(tp['nopm_procedures'])} | "
                   f"{_ratio(tp['procedures_vs_client_side'])} | {tp['errors']} |")
        if tp.get("modes"):
            from bench.tpcc import per_new_order_ms

            out.append("\nWhat a new order costs. bench-dsl's rows are medians of this run; the issue's rows were "
                       "measured on the same kind of machine on another day (NOPM drifts with the machine; CPU per "
                       "new order much less).\n")
            out.append("| client | NOPM | client cores | server cores | client CPU ms / new order | "
                       "server CPU ms / new order |")
            out.append("|---|--:|--:|--:|--:|--:|")
            for k, name in (("client_side", "bench-dsl, client-side"), ("procedures", "bench-dsl, procedures = on")):
                c = tp["modes"][k]
                out.append(f"| **{name}** | {_n(c['nopm'])} | {_n(c['client_cores'], 2)} | {_n(c['server_cores'], 2)} | "
                           f"{_n(c['client_ms_per_new_order'], 2)} | {_n(c['server_ms_per_new_order'], 2)} |")
            for name, (nopm, cc, sc) in tp.get("reference", {}).items():
                out.append(f"| {name} (issue 3) | {nopm:,} | {cc} | {sc} | {_n(per_new_order_ms(cc, nopm), 2)} | "
                           f"{_n(per_new_order_ms(sc, nopm), 2)} |")
        out.append(f"\n{tp['note']}.")
    else:
        out.append(str(why))
    out.append("")

    from bench.coordinator import coordinator_table  # as bench/ray.py's, each renders its own
    from bench.ray import ray_table
    from bench.sampling import sampling_table

    for key, title, table in (("rate", "Open-loop rate: schedule accuracy", rate_table),
                              ("omission", "Coordinated omission", omission_table),
                              ("sampling", "The sessions' sampling: processlist and ping (issue 41)", sampling_table),
                              ("ray", "workers ray against workers auto (issue 31)", ray_table),
                              ("coordinator", "The coordinator at 10 to 1,000 workers (issue 39)", coordinator_table)):
        if key in doc:
            out.append(f"## {title}\n")
            sec = doc[key]
            out.append(str(_skipped(sec)) if _skipped(sec) is not None else table(sec))
            out.append("")

    ui = doc.get("ui")
    out.append("## Terminal UI overhead\n")
    if (why := _skipped(ui)) is None and ui is not None:
        if isinstance(ui.get("markdown"), str):
            out.append(ui["markdown"])
        else:
            out.append(_ui_table(ui))
    else:
        out.append(str(why))
    out.append("")
    if doc.get("errors"):
        out.append("## Errors\n")
        out.extend(f"- {e}" for e in doc["errors"])
        out.append("")
    return "\n".join(out)


def _ui_table(ui: dict[str, Any]) -> str:
    """bench/ui_overhead.py's JSON: the same scenario headless and with the live screen, paired."""
    st = ui.get("settings", {})
    lines = [f"{st.get('workload', '?')}, {st.get('users', '?')} users, {st.get('pairs', '?')} pairs of "
             f"{st.get('warmup_s', '?')} s + {st.get('duration_s', '?')} s, terminal {st.get('terminal', '?')}. "
             f"Goal: {ui.get('goal', '')}.\n",
             "| workers | tps UI / headless (median of pairs) | range | UI overhead | client CPU per tx, UI vs headless |",
             "|---|--:|--:|--:|--:|"]
    for r in ui.get("results", []):
        ratios = r.get("ratios") or []
        rng = f"{min(ratios):.2f}-{max(ratios):.2f}" if ratios else "-"
        mark = "✓" if r.get("met") else "✗"
        lines.append(f"| {r.get('workers')} | **{r.get('median_ratio', 0):.2f}x** | {rng} | "
                     f"{r.get('overhead_pct', 0):+.1f}% {mark} | {r.get('client_cpu_per_tx_overhead_pct', 0):+.1f}% |")
    rd = ui.get("redraws")
    if rd:
        lines.append(f"\nDrawing the screen: {rd.get('cpu_ms_per_s_of_run')} ms of CPU per second of run "
                     f"({rd.get('of_one_core_pct')}% of one core; {rd.get('how', '')}).")
    return "\n".join(lines)


def _pair(a: float | None, b: float | None, nd: int = 2) -> str:
    return "-" if a is None and b is None else f"{_n(a, nd)} / {_n(b, nd)}"


def rate_table(sec: dict[str, Any]) -> str:
    """bench/rate.py's section: per rate asked, sysbench --rate and bench-dsl's `rate` side by side."""
    lines = [f"`SELECT 1` at each rate, {sec['users']} users (sysbench threads, bench-dsl `users max`), "
             f"{sec['pairs']} pair(s) alternated, {sec['warmup']} s warm-up + {sec['duration']} s measured; "
             f"medians of the runs. Arrivals: {sec['arrivals']}. Achieved is against the rate asked; *within 1%* is "
             "the goal, *server did not keep up* where both clients fell below 95%. Others' cores: the median "
             "of the machine's busy cores that were neither client nor server in the runs' windows (other "
             "people's load). Lateness is how late each "
             f"send was against its due time; {sec['sysbench_note']}.\n",
             "| rate asked (others' cores) | client | offered tps | achieved tps (% of asked) | verdict | dropped "
             "| lateness p50 / p99 ms | response p50 / p99 ms | service p50 / p99 ms | client CPU us / tx |",
             "|--:|---|--:|--:|---|--:|--:|--:|--:|--:|"]
    for row in sec["rates"]:
        busy = "" if row.get("other_cores") is None else f" ({row['other_cores']:.2f})"
        for key, name in (("sysbench", "sysbench --rate"), ("bench_dsl", "bench-dsl rate")):
            c = row[key]
            if not c.get("ok"):
                why = (c.get("failures") or ["no run"])[0] or "failed"
                lines.append(f"| {row['rate']:,.0f}{busy} | {name} | | {why.splitlines()[0][:160]} "
                             f"| {c.get('verdict', 'failed')} | | | | | |")
                continue
            late = _pair(c.get("lag_ms_p50"), c.get("lag_ms_p99"), 3) if key == "bench_dsl" else "not reported"
            resp = _pair(c.get("response_ms_p50"), c.get("response_ms_p99"))
            if key == "sysbench":
                resp += " (incl. queue)"
            dropped = "-" if c.get("dropped") is None else f"{c['dropped']:,.0f} ({_n(c.get('dropped_pct'), 2)}%)"
            offered = _n(c.get("offered_tps"), 1) if key == "bench_dsl" else "asked"
            lines.append(f"| {row['rate']:,.0f}{busy} | {name} | {offered} "
                         f"| {_n(c.get('achieved_tps'), 1)} ({_n(c.get('achieved_pct_of_asked'), 2)}%) "
                         f"| {c['verdict']} "
                         f"| {dropped} | {late} | {resp} | {_pair(c.get('service_ms_p50'), c.get('service_ms_p99'))} "
                         f"| {_n(c.get('client_us_per_tx'), 1)} |")
    return "\n".join(lines)


def omission_table(sec: dict[str, Any]) -> str:
    """bench/omission.py's figures: the transactions slower than 1 s, open loop and closed loop."""
    o, c = sec["open"], sec["closed"]
    lines = [f"`SELECT 1`; the server stopped (SIGSTOP, SIGCONT) {sec['stall_asked_s']:g} s once, "
             f"{sec['stall_at_s']:g} s after each run's measured window began (as the run's own stream told it; "
             f"*at*: where it fell in the run's clock) for {sec['duration']} s measured. Open loop: expected "
             "rate x (stop - 1 s) transactions slower than 1 s (within 15%); closed loop: about one per user.\n",
             "| run | load | server stopped | at | transactions | slower than 1 s | expected | ratio | met |",
             "|---|---|--:|--:|--:|--:|--:|--:|---|"]
    for run, load in ((o, f"rate {sec['rate']:,.0f} tps, users max {sec['users']} queue {sec['queue']:,}"),
                      (c, f"users {sec['closed_users']}")):
        name = "open loop" if run is o else "closed loop"
        lines.append(f"| {name} | {load} | {run['stopped_s']:.2f} s | {run['stop_at_s']:.2f} s "
                     f"| {_n(run.get('transactions'))} "
                     f"| {run['slow']:,} | {run['expected']:,.0f} | {_n(run.get('ratio'), 3)} "
                     f"| {'yes' if run['within_15pct'] else 'no'} |")
    svg = [p for p in sec.get("chart") or [] if p.endswith(".svg")]
    if svg:  # written beside this page
        name = svg[0].rsplit("/", 1)[-1]
        lines.append(f"\n![Response and service time per interval, open loop and closed loop]({name})")
    return "\n".join(lines)
