"""`make bench`'s ray section (issue 31): `workers ray` against `workers auto` on one machine, at 64
users of oltp_point_select: what Ray's calls cost (one report a tick per actor, one message per
phase change), as the throughput ray keeps of auto's. The goal: under 5% lost (ray / auto >= 0.95).

The setting, so that the two differ only in what runs the users:
- one Ray node on this machine, `--num-cpus` = its cores (one node is what "one machine" means: a
  second node would add a second raylet's overhead that no single-machine user pays), started for
  the section and stopped by PID at its end whatever happens. It is tests/e2e/raycluster.py's
  RayCluster (the harness already imports tests.*): a network namespace of its own, so its ports
  stay private on a shared machine, and a throwaway MariaDB server inside it;
- both runs talk to that server over the namespace's loopback, so the network path is the same;
  the cluster idles beside the auto runs too (its idle cost falls on both sides alike);
- `workers ray` places one actor per Ray CPU (here: per core) and `workers auto` one process per
  core: the same number of workers on each side;
- pairs run ray, auto, then auto, ray, and so on (each pair the other way round from the one before, so
  that a drift over the section falls on both sides alike); the ratio is taken per pair (ray_i /
  auto_i), then its median and range, as the comparison's paired ratios are.

Client CPU per transaction, two ways:
- bench-dsl's own, from the result's summary: each process's CPU (client_cpu_by_process:
  coordinator, worker 1, ...; a Ray actor reports its own like a worker process) over the hold;
  `cpu.client` (% of the machine) is kept beside it;
- from the outside (psutil, the same window: the `hold` phase to the `step` event): bench-dsl's
  process tree, the actors, and the rest of Ray's processes (raylet, GCS, log monitors, idle
  workers), which no result counts. During the auto runs the last is the idle cluster's cost."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil

from bench.clients import BENCH_CMD
from bench.compare import Log, Settings
from bench.host import loadavg
from bench.procs import Child, Snapshot, snapshot, usage
from bench.stats import median, ratio_summary

USERS = 64
TEST = "oltp_point_select"
GOAL_RATIO = 0.95  # "under 5% lost throughput"
SIDES = ("ray", "auto")
KINDS = ("bench", "actors", "ray")  # the outside figures: bench-dsl's tree, the actors, Ray's other processes


def scenario(tables: int, table_size: int, warmup: int, duration: int, seed: int) -> str:
    """No `workers` line: the command line's --workers picks the side. The address (password
    included) comes from the namespace's BENCH_DSN, never from the file."""
    return "\n".join([f'scenario "ray-vs-auto-{USERS}" {{', '  target env("BENCH_DSN")', f"  seed {seed}",
                      f"  workload sysbench {TEST} {{ tables = {tables}  table_size = {table_size} }}",
                      f"  users {USERS}", *([f"  warmup {warmup}s"] if warmup else []), f"  duration {duration}s",
                      "}"]) + "\n"


def skip_reason() -> str | None:
    """Why this machine cannot run the section (None: it can)."""
    try:
        import ray  # noqa: F401 - only whether it is there
    except ImportError:
        return "skipped: Ray is not installed (pip install 'bench-dsl[ray]')"
    if os.geteuid() != 0:
        return "skipped: its Ray node runs in a network namespace of its own (unshare --net): run as root"
    missing = [t for t in ("unshare", "nsenter", "ip") if shutil.which(t) is None]
    if missing:
        return f"skipped: {', '.join(missing)} not found (util-linux, iproute2)"
    return None


# one run ----------------------------------------------------------------------------------------

Proc = tuple[str, str, float]  # one process of the namespace: its kind (KINDS), its name, its CPU seconds


def _name(p: psutil.Process) -> str:
    """raylet, gcs_server, ray::WorkerActor..., or a Python process by its script (monitor, log_monitor)."""
    with contextlib.suppress(psutil.Error):
        cmd = p.cmdline()
        if cmd and cmd[0].startswith("ray::"):  # Ray's workers rename themselves
            return cmd[0]
        script = next((Path(a).stem for a in cmd[1:] if a.endswith(".py")), None)
        return script or p.name()
    return "?"


def _ns_cpu(cluster: Any, bench_pid: int) -> dict[int, Proc]:
    """Each process of the namespace but the DB server and its helper."""
    try:
        tree = {bench_pid} | {c.pid for c in psutil.Process(bench_pid).children(recursive=True)}
    except psutil.Error:
        tree = {bench_pid}
    out = {}
    for p in cluster.ray_processes():
        with contextlib.suppress(psutil.Error):
            t = p.cpu_times()
            name = _name(p)
            kind = "bench" if p.pid in tree else "actors" if "WorkerActor" in name else "ray"
            out[p.pid] = (kind, name, float(t.user + t.system))
    return out


def _outside(a: tuple[Snapshot, dict[int, Proc]], b: tuple[Snapshot, dict[int, Proc]]) -> dict[str, Any]:
    """The window's CPU, as cores: each kind of the namespace's processes (Ray's own by name, the
    busiest first), the server, the machine."""
    (sa, na), (sb, nb) = a, b
    u = usage(sa, sb)
    cores = dict.fromkeys(KINDS, 0.0)
    ray: dict[str, float] = {}
    for pid, (kind, name, cpu) in nb.items():
        before = na.get(pid)
        if before is not None and "actors" in (kind, before[0]):  # a title read mid-rename still says which
            kind = "actors"
        # a process born inside the window counts from zero; one that exited inside it is lost (none should)
        c = max(0.0, cpu - (before[2] if before else 0.0)) / u.wall_s if u.wall_s > 0 else 0.0
        cores[kind] += c
        if kind == "ray":
            ray[name] = ray.get(name, 0.0) + c
    gone = sum(1 for pid, (kind, _, _) in na.items() if kind == "actors" and pid not in nb)  # should be 0
    top = dict(sorted(((k, round(v, 3)) for k, v in ray.items() if v >= 0.005), key=lambda kv: -kv[1]))
    return {"wall_s": round(u.wall_s, 3), **{f"{k}_cores": round(v, 3) for k, v in cores.items()},
            "ray_cores_by_process": top, "actors_gone": gone,
            "server_cores": None if u.server_cores is None else round(u.server_cores, 3),
            "host_busy_cores": round(u.host_busy_cores, 3),
            "other_cores": round(max(0.0, u.host_busy_cores - sum(cores.values()) - (u.server_cores or 0.0)), 3)}


def per_tx_us(cores: float | None, seconds: float | None, count: int | None) -> float | None:
    """CPU microseconds per transaction from a rate in cores over the run's own measured seconds."""
    if cores is None or not seconds or not count:
        return None
    return cores * seconds / count * 1e6


def figures(doc: dict[str, Any], outside: dict[str, Any] | None) -> dict[str, Any]:
    """One run's figures from its JSON result (and the outside window, when taken)."""
    s = doc["summary"]
    by_process = s.get("client_cpu_by_process") or {}
    own = [v for v in by_process.values() if v is not None]
    own_cores = sum(own) / 100 if own else None
    count, seconds = int(s["count"]), float(s["seconds"])
    out: dict[str, Any] = {
        "tps": s["tps"], "count": count, "seconds": seconds, "p95_ms": s["latency_ms"]["p95"],
        "errors": s["errors"], "workers": doc.get("workers"),
        "cpu_client_pct_of_machine": (s.get("cpu") or {}).get("client"),
        "client_cpu_by_process": by_process, "client_cores": None if own_cores is None else round(own_cores, 3),
        "client_us_per_tx": _r(per_tx_us(own_cores, seconds, count), 2),
        "actors_ready_s": (doc.get("cluster") or {}).get("actors_ready_s"), "outside": outside}
    if outside is not None:
        total = sum(outside[f"{k}_cores"] for k in KINDS)
        out["outside_us_per_tx"] = _r(per_tx_us(total, seconds, count), 2)
        out["ray_processes_us_per_tx"] = _r(per_tx_us(outside["ray_cores"], seconds, count), 2)
    return out


def run_one(cluster: Any, workers: str, src: Path, warmup: int, duration: int, server_pid: int | None,
            workdir: Path) -> dict[str, Any]:
    """One `bench run --workers W` in the namespace. The outside window runs from its `hold` phase
    event to its last `tick` of the hold, not to the `step` event as bench.clients.run_bench_dsl's:
    by then the actors may have exited (a local worker's CPU stays in its parent's children times
    once reaped; an actor's is gone), so the figures are taken at each tick while everything runs."""
    out = workdir / f"ray-{workers}.json"
    out.unlink(missing_ok=True)
    child = Child(cluster._in_ns([*BENCH_CMD, "run", str(src), "--headless", "--workers", workers, "--json",
                                  str(out), "--jsonl", "-"]),
                  workdir / f"ray-{workers}.err", env=cluster.run_env(), cwd=workdir)
    start: tuple[Snapshot, dict[int, Proc]] | None = None
    end: tuple[Snapshot, dict[int, Proc]] | None = None  # the last tick of the hold so far
    done = False
    for line in child.lines(time.monotonic() + warmup + duration + 150):
        if done or not line.startswith("{"):
            continue
        try:
            ev = json.loads(line)
        except json.JSONDecodeError:
            continue
        if ev.get("type") == "phase" and ev.get("phase") == "hold" and start is None:
            start = (snapshot(child.pid, server_pid), _ns_cpu(cluster, child.pid))
        elif ev.get("type") == "tick" and ev.get("phase") == "hold" and start is not None:
            end = (snapshot(child.pid, server_pid), _ns_cpu(cluster, child.pid))
        elif ev.get("type") == "step":
            done = True
    code = child.wait()
    try:
        doc = json.loads(out.read_text())
    except (OSError, json.JSONDecodeError):
        doc = None
    if code != 0 or doc is None or doc.get("summary") is None:
        return {"ok": False, "error": f"bench --workers {workers} exit {code}: {child.stderr_tail()}"}
    return {"ok": True, **figures(doc, _outside(start, end) if start and end else None)}


# the section ------------------------------------------------------------------------------------

def _r(v: float | None, nd: int) -> float | None:
    return None if v is None else round(v, nd)


def summarise(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """`runs`: the pairs' runs in order, each {"side": "ray"|"auto", "ok": ..., figures}. The paired
    ratios ray / auto, each side's medians, and the verdict against the goal."""
    by = {side: [r for r in runs if r["side"] == side] for side in SIDES}
    n = min(len(by["ray"]), len(by["auto"]))

    def each(side: str, key: str) -> list[float | None]:
        return [r.get(key) if r["ok"] else None for r in by[side][:n]]

    ratios = {key: ratio_summary(each("auto", key), each("ray", key))
              for key in ("tps", "client_us_per_tx", "outside_us_per_tx")}
    per_pair = [None if a is None or r is None or not a else round(r / a, 4)
                for r, a in zip(each("ray", "tps"), each("auto", "tps"), strict=True)]
    sides = {}
    for side in SIDES:
        ok = [r for r in by[side] if r["ok"]]

        def med(key: str, nd: int, ok: list[dict[str, Any]] = ok) -> float | None:
            return _r(median([r.get(key) for r in ok]), nd)

        def med_out(key: str, ok: list[dict[str, Any]] = ok) -> float | None:
            return _r(median([(r.get("outside") or {}).get(key) for r in ok]), 3)

        sides[side] = {"runs": len(by[side]), "ok": len(ok), "tps": med("tps", 1), "p95_ms": med("p95_ms", 3),
                       "client_us_per_tx": med("client_us_per_tx", 2), "outside_us_per_tx": med("outside_us_per_tx", 2),
                       "ray_processes_us_per_tx": med("ray_processes_us_per_tx", 2),
                       "workers": max((r["workers"] for r in ok if r.get("workers")), default=None),
                       "actors_ready_s": med("actors_ready_s", 2),
                       "cores": {k: med_out(f"{k}_cores") for k in (*KINDS, "server", "other")},
                       "errors": sum(int(r.get("errors") or 0) for r in ok),
                       "failures": [r["error"] for r in by[side] if not r["ok"]]}
    tps = ratios["tps"]["median"]
    return {"tps_ratio_per_pair": per_pair, "ratios": ratios, "sides": sides,
            "lost_pct": None if tps is None else round(100 * (1 - tps), 2),
            "goal": {"tps_ratio_at_least": GOAL_RATIO, "met": None if tps is None else tps >= GOAL_RATIO}}


AUTOGROUP = Path("/proc/sys/kernel/sched_autogroup_enabled")


@contextlib.contextmanager
def session_groups_off(knob: Path = AUTOGROUP) -> Iterator[str]:
    """The kernel's autogroup (Debian's default) off while the pairs run, and as it was after: what
    the scheduler did, in words. With it on, the cores are shared between sessions first: the
    server's, the run's (its coordinator and worker processes) and the Ray node's, where the actors
    run beside Ray's daemons. On this 2-core machine that split of the cores between server and
    clients, not Ray's calls, decided the ratio: 0.94x with it, 1.04x without it (docs/performance.md).
    On a cluster the client machines are not the server's, and no such split is made."""
    try:
        before = knob.read_text().strip()
    except OSError:
        yield "as the kernel does (no autogroup)"
        return
    if before == "0":
        yield "autogroup off"
        return
    try:
        knob.write_text("0")
    except OSError as exc:
        yield f"autogroup on: it could not be turned off ({exc.strerror})"
        return
    try:
        yield "autogroup off for the pairs (on before, and after)"
    finally:
        knob.write_text(before)


def ray_section(s: Settings, ncpu: int, workdir: Path, log: Log) -> dict[str, Any]:
    """The harness's pairs, warm-up, hold, tables and seed (its --workers does not apply: each side
    sets its own)."""
    pairs, warmup, duration = s.pairs, s.warmup, s.duration
    if (why := skip_reason()) is not None:
        return {"skipped": why}
    from tests.e2e.raycluster import RayCluster

    settings = {"test": TEST, "users": USERS, "pairs": pairs, "warmup": warmup, "duration": duration,
                "tables": s.tables, "table_size": s.table_size, "ray_nodes": 1, "ray_cpus": ncpu,
                "order": "ray, auto, then auto, ray, and so on (the pairs alternate which runs first)"}
    load = {"start": loadavg()}
    src = workdir / "ray-vs-auto.bench"
    src.write_text(scenario(s.tables, s.table_size, warmup, duration, s.seed))
    runs: list[dict[str, Any]] = []
    cluster = RayCluster(nodes=1, cpus=ncpu)
    try:
        cluster.start()
        log(f"ray: one Ray node (--num-cpus={ncpu}) and its server up in a network namespace in "
            f"{cluster.timings['start_s']:.1f}s")
        r = cluster.run([*BENCH_CMD, "prepare", str(src), "--force-prepare"], timeout=1800, cwd=workdir)
        if r.returncode != 0:
            raise RuntimeError(f"bench prepare failed (exit {r.returncode}): {r.stderr[-1500:]}")
        assert cluster.db is not None
        server_pid = next((p.pid for p in psutil.Process(cluster.db.pid).children(recursive=True)
                           if p.name() in ("mariadbd", "mysqld")), None)
        with session_groups_off() as scheduler:
            settings["scheduler"] = scheduler
            log(f"ray: the scheduler: {scheduler}")
            _pairs(cluster, pairs, src, warmup, duration, server_pid, workdir, runs, log)
    finally:
        cluster.close()  # every process of the namespace, by PID, and its files
    load["end"] = loadavg()
    out = {"settings": settings, **summarise(runs), "cluster_timings_s": {k: round(v, 2) for k, v in
                                                                          cluster.timings.items()},
           "loadavg": load, "runs": runs}
    med = out["ratios"]["tps"]["median"]
    log(f"ray / auto at {USERS} users: tps {'-' if med is None else f'{med:.3f}x'} "
        f"(goal >= {GOAL_RATIO}: {'met' if out['goal']['met'] else 'not met'})")
    return out


def _pairs(cluster: Any, pairs: int, src: Path, warmup: int, duration: int, server_pid: int | None, workdir: Path,
           runs: list[dict[str, Any]], log: Log) -> None:
    """The pairs, their runs appended to `runs` as ray, auto."""
    for i in range(pairs):
        line = []
        pair: dict[str, dict[str, Any]] = {}
        # every other pair the other way round (ray auto, auto ray, ...): a drift of the machine
        # over the section (the server's caches, a neighbour's load) falls on both sides alike
        for side in (SIDES if i % 2 == 0 else SIDES[::-1]):
            run = pair[side] = {"side": side, **run_one(cluster, side, src, warmup, duration, server_pid, workdir)}
            line.append(f"{side} FAILED ({run['error'].splitlines()[0][:120]})" if not run["ok"] else
                        f"{side} {run['tps']:,.0f} tps {run['client_us_per_tx'] or 0:.0f} us/tx")
        runs += [pair[side] for side in SIDES]  # each pair as ray, auto: summarise() takes them so
        ray, auto = pair["ray"], pair["auto"]
        ratio = f" -> {ray['tps'] / auto['tps']:.3f}x" if ray["ok"] and auto["ok"] and auto["tps"] else ""
        log(f"ray {USERS} users, pair {i + 1}/{pairs}: {' | '.join(line)}{ratio}")


def ray_estimate_s(pairs: int, warmup: int, duration: int) -> float:
    """Start (~10-15 s), prepare, and each run's start-up beside its measured time (Ray's actors ~3 s)."""
    return 30 + pairs * 2 * (warmup + duration + 6)


# the page ---------------------------------------------------------------------------------------

def _n(v: float | None, nd: int = 0) -> str:
    return "-" if v is None else f"{v:,.{nd}f}"


def _x(r: dict[str, Any]) -> str:
    if r.get("median") is None:
        return "-"
    spread = f" ({r['min']:.3f}-{r['max']:.3f})" if r.get("pairs", 0) > 1 else ""
    return f"**{r['median']:.3f}x**{spread}"


def ray_table(sec: dict[str, Any]) -> str:
    st, sides, ratios = sec["settings"], sec["sides"], sec["ratios"]
    goal = sec["goal"]
    mark = "-" if goal["met"] is None else ("met ✓" if goal["met"] else "not met ✗")
    lines = [f"{st['test']}, {st['users']} users, {st['pairs']} pair(s) run ray, auto, then auto, ray ... of "
             f"{st['warmup']} s warm-up + {st['duration']} s hold, on one Ray node of this machine "
             f"(--num-cpus={st['ray_cpus']}) in a network namespace with its own server (both sides reach it the "
             "same way). Ratios: ray / auto per pair, median (range). Client CPU per transaction: bench-dsl's own "
             "figures (its result's client_cpu_by_process), and from the outside with Ray's other processes "
             "(raylet, GCS, ...) added."
             + (f" Scheduler: {st['scheduler']}." if st.get("scheduler") else "") + "\n",
             "| --workers | processes / actors | tps | p95 ms | client µs / tx (own) | "
             "client µs / tx (+ Ray's processes) | Ray's processes µs / tx | server cores | others' cores |",
             "|---|--:|--:|--:|--:|--:|--:|--:|--:|"]
    for side in SIDES:
        s = sides[side]
        lines.append(f"| {side} | {s['workers'] or '-'} | {_n(s['tps'])} | {_n(s['p95_ms'], 2)} | "
                     f"{_n(s['client_us_per_tx'], 1)} | {_n(s['outside_us_per_tx'], 1)} | "
                     f"{_n(s['ray_processes_us_per_tx'], 1)} | {_n(s['cores']['server'], 2)} | "
                     f"{_n(s['cores']['other'], 2)} |")
    lines.append(f"| **ray / auto** | | {_x(ratios['tps'])} | | {_x(ratios['client_us_per_tx'])} | "
                 f"{_x(ratios['outside_us_per_tx'])} | | | |")
    per_pair = ", ".join("-" if v is None else f"{v:.3f}" for v in sec["tps_ratio_per_pair"])
    lost = sec["lost_pct"]
    said = "-" if lost is None else f"{lost:.1f}%" if lost > 0 else f"none (ray ran {-lost:.1f}% faster)"
    lines.append(f"\nThroughput lost to Ray: {said} (goal: under "
                 f"{100 * (1 - goal['tps_ratio_at_least']):.0f}%): **{mark}**. Per pair: {per_pair}. Load average "
                 f"{sec['loadavg']['start']} at the start, {sec['loadavg']['end']} at the end.")
    failures = [f for side in SIDES for f in sides[side]["failures"]]
    if failures:
        lines.append(f"\n{len(failures)} failed run(s): {failures[0][:300]}")
    return "\n".join(lines)
