"""`make bench`'s coordinator section (issue 39, 4): the coordinator toward a thousand workers,
with no database and no worker process. The run's own code from the scheduler to the result
document (bench_dsl.engine.runner.Run.measure: the scheduler, WorkerFleet's collect and merge, the
tally, the judge and its stop conditions, the document built from the events) drives a fleet of
simulated workers: WorkerFleet with a transport of its own (`SimFleet._send`) that answers each
'report' with a JSON line as a worker process writes it (WorkerReport.to_wire of HDR histograms
recorded from several transaction types' latency spreads, its CPU, lag samples and quiet spans),
after a round trip of its simulated node. Decoding that line (json.loads) is the coordinator's
share of a call, as ProcessFleet's reader does; what Ray itself adds per call is not in it.

At 10, 100 and 1,000 workers, each tick's coordinator CPU (time.process_time: the simulated
workers' lines are built before the run, only their clock stamp is put in on delivery) is split
into the calls (asking, the answers arriving and decoded), the merge (WorkerReport.from_wire and
merge_wire) and the tally (the tick folded into interval, step and run, the judge, the events and
the document), and each tick's lateness: how long after the moment it was due its figures were
merged and judged. The goal: 1,000 workers merged within a 1 s tick, on less than 25% of one core.

What a Ray fleet's calls cost the coordinator is measured apart (`ray_calls`, in a child process):
a Ray cluster of two nodes started for it on this machine, actors that answer a recorded report,
RayFleet's own collect, and the driver's process CPU per tick, Ray's own threads in it: each actor
called (the way before relays) or one call per node to its relay, as a function of actors and
nodes, extrapolated to 1,000 actors."""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any
from unittest import mock

from bench.compare import Log
from bench.host import loadavg
from bench_dsl.core.aio import run_loop

WORKERS = (10, 100, 1000)
TICKS = 20
USERS_PER_WORKER = 8
NODES = 8  # the simulated workers alternate over this many nodes, each with its own round trip
VARIANTS = 3  # reports each simulated worker takes turns with, so that its histograms change from tick to tick
GOAL_CPU_PCT = 25.0
# transaction: (per worker per second, median latency µs, log-normal sigma): what a worker of
# sysbench's oltp_read_write-like mix records in a second, spreads wide enough to fill many buckets
MIX = {"point_select": (1500, 300, 0.6), "range": (200, 1500, 0.8), "update": (300, 4000, 1.0),
       "insert": (100, 6000, 1.2)}
STAMP = '"@at@"'  # where a report's clock reading goes: its worker's take, on delivery


def scenario_text(users: int, ticks: int) -> str:
    mix = " ".join(f'transaction {t} {{ query "SELECT 1" }}' for t in MIX)
    # conditions the judge evaluates at every tick and that never fire here
    return (f'scenario "coordinator" {{ seed 1  workload custom {{ {mix} }}\n'
            f"users {users}  duration {ticks}s\n"
            "stop when { p99 > 60s for 3s  error_rate > 90% for 3s  stall > 30s }\n}\n")


def recorded_reports(workers: int, seed: int) -> tuple[list[list[str]], list[list[int]]]:
    """Each worker's report lines, `VARIANTS` of them, as a worker process writes them (its name in
    its figures, its histograms drawn from MIX, STAMP where its take's time goes), and the
    transactions each line counts."""
    from bench_dsl.fleet.base import Health, ProcessFigures, WorkerReport
    from bench_dsl.measure.txstats import TxStats
    from bench_dsl.measure.stalls import Quiet

    rng = random.Random(seed)
    shapes = []
    for _ in range(8):  # recorded once, shared out: recording 1,000 workers' values takes minutes in Python
        tx = {}
        for name, (n, median_us, sigma) in MIX.items():
            st = TxStats()
            n = int(n * rng.uniform(0.8, 1.2))
            total = 0
            for _ in range(n):
                v = max(1, int(rng.lognormvariate(0.0, sigma) * median_us))
                st.hist.record_value(v)
                total += v
            st.count = st.queries = n
            st.total_us = total
            if rng.random() < 0.3:
                st.errors[1213] = rng.randint(1, 3)
            tx[name] = st
        shapes.append({k: st.to_wire() for k, st in tx.items()})
    out, counts = [], []
    for i in range(workers):
        name, node = f"worker {i + 1}", i % NODES
        lines, counted = [], []
        for v in range(VARIANTS):
            figures = ProcessFigures(0.8, 1.0, {"loop": [rng.uniform(0, 2) for _ in range(4)],
                                                "thread": [rng.uniform(0, 2) for _ in range(4)]},
                                     f"node-{node}", 16, rng.uniform(30, 90))
            health = Health(0, 0.0, None, {1213: "Deadlock found"}, ("libmariadb",), USERS_PER_WORKER)
            wire = WorkerReport({}, health, USERS_PER_WORKER, [Quiet((), 0.0, 0.0)], {name: figures}).to_wire()
            wire["tx"] = shapes[(i + v) % len(shapes)]
            wire["quiet"] = [[[], "@at@", "@at@", [], None]]
            lines.append(json.dumps({"op": "report", "id": 0, **wire}, separators=(",", ":")))
            counted.append(sum(int(st["count"]) for st in wire["tx"].values()))
        out.append(lines)
        counts.append(counted)
    return out, counts


def _fleet_class() -> type:
    from bench_dsl.fleet.coordinator import WorkerFleet, WorkerHandle

    class SimFleet(WorkerFleet):
        """WorkerFleet's collect and merge over workers simulated in this process: each answers a
        report with its recorded line after its node's round trip; the CPU of each part of a tick
        is noted."""

        kind = "simulated"

        def __init__(self, sc: Any, names: tuple[str, ...], lines: list[list[str]], counts: list[list[int]],
                     rtt_s: list[float], decoded: bool = False) -> None:
            super().__init__(sc, None, names, len(lines), lambda text, level: None)  # type: ignore[arg-type]
            self.procs = [WorkerHandle(i) for i in range(len(lines))]
            self.lines, self.counts, self.rtt_s = lines, counts, rtt_s
            self.decoded = decoded  # merged as before hdrwire: each report decoded, then merged
            self.sent: list[int] = []  # the transactions each collect's answers counted
            self.turn = 0
            self.asked: list[float] = []  # monotonic, each collect's
            self.collected: list[float] = []
            self.cpu_calls: list[float] = []  # process CPU s, each collect's
            self.cpu_merge: list[float] = []
            self.cpu_decode: list[float] = []  # of the calls: the answers' JSON decoded
            self._decode_s = 0.0
            self.cpu_tally: list[float] = []  # from a collect's end to the next one's start
            self._merge_s = 0.0
            self._ended: float | None = None

        async def start(self) -> None:
            pass

        def _send(self, p: Any, msg: dict[str, Any]) -> asyncio.Future[dict[str, Any]]:
            msg = self._next(msg)
            loop = asyncio.get_running_loop()
            fut: asyncio.Future[dict[str, Any]] = loop.create_future()
            if msg["op"] in ("report", "stop"):
                line = self.lines[p.index][self.turn % VARIANTS]
                loop.call_later(self.rtt_s[p.index], self._deliver, p, fut, line)
            else:
                answer = {"op": msg["op"], "id": msg["id"]}
                if msg["op"] == "users":
                    answer["active"] = msg["n"]
                fut.set_result(self._answered(p, answer))
            return fut

        def _deliver(self, p: Any, fut: asyncio.Future[dict[str, Any]], line: str) -> None:
            if not fut.done():
                c0 = time.process_time()
                reply = json.loads(line.replace(STAMP, repr(time.monotonic())))
                self._decode_s += time.process_time() - c0
                fut.set_result(self._answered(p, reply))

        def _merge(self, replies: list[dict[str, Any]], orphaned: Any = None) -> Any:
            c0 = time.process_time()
            try:
                if self.decoded:
                    from bench_dsl.fleet.base import Health, WorkerReport, own_figures

                    mine = WorkerReport({}, Health(0, float("inf"), None, {}), 0, [],
                                        {"coordinator": own_figures(self.cpu, {})})
                    mine.arrivals = orphaned
                    report = WorkerReport.merge([mine, *(WorkerReport.from_wire(r) for r in replies)], self.names)
                    self._last_health = report.health
                    return report
                return super()._merge(replies, orphaned)
            finally:
                self._merge_s = time.process_time() - c0

        async def collect(self) -> Any:
            c0 = time.process_time()
            if self._ended is not None:
                self.cpu_tally.append(c0 - self._ended)
            self.asked.append(time.monotonic())
            self.turn += 1
            self._decode_s = 0.0
            self.sent.append(sum(c[self.turn % VARIANTS] for c in self.counts))
            report = await super().collect()
            self.collected.append(time.monotonic())
            end = time.process_time()
            self.cpu_calls.append(end - c0 - self._merge_s)
            self.cpu_merge.append(self._merge_s)
            self.cpu_decode.append(self._decode_s)
            self._ended = end
            return report

    return SimFleet


class _Cpu:
    """The server's CPU, which the coordinator would sample: nothing to see here."""

    def sample(self) -> dict[str, float | None]:
        return {"server": None, "host": None}


async def one_size(workers: int, ticks: int, seed: int, second: float = 1.0, before: bool = False) -> dict[str, Any]:
    """`second`: how long a second of the plan lasts (a test's harness runs faster); `before`: the
    coordinator as it was before issue 39 (each report decoded, then merged; the collector's
    passes over the whole heap), for a reference in the same run."""
    from bench_dsl.engine import events as ev
    from bench_dsl.engine.plan import plan
    from bench_dsl.engine.runner import Run
    from bench_dsl.engine.scenario_file import load
    from bench_dsl.results.document import ResultDocument

    lines, counts = recorded_reports(workers, seed)
    rng = random.Random(seed)
    node_rtt = [rng.uniform(0.0005, 0.004) for _ in range(NODES)]  # a LAN's round trips
    rtt = [node_rtt[i % NODES] + rng.uniform(0, 0.002) for i in range(workers)]
    with tempfile.TemporaryDirectory(prefix="bench-coordinator-") as tmp:
        path = Path(tmp) / "coordinator.bench"
        path.write_text(scenario_text(workers * USERS_PER_WORKER, ticks))
        sc = load(str(path))
    ticked: list[float] = []
    doc = ResultDocument()

    class Sink:
        def emit(self, event: ev.Event) -> None:
            if isinstance(event, ev.LiveTick):
                ticked.append(time.monotonic())
            doc.apply(event)

        def close(self) -> None:
            pass

    run = Run(sc, plan(sc), [Sink()])
    run.scheduler.second = second
    fleet = _fleet_class()(run.sc, run.names, lines, counts, rtt, decoded=before)
    run.publish(ev.Begin("bench", "now", ev.ScenarioInfo(sc.name), ev.Machine.from_json({})))
    wall0, cpu0 = time.monotonic(), time.process_time()
    with mock.patch("gc.freeze") if before else contextlib.nullcontext():
        await run.measure(fleet, _Cpu())  # type: ignore[arg-type]
    run.finish()
    wall, cpu = time.monotonic() - wall0, time.process_time() - cpu0
    # one phase: its clock starts as its first collect (before any tick) ends; tick k is due k
    # seconds later (bench_dsl.engine.scheduler)
    start, second = fleet.collected[0], run.scheduler.second
    late = [t - (start + k * second) for k, t in enumerate(ticked, 1)]
    asked_late = [t - (start + k * second) for k, t in enumerate(fleet.asked[1:len(ticked) + 1], 1)]
    calls, merge, tally = fleet.cpu_calls[1:len(ticked) + 1], fleet.cpu_merge[1:len(ticked) + 1], fleet.cpu_tally
    per_tick = [a + b + c for a, b, c in zip(calls, merge, tally, strict=False)]
    summary = doc.doc.get("summary") or {}
    return {
        "workers": workers, "before": before, "users": workers * USERS_PER_WORKER, "ticks": len(ticked),
        # what the document counted, and what the ticks' answers did (the phase's first collect is
        # before anything is measured, the stop's after)
        "transactions": summary.get("count"), "sent": sum(fleet.sent[1:len(ticked) + 1]),
        "status": doc.doc.get("status"), "stop": doc.doc.get("stop"),
        "cpu_ms_per_tick": _ms(per_tick), "calls_ms": _ms(calls), "merge_ms": _ms(merge), "tally_ms": _ms(tally),
        "decode_ms": _ms(fleet.cpu_decode[1:len(ticked) + 1]),
        "cpu_pct_of_core": round(100 * statistics.median(per_tick) / second, 1) if per_tick else None,
        "cpu_pct_whole_run": round(100 * cpu / wall, 1),
        "tick_late_ms": _ms(late), "ask_late_ms": _ms(asked_late),
        "reply_bytes": round(statistics.mean(len(s) for ls in lines for s in ls)),
    }


RAY_ACTORS = 32  # started once, on RAY_NODES nodes of this machine; each row asks a subset of them
RAY_NODES = 2
RAY_ROWS = ((8, 1), (8, 2), (16, 2), (32, 1), (32, 2), (32, 4))  # (actors, relays): the new way's rows
RAY_ROUNDS = 40
RAY_PASSES = 2


def _ray_fleet(ray: Any, handles: list[Any], node_of: list[str], relays: int) -> Any:
    """RayFleet's own collect over `handles` (each answers a report with a recorded one), its merge
    left out (the table measures it): through `relays` relay actors (bench_dsl.fleet.ray_actor's,
    each on the node of the first actor it carries), or 0: each actor called, the way before relays."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    from bench_dsl.fleet.ray import RayFleet, _Actor
    from bench_dsl.fleet.ray_actor import RelayActor
    from bench_dsl.language.model import Scenario

    class Calls(RayFleet):
        def _merge(self, replies: list[dict[str, Any]], orphaned: Any = None) -> Any:
            return None

    sc = Scenario.__new__(Scenario)
    object.__setattr__(sc, "seed", 1)
    fleet = Calls(sc, None, tuple(MIX), len(handles), len(handles), None, lambda text, level: None)  # type: ignore[arg-type]
    fleet.ray = ray
    # a relay's group stands for a node: the coordinator's cost is per call, wherever the relay runs
    groups = [f"group-{i % relays}" if relays else node_of[i] for i in range(len(handles))]
    for i, (h, g) in enumerate(zip(handles, groups, strict=True)):
        p = _Actor(i, g, "localhost")
        p.actor = h
        fleet.procs.append(p)
    remote = ray.remote(RelayActor)
    for g in dict.fromkeys(groups) if relays else ():
        first = groups.index(g)
        fleet.relays[g] = remote.options(
            num_cpus=0, max_concurrency=1000,
            scheduling_strategy=NodeAffinitySchedulingStrategy(node_of[first], soft=False)).remote(
            {i: h for i, h in enumerate(handles) if groups[i] == g})
    return fleet


def ray_calls(rows: tuple[tuple[int, int], ...] = RAY_ROWS, rounds: int = RAY_ROUNDS) -> dict[str, Any]:
    """The coordinator's CPU per tick of a Ray fleet: RAY_ACTORS actors on a Ray cluster of RAY_NODES
    nodes started here (and stopped at the end), each answering a report with a recorded one; each
    row's `rounds` collects through RayFleet's own code (time.process_time, its merge left out,
    Ray's threads in it, the driver's idle CPU taken out), each actor called (the old way) or one
    relay call per node (the new). Runs in the process it is called in: call it in a child (main)."""
    import os
    import pickle

    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    import ray
    from ray.cluster_utils import Cluster
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    actors = max(n for n, _ in rows)
    lines = [ls[0] for ls in recorded_reports(actors, 1)[0]]

    class Answers:
        def __init__(self, line: str) -> None:
            self.line = line

        async def ask(self, msg: dict[str, Any]) -> dict[str, Any]:
            if msg["op"] == "go":  # an answer with nothing in it: the payload's share, by difference
                return {"op": "go", "id": msg["id"]}
            return {**json.loads(self.line.replace(STAMP, repr(time.monotonic()))), "op": msg["op"], "id": msg["id"]}

    t0 = time.monotonic()
    store = 80 * 1024 * 1024  # Ray's floor is 75 MiB: nothing big goes through it
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "object_store_memory": store,
                                                            "include_dashboard": False})
    try:
        for _ in range(RAY_NODES - 1):
            cluster.add_node(num_cpus=1, object_store_memory=store)
        ray.init(address=cluster.address, log_to_driver=False, configure_logging=False)
        nodes = [n["NodeID"] for n in ray.nodes() if n.get("Alive")]
        remote = ray.remote(Answers)
        node_of = [nodes[i % len(nodes)] for i in range(actors)]
        handles: list[Any] = [remote.options(num_cpus=0, max_concurrency=1000,
                                             scheduling_strategy=NodeAffinitySchedulingStrategy(node_of[i], soft=False))
                              .remote(lines[i]) for i in range(actors)]
        ray.get([h.ask.remote({"op": "report", "id": 0}) for h in handles])  # every actor up

        async def raw(relay: Any, n: int, op: str) -> float:
            msgs = pickle.dumps({i: {"op": op, "id": 0} for i in range(n)})
            pickle.loads(await relay.ask.remote(msgs))
            c0, w0 = time.process_time(), time.monotonic()
            for _ in range(rounds):
                pickle.loads(await relay.ask.remote(msgs))
            return (time.process_time() - c0 - idle * (time.monotonic() - w0)) / rounds

        async def ticks(fleet: Any) -> float:
            for _ in range(3):  # the relays up, Ray's paths warm
                await fleet.collect()
            passes = []
            for _ in range(RAY_PASSES):
                c0, w0 = time.process_time(), time.monotonic()
                for _ in range(rounds):
                    await fleet.collect()
                passes.append((time.process_time() - c0 - idle * (time.monotonic() - w0)) / rounds)
            return min(passes)  # what the machine's other work added to this process's CPU is least there

        c0 = time.process_time()
        time.sleep(1.0)
        idle = time.process_time() - c0  # Ray's threads in the driver, a second of nothing asked
        out, payload = [], {}
        for n, relays in sorted({(n, 0) for n, _ in rows} | set(rows)):
            fleet = _ray_fleet(ray, handles[:n], node_of[:n], relays)
            cpu = asyncio.run(ticks(fleet))
            out.append({"actors": n, "relays": relays, "cpu_ms_per_tick": round(1e3 * cpu, 3),
                        "calls_per_tick": round(sum(fleet.calls.values()) / fleet.collects, 2)})
            if relays == 1 and n == actors:  # the relay's call alone, with the reports and without
                relay = next(iter(fleet.relays.values()))
                payload = {op: asyncio.run(raw(relay, n, op)) for op in ("report", "go")}
            for r in fleet.relays.values():
                ray.kill(r)
        reply = ray.get(handles[0].ask.remote({"op": "report", "id": 0}))
    finally:
        ray.shutdown()
        cluster.shutdown()
    blob = pickle.dumps(reply, protocol=5)
    d0 = time.process_time()
    for _ in range(1000):  # the payload's share: what Ray's deserializing a report costs, apart
        pickle.loads(blob)
    decode_us = (time.process_time() - d0) * 1e3
    return {"actors": actors, "nodes": RAY_NODES, "rounds": rounds, "rows": out, "fit": _fit(out),
            "decode_us_per_report": round(decode_us, 1), "reply_bytes": len(blob),
            "relay_call_ms": {op: round(1e3 * v, 3) for op, v in payload.items()},
            "payload_us_per_report": round(1e6 * (payload["report"] - payload["go"]) / actors, 1) if payload else None,
            "driver_idle_pct": round(100 * idle, 2), "seconds": round(time.monotonic() - t0, 1)}


def _fit(rows: list[dict[str, Any]]) -> dict[str, float]:
    """CPU per tick as a function of actors and nodes (relays), least squares: the old way a cost per
    actor (µs); the new a cost per node and one per actor."""
    old = [r for r in rows if not r["relays"]]
    per_actor_old = sum(r["cpu_ms_per_tick"] for r in old) / sum(r["actors"] for r in old)
    new = [(r["relays"], r["actors"], r["cpu_ms_per_tick"]) for r in rows if r["relays"]]
    skk, snn, skn = (sum(k * k for k, _, _ in new), sum(n * n for _, n, _ in new), sum(k * n for k, n, _ in new))
    sky, sny = sum(k * y for k, _, y in new), sum(n * y for _, n, y in new)
    det = skk * snn - skn * skn
    per_node, per_actor = (sky * snn - sny * skn) / det, (skk * sny - skn * sky) / det
    return {"old_us_per_actor": round(1e3 * per_actor_old, 1), "new_us_per_node": round(1e3 * per_node, 1),
            "new_us_per_actor": round(1e3 * per_actor, 1)}


def ray_tick_ms(fit: dict[str, float], actors: int, nodes: int | None = None) -> float:
    """The fit's coordinator CPU per tick (ms) for `actors` actors, on `nodes` nodes (None: the old way)."""
    if nodes is None:
        return actors * fit["old_us_per_actor"] / 1e3
    return (nodes * fit["new_us_per_node"] + actors * fit["new_us_per_actor"]) / 1e3


def ray_section(log: Log) -> dict[str, Any]:
    """ray_calls in a child process, so that Ray's driver and its node end with it."""
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-m", "bench.coordinator"], capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        why = (r.stderr.strip().splitlines() or ["?"])[-1]
        log(f"coordinator: Ray's calls not measured: {why}")
        return {"error": why}
    # Ray's raylets print their warnings to the driver's stdout too: the result is the line that is JSON
    out: dict[str, Any] = json.loads(next(ln for ln in reversed(r.stdout.splitlines()) if ln.startswith('{"actors"')))
    fit = out["fit"]
    log(f"coordinator: a Ray fleet's tick costs it {fit['old_us_per_actor']} µs of CPU per actor each called, "
        f"{fit['new_us_per_node']} µs per node + {fit['new_us_per_actor']} µs per actor through relays: "
        f"1,000 actors on 32 nodes {ray_tick_ms(fit, 1000):.0f} -> {ray_tick_ms(fit, 1000, 32):.0f} ms a tick")
    return out


def _ms(values: list[float]) -> dict[str, float | None]:
    if not values:
        return {"median": None, "max": None}
    return {"median": round(1000 * statistics.median(values), 2), "max": round(1000 * max(values), 2)}


def coordinator_section(sizes: tuple[int, ...], ticks: int, seed: int, log: Log, before: bool = True,
                        with_ray: bool = True) -> dict[str, Any]:
    rows = []
    load = loadavg()
    for n in sizes:
        t0 = time.monotonic()
        row = run_loop(one_size(n, ticks, seed))  # the loop `bench run` runs on
        rows.append(row)
        log(f"coordinator at {n} workers: {row['cpu_ms_per_tick']['median']} ms CPU a tick "
            f"({row['cpu_pct_of_core']}% of a core: calls {row['calls_ms']['median']}, merge "
            f"{row['merge_ms']['median']}, tally {row['tally_ms']['median']} ms), ticks late "
            f"{row['tick_late_ms']['median']} ms (max {row['tick_late_ms']['max']}) [{time.monotonic() - t0:.0f}s]")
    if before and sizes:  # the largest again, merged as before: the gain in the same run
        rows.append(run_loop(one_size(max(sizes), ticks, seed, before=True)))
        r = rows[-1]
        log(f"coordinator at {r['workers']} workers as before: {r['cpu_ms_per_tick']['median']} ms CPU a tick "
            f"(merge {r['merge_ms']['median']}, tally {r['tally_ms']['median']} ms)")
    ray: dict[str, Any] = ray_section(log) if with_ray else {"skipped": "not asked"}
    big = next((r for r in rows if r["workers"] == 1000 and not r["before"]), None)
    if "fit" in ray and big is not None and big["merge_ms"]["median"] is not None:
        # a Ray fleet of 1,000 actors: its calls (the fit), the table's merge, tally and judge
        rest = big["merge_ms"]["median"] + big["tally_ms"]["median"]
        ray["at_1000"] = {str(k): {"calls_ms": round(ray_tick_ms(ray["fit"], 1000, k), 1),
                                   "cpu_pct_of_core": round((ray_tick_ms(ray["fit"], 1000, k) + rest) / 10, 1)}
                          for k in (None, 8, 32, 125)}
    cpu_met = None if big is None or big["cpu_pct_of_core"] is None else big["cpu_pct_of_core"] < GOAL_CPU_PCT
    in_tick = None if big is None or big["tick_late_ms"]["max"] is None else big["tick_late_ms"]["max"] < 1000
    met = None if cpu_met is None or in_tick is None else cpu_met and in_tick
    return {"settings": {"ticks": ticks, "users_per_worker": USERS_PER_WORKER, "nodes": NODES,
                         "transactions": list(MIX), "seed": seed},
            "loadavg": {"start": load, "end": loadavg()}, "rows": rows, "ray_calls": ray,
            "goal": {"workers": 1000, "cpu_pct_of_core_below": GOAL_CPU_PCT, "late_ms_below": 1000, "met": met,
                     "cpu_met": cpu_met, "within_tick": in_tick}}


def coordinator_table(sec: dict[str, Any]) -> str:
    st, goal = sec["settings"], sec["goal"]
    mark = "-" if goal["met"] is None else ("met ✓" if goal["met"] else "not met ✗")
    lines = [f"Simulated workers (no database), {st['ticks']} ticks of 1 s each, {len(st['transactions'])} "
             f"transaction types' HDR histograms per report, {st['users_per_worker']} users per worker, "
             f"{st['nodes']} nodes' round trips: the run's own scheduler, collect and merge, tally and judge. CPU: "
             "the coordinator's process CPU per tick, median (max); late: how long after its due moment a tick "
             "was merged and judged.\n",
             "| workers | CPU ms / tick | % of a core | calls ms (of which JSON) | merge ms | tally + judge ms | "
             "tick late ms | report bytes |", "|--:|--:|--:|--:|--:|--:|--:|--:|"]
    for r in sec["rows"]:
        c, late = r["cpu_ms_per_tick"], r["tick_late_ms"]
        workers = f"{r['workers']:,}" + (", merged as before" if r.get("before") else "")
        lines.append(f"| {workers} | {c['median']} ({c['max']}) | {r['cpu_pct_of_core']} | "
                     f"{r['calls_ms']['median']} ({r['decode_ms']['median']}) | {r['merge_ms']['median']} | "
                     f"{r['tally_ms']['median']} | "
                     f"{late['median']} ({late['max']}) | {r['reply_bytes']:,} |")
    parts = "" if goal.get("cpu_met") is None else (
        f" (CPU: {'met' if goal['cpu_met'] else 'not met'}; every tick merged within its second: "
        f"{'yes' if goal['within_tick'] else 'no'})")
    lines.append(f"\nGoal: 1,000 workers merged within a 1 s tick on less than {goal['cpu_pct_of_core_below']:g}% "
                 f"of one core: **{mark}**{parts}. The row merged as before: each report decoded into histograms "
                 "of its own and merged, the collector's passes over the whole heap (gc.freeze undone). Load "
                 f"average {sec['loadavg']['start']} at the start, "
                 f"{sec['loadavg']['end']} at the end: a tick's lateness is the machine's as much as the "
                 "coordinator's, its CPU much less so.")
    ray = sec.get("ray_calls") or {}
    if "fit" in ray:
        lines.append(ray_table(ray))
    elif ray:
        lines.append(f"\nRay's calls: {ray.get('error') or ray.get('skipped')}.")
    return "\n".join(lines)


def ray_table(ray: dict[str, Any]) -> str:
    fit = ray["fit"]
    lines = [f"\nRay's calls, not in the table above: the coordinator's CPU per tick of RayFleet's collect (its merge "
             f"left out) over actors answering a recorded report, on a Ray cluster of {ray['nodes']} nodes of this "
             f"machine, {ray['rounds']} ticks a row, the driver's idle CPU ({ray['driver_idle_pct']}% of a core) "
             "taken out. Each actor called (before), or one call per node to its relay (after; a relay stands "
             "for a node: the coordinator's cost is per call, wherever it runs).\n",
             "| actors | relays (nodes) | calls a tick | CPU ms / tick | µs / actor |", "|--:|--:|--:|--:|--:|"]
    for r in ray["rows"]:
        lines.append(f"| {r['actors']} | {r['relays'] or 'none: each actor called'} | {r['calls_per_tick']:g} | "
                     f"{r['cpu_ms_per_tick']} | {1e3 * r['cpu_ms_per_tick'] / r['actors']:.0f} |")
    at = {k: ray_tick_ms(fit, 1000, k) for k in (8, 32, 125)}
    lines.append(f"\nFitted: before, **{fit['old_us_per_actor']:g} µs per actor** a tick; after, "
                 f"**{fit['new_us_per_node']:g} µs per node + {fit['new_us_per_actor']:g} µs per actor** "
                 f"(the reports' way through Ray: {ray['payload_us_per_report']:g} µs each, by the difference of "
                 f"a relay call with them and without; a report of {ray['reply_bytes']:,} bytes unpickled: "
                 f"{ray['decode_us_per_report']:g} µs). "
                 "At 1,000 actors: "
                 + ", ".join(f"{k} nodes {ms:.0f} ms ({ms / 10:.1f}% of a core)" for k, ms in at.items())
                 + f", against {ray_tick_ms(fit, 1000):.0f} ms ({ray_tick_ms(fit, 1000) / 10:.1f}%) each actor called.")
    if "at_1000" in ray:
        whole = ray["at_1000"]
        lines.append("With the merge, tally and judge of the table's 1,000 workers, a Ray fleet of 1,000 actors takes "
                     + ", ".join(f"{v['cpu_pct_of_core']}% of a core on {k} nodes"
                                 for k, v in whole.items() if k != "None")
                     + f" (goal: less than {GOAL_CPU_PCT:g}%), against {whole['None']['cpu_pct_of_core']}% each actor "
                     "called.")
    return "\n".join(lines)


if __name__ == "__main__":
    print(json.dumps(ray_calls()))
