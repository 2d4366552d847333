"""`workers ray`: the users run in Ray actors on a real two-node cluster (tests/e2e/raycluster.py), in
a network namespace with its own throwaway server, and measure what local worker processes measure.

One cluster for the module (some 10 s to start, 2 s to stop); the file runs whole in one xdist
process, in this order. The last two tests kill a node's raylet, which cannot be restarted: the
first of them kills node 2 (the run fails) and starts node 3 at once, so that the second (`on worker
loss continue`) finds two live nodes again and kills node 3. The runs use the installed `bench`, as
a user does, from a directory of their own (an actor's sys.path holds the driver's cwd)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import psutil
import pytest

from bench_dsl.core.dsn import parse_dsn
from bench_dsl.core.errors import ExitCode
from bench_dsl.engine import events as ev
from bench_dsl.results.stream import read_stream
from tests.conftest import ROOT
from tests.e2e.raycluster import BENCH, RayCluster
from tests.fixtures.replay import screen_text
from tests.ui.test_tui_app import replayed

pytestmark = pytest.mark.slow

ANSI = re.compile(r"\x1b\[[0-9;]*m")
CPP_LOG = re.compile(r"\[\d{4}-\d\d-\d\d [\d:,]+ [DIWEF] \d+ \d+\] \S+\.cc:\d+:")
SCHEMA = json.loads(resources.files("bench_dsl.results.schema").joinpath("result-v1.json").read_text())

# Users that wait on the server rather than keep both cores busy: the suite runs beside this module
# (the issue's own example, below, is the run at full speed)
RAMP = """
scenario "on ray" {
  target env("BENCH_DSN")
  workers ray
  workload custom { transaction nap { query "SELECT SLEEP(0.01)" } }
  ramp step { start 2 users  step +2 users  settle 1s  hold 2s  max 6 users }
  report every 1s
}
"""

# Every transaction sleeps 20 ms on the server: whatever runs the users, 4 users make ~195 tps with
# a median latency just above 20 ms (tests/engine/test_workers.py). CPU-bound figures would differ
# between the two ways of running on a 2-core machine; these may not.
SLEEPER = """
scenario "sleeper" {{
  target env("BENCH_DSN")
  workload custom {{
    transaction nap {{ query "SELECT SLEEP(0.02)" }}
  }}
  users 4
  warmup 1s
  duration {duration}
  report every 1s
  {extra}
}}
"""

RATE = """
scenario "paced" {
  target env("BENCH_DSN")
  workers ray
  workload custom { transaction nap { query "SELECT SLEEP(0.005)" } }
  rate 100 tps
  # a queue: an arrival that finds the 4 users of its actor busy (a 5 ms sleep answered 80 ms late on a
  # machine the suite keeps busy: 7 dropped once) waits for one, as the rate asked is what is held here
  users max 8 queue
  warmup 1s
  duration 2s
  report every 1s
}
"""


def test_without_a_ray_node_it_can_reach_the_run_says_how_to_start_one(dsn_url: str, tmp_path: Path) -> None:
    """The coordinator joins a cluster through a Ray node of its own machine and network namespace:
    the suite's clusters run in namespaces of their own, so none is reachable from here."""
    f = tmp_path / "c.bench"
    f.write_text(SLEEPER.format(duration="2s", extra="workers ray"))
    r = subprocess.run([BENCH, "run", str(f), "--headless", "--json", str(tmp_path / "r.json"),
                        "--jsonl", str(tmp_path / "r.jsonl")], capture_output=True,
                       text=True, timeout=120, cwd=tmp_path,
                       env={**os.environ, "BENCH_DSN": dsn_url, "RAY_ADDRESS": "127.0.0.1:6379"})
    assert r.returncode == ExitCode.FAILURE, r.stderr  # a run that could not start its users (ClusterError)
    assert "no Ray node runs on this machine" in r.stderr and "ray start --address=HEAD:6379 --num-cpus=0" in r.stderr
    assert "Traceback" not in r.stderr and parse_dsn(dsn_url).password not in r.stderr
    doc = _result(tmp_path / "r.json")
    assert doc["status"] == "failed" and doc["stop"]["reason"] == "worker_failed" and not doc["intervals"]
    # found out before the data is loaded, which may take an hour: no load began
    assert not [e for e in _events(tmp_path / "r.jsonl") if e["type"] in ("prepare", "prepared")
                or e.get("phase") == "prepare"], r.stderr
    assert "prepared" not in r.stderr


@pytest.fixture(scope="module")
def cluster_once() -> Iterator[RayCluster]:
    cluster = RayCluster()
    try:
        yield cluster
    finally:
        cluster.close()


@pytest.fixture
def cluster(cluster_once: RayCluster) -> RayCluster:
    """The module's cluster, started by the first test that asks for it: inside that test, so
    under its share of the machine (conftest's machine_share), not beside an `alone` test."""
    if cluster_once.holder is None:
        try:
            cluster_once.start()
        except BaseException:
            cluster_once.close()
            raise
    return cluster_once


def _result(path: Path) -> dict:
    doc = json.loads(path.read_text())
    jsonschema.validate(doc, SCHEMA)
    return doc


def _events(path: Path) -> list[dict]:
    """The complete lines of a --jsonl stream written so far."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        return []
    return [json.loads(line) for line in text.splitlines(keepends=True) if line.endswith("\n")]


def _quiet(out: str, err: str) -> None:
    """Ray's banners and its error listener's blocks never reach bench's output: stdout carries data
    only (none asked here), and no line of stderr is one of Ray's. Ray prints those blocks to the
    driver's stdout even with log_to_driver=False, colored: "\x1b[33m(raylet)\x1b[0m Raylet is
    terminated ..." (seen with a raylet killed under a driver in the test's namespace)."""
    assert out == "", out[-2000:]
    lines = [ANSI.sub("", ln).lstrip() for ln in err.splitlines()]
    assert not [ln for ln in lines if ln.startswith("(raylet)")], err[-3000:]
    assert "Connected to Ray cluster" not in err and "Started a local Ray instance" not in err, err[-3000:]
    assert "Traceback" not in err, err[-3000:]
    # nor one of its C++ logger's, which writes to the process's stderr: "[2026-11-28 01:22:06,282 W 31973
    # 31984] network_util.cc:330: Failed to determine local IP via external connectivity to: 8.8.8.8:53"
    assert not [ln for ln in lines if CPP_LOG.match(ln)], err[-3000:]


async def test_a_scenario_runs_on_both_nodes(cluster: RayCluster, tmp_path: Path) -> None:
    f, out, lines = tmp_path / "ray.bench", tmp_path / "r.json", tmp_path / "r.jsonl"
    f.write_text(RAMP)
    r = cluster.bench("run", str(f), "--headless", "--json", str(out), "--jsonl", str(lines), cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    _quiet(r.stdout, r.stderr)
    doc = _result(out)
    assert doc["status"] == "completed" and doc["exit_code"] == 0
    assert doc["workers"] == 2  # one actor per CPU: one CPU a node
    assert doc["summary"]["count"] > 0 and doc["summary"]["errors"] == 0
    steps = doc["steps"]
    assert [s["users"] for s in steps] == [2, 4, 6]
    assert all(s["complete"] and s["count"] > 0 for s in steps), steps
    assert doc["saturation"]["users"] == 6 and doc["saturation"]["saturated"] is False, doc["saturation"]
    # nothing dropped or counted twice between the actors: each step's intervals add up to its count
    for s in steps:
        hold = [i for i in doc["intervals"] if i["phase"] == "hold" and i["step"] == s["step"]]
        assert hold and sum(i["count"] for i in hold) == s["count"], (s["step"], hold)
    ticks = [e for e in _events(lines) if e["type"] == "tick"]
    assert ticks and [t["t"] for t in ticks] == sorted(t["t"] for t in ticks)
    for s in steps:  # every user of a step connected, on both nodes, by its hold
        held = [t["users"] for t in ticks if t["step"] == s["step"] and t["phase"] == "hold"]
        assert held and all(u == s["users"] for u in held), (s["step"], held)
    # the users ran in actors on both nodes: the cluster's two node ids, one worker each
    ray = doc["cluster"]
    assert ray["kind"] == "ray"
    nodes = ray["nodes"]
    assert len(nodes) == 2, nodes
    assert {n["node_id"] for n in nodes} == set(cluster.node_ids().values())
    for n in nodes:
        assert n["host"] and n["cores"] >= 1 and n["users"] > 0, n
        assert len(n["workers"]) == 1 and n["workers"][0].startswith("worker "), n
        late = n["answers_late_ms"]  # how long after each tick's ask its worker's report came
        assert late["answers"] >= len(steps) and 0 < late["p50"] <= late["p99"] <= late["max"], n
    assert sorted(w for n in nodes for w in n["workers"]) == ["worker 1", "worker 2"]
    for s in steps:  # each actor's own CPU, as a local worker's
        by_process = s["client_cpu_by_process"]
        assert {"worker 1", "worker 2"} <= set(by_process), by_process
        assert by_process["worker 1"] and by_process["worker 2"], by_process
        assert set(s["cpu_by_client_host"]) == {n["host"] for n in nodes}, s  # each node's whole CPU
    assert [u["users"] for u in ray["users_started"]] == [2, 4, 6], ray["users_started"]
    # the live screen, fed the run's own stream, lists the nodes with their CPU
    evs = read_stream(lines).events
    last = [e for e in evs if isinstance(e, ev.LiveTick) and e.phase == "hold"][-1]
    async with replayed(evs[:evs.index(last) + 1]) as (app, _pilot, _controls, _sink):
        text = screen_text(app)
    shown = [line for line in text.splitlines() if "ray node" in line]
    assert len(shown) == 2 and {n["node_id"][:8] for n in nodes} == {line.split()[2] for line in shown}, text
    assert all(re.search(r"cpu +\d+% +bench-dsl +\d+%", line) for line in shown), shown


def test_ray_and_two_processes_measure_the_same(cluster: RayCluster, tmp_path: Path) -> None:
    """The two at the same time, against the same server: a machine the suite keeps busy slows both
    alike, where one after the other each met another moment of it."""
    f = tmp_path / "sleeper.bench"
    f.write_text(SLEEPER.format(duration="5s", extra=""))
    docs, procs = {}, {}
    lines = tmp_path / "ray.jsonl"
    try:
        for workers in ("ray", "2"):
            procs[workers] = cluster.popen([BENCH, "run", str(f), "--headless", "--json", str(tmp_path / f"{workers}.json"),
                                            "--workers", workers, *(["--jsonl", str(lines)] if workers == "ray" else [])],
                                           cwd=tmp_path)
            deadline = time.monotonic() + 60
            while workers == "ray" and not any(e["type"] == "phase" and e.get("phase") == "warmup"
                                               for e in _events(lines)):  # its actors ready: start the other
                assert procs["ray"].poll() is None and time.monotonic() < deadline, procs["ray"].communicate()
                time.sleep(0.1)
        for workers, proc in procs.items():
            out, err = proc.communicate(timeout=90)
            assert proc.returncode == 0, (workers, err[-3000:])
            _quiet(out, err)
            docs[workers] = _result(tmp_path / f"{workers}.json")
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert docs["2"]["workers"] == docs["ray"]["workers"] == 2
    assert "cluster" not in docs["2"] or docs["2"]["cluster"] is None or docs["2"]["cluster"]["kind"] != "ray"
    assert docs["ray"]["cluster"]["kind"] == "ray"
    counts = {}
    for workers, doc in docs.items():
        summary = doc["summary"]
        assert summary["errors"] == 0 and summary["users"] == 4, (workers, summary)
        # 4 users, each ~20.3 ms per transaction (sleep + round trip): never above 200 tps, and what
        # their time says by Little's law (users / mean time), however busy the machine (a full suite
        # once slowed both runs to 165 tps: an absolute floor measured the machine, not the fleet)
        lat = summary["latency_ms"]
        assert summary["tps"] <= 200, (workers, summary["tps"])
        assert abs(summary["tps"] - 4000 / lat["avg"]) <= 0.05 * summary["tps"], (workers, summary["tps"], lat)
        assert 20.0 <= lat["p50"] <= 30.0, (workers, lat)  # the sleep, and a busy machine's late wakeups
        assert lat["min"] >= 20.0, (workers, lat)  # SLEEP(0.02) never answers sooner: nothing lost in transit
        hold = [i for i in doc["intervals"] if i["phase"] == "hold"]
        assert sum(i["count"] for i in hold) == doc["steps"][0]["count"] == summary["count"], workers
        counts[workers] = sorted(i["count"] for i in hold)
        # a tick of the hold: 4 users' worth, whoever ran them. The median tick, not each: a loaded machine
        # once stalled two ticks of the two processes' run to 139 and 148
        assert 150 <= counts[workers][len(counts[workers]) // 2] <= 205, (workers, counts[workers])
    # the same per tick within noise: the medians of the two within 10%. 5% held on a quiet machine,
    # but not in the suite: the actors run in the Ray node's session, whose autogroup the kernel weighs
    # as much as the whole suite's, and a user's 20 ms sleep there was woken sooner (195 a tick against
    # 183, seen in CI: each of the two then within 4% of the 192 that 4 users of 20.8 ms make)
    median = {w: c[len(c) // 2] for w, c in counts.items()}
    assert abs(median["ray"] - median["2"]) <= 0.10 * median["2"], counts
    # the actors' histograms merge as the processes' do: the same percentiles, to the server's jitter
    p2, pr = docs["2"]["summary"]["latency_ms"], docs["ray"]["summary"]["latency_ms"]
    assert abs(p2["p50"] - pr["p50"]) <= 1.5 and abs(p2["p90"] - pr["p90"]) <= 3.0, (p2, pr)


def test_a_rate_is_split_over_the_actors(cluster: RayCluster, tmp_path: Path) -> None:
    """An open-loop rate on the cluster: each actor takes its share (an actor taking the whole rate
    would double it), and the merged arrivals keep the rate asked."""
    f, out = tmp_path / "rate.bench", tmp_path / "r.json"
    f.write_text(RATE)
    r = cluster.bench("run", str(f), "--headless", "--json", str(out), cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    _quiet(r.stdout, r.stderr)
    doc = _result(out)
    assert doc["cluster"]["kind"] == "ray" and doc["workers"] == 2
    assert sum(n["users"] for n in doc["cluster"]["nodes"]) == 8 and all(n["users"] == 4 for n in doc["cluster"]["nodes"])
    summary = doc["summary"]
    assert abs(summary["offered_tps"] - 100) <= 3, summary
    assert abs(summary["achieved_tps"] - 100) <= 5 and summary["dropped"] == 0, summary


def test_a_tick_asks_each_node_once_whatever_its_actors(cluster: RayCluster, tmp_path: Path) -> None:
    """Four actors on the two nodes: each collect (a tick) makes one report call per node, to its
    relay, which asks its two actors; every worker's report still comes, each tick."""
    f, out, lines = tmp_path / "four.bench", tmp_path / "r.json", tmp_path / "r.jsonl"
    f.write_text(SLEEPER.format(duration="3s", extra="workers ray 4"))
    r = cluster.bench("run", str(f), "--headless", "--json", str(out), "--jsonl", str(lines), cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    _quiet(r.stdout, r.stderr)
    doc = _result(out)
    nodes, calls = doc["cluster"]["nodes"], doc["cluster"]["calls"]
    assert doc["workers"] == 4 and len(nodes) == 2 and all(len(n["workers"]) == 2 for n in nodes), nodes
    ticks = [e for e in _events(lines) if e["type"] == "tick"]
    assert calls["collects"] >= len(ticks) >= 3, (calls, len(ticks))
    assert calls["report_calls"] == 2 * calls["collects"] and calls["reports"] == 4 * calls["collects"], calls
    for t in (t for t in ticks if t["phase"] == "hold"):  # each tick merged all four workers' reports
        assert t["users"] == 4, t
    hold = [i for i in doc["intervals"] if i["phase"] == "hold"]
    assert hold and sum(i["count"] for i in hold) == doc["summary"]["count"] > 0


@pytest.mark.alone  # loading its 400,000 rows and 32 users at full speed: both cores, which the suite's other tests would miss
def test_the_cluster_example_runs_as_written(cluster: RayCluster, tmp_path: Path) -> None:
    """examples/cluster.bench, the issue's example, unchanged: its own data (4 tables of 100,000
    rows), its first step shortened (--time-scale): 32 users over both nodes."""
    out = tmp_path / "r.json"
    r = cluster.bench("run", str(ROOT / "examples" / "cluster.bench"), "--headless", "--json", str(out),
                      "--time-scale", "0.03", "--max-steps", "1", cwd=tmp_path)
    assert r.returncode in (0, 3), r.stderr[-3000:]  # 3: its expectations... it has none; a stop may fire
    _quiet(r.stdout, r.stderr)
    doc = _result(out)
    assert doc["status"] == "completed" and doc["cluster"]["kind"] == "ray"
    assert [s["users"] for s in doc["steps"]] == [32], doc["steps"]
    assert all(s["count"] > 0 for s in doc["steps"])
    assert sum(n["users"] for n in doc["cluster"]["nodes"]) == doc["steps"][-1]["users"]


def _until_hold(lines: Path, proc: subprocess.Popen[str], within: float = 90) -> list[dict]:
    """The stream's events once it has the first interval of the hold."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()
        events = _events(lines)
        if any(e["type"] == "interval" and e.get("phase") == "hold" for e in events):
            return events
        time.sleep(0.1)
    raise AssertionError(f"no interval of the hold within {within} s")


def _two_live_nodes(cluster: RayCluster) -> dict[int, str]:
    """Two live nodes, as the GCS sees them: a node joins in place of a killed one, and the killed one
    must be dead to the GCS too (a run places its actors on the nodes the GCS calls alive). The
    driver attaches to the head's raylet (Ray prefers the head among a machine's nodes): the head is
    never the one killed."""
    for i, node in enumerate(cluster.nodes):  # one still starting (the test before started it)
        if node.poll() is None:
            cluster.wait_started(node, i)
    if len(cluster.node_ids()) < 2:
        cluster.add_node()
    ids = cluster.node_ids()
    cluster.wait_alive(set(ids.values()))
    return ids


def _actors() -> list[psutil.Process]:
    """The worker actors' processes that run on this machine (Ray titles them after the class)."""
    out = []
    for p in psutil.process_iter(["cmdline"]):
        if any("WorkerActor" in part for part in p.info["cmdline"] or ()):
            out.append(p)
    return out


def test_a_terminated_run_on_the_cluster_writes_what_was_measured(cluster: RayCluster, tmp_path: Path) -> None:
    """A supervisor's SIGTERM to `bench` mid-run: the run stops its actors, writes what they measured and
    says it was terminated (Ray must not have taken the signal's handler from the run)."""
    f, out, lines = tmp_path / "term.bench", tmp_path / "t.json", tmp_path / "t.jsonl"
    f.write_text(SLEEPER.format(duration="30s", extra=""))
    proc = cluster.popen([BENCH, "run", str(f), "--headless", "--workers", "ray", "--json", str(out),
                          "--jsonl", str(lines)], cwd=tmp_path)
    try:
        _until_hold(lines, proc)
        assert _actors(), "no worker actor runs during the run"
        proc.send_signal(signal.SIGTERM)
        stdout, stderr = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == ExitCode.TERMINATED, stderr[-3000:]
    _quiet(stdout, stderr)
    doc = _result(out)
    assert doc["exit_code"] == ExitCode.TERMINATED and doc["summary"]["count"] > 0, doc["stop"]
    hold = [i for i in doc["intervals"] if i["phase"] == "hold"]
    assert hold and sum(i["count"] for i in hold) == doc["summary"]["count"]
    deadline = time.monotonic() + 15  # the actors end with their driver
    while _actors() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _actors(), [p.info["cmdline"] for p in _actors()]


def test_an_actor_killed_is_its_worker_lost_and_its_node_goes_on(cluster: RayCluster, tmp_path: Path) -> None:
    """Four actors on the two nodes, one's process killed in the hold, on worker loss continue: its
    relay answers for it that it is gone, so the run names that worker lost in the words of a direct
    call, and goes on with the other three, its node's other actor among them."""
    f, out, lines = tmp_path / "killed.bench", tmp_path / "k.json", tmp_path / "k.jsonl"
    f.write_text(SLEEPER.format(duration="10s", extra="workers ray 4\n  on worker loss continue"))
    proc = cluster.popen([BENCH, "run", str(f), "--headless", "--json", str(out), "--jsonl", str(lines)], cwd=tmp_path)
    try:
        _until_hold(lines, proc)
        actors = _actors()
        assert len(actors) == 4, [p.info["cmdline"] for p in actors]
        actors[0].kill()
        stdout, stderr = proc.communicate(timeout=90)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, stderr[-3000:]
    _quiet(stdout, stderr)
    doc = _result(out)
    assert doc["status"] == "completed", doc["stop"]
    (lost,) = doc["cluster"]["lost"]
    assert re.fullmatch(r"worker \d on node [0-9a-f]{8} \(.+\) lost: its process or its node is gone \(\w+\)",
                        lost["reason"]), lost
    node = next(n for n in doc["cluster"]["nodes"] if n["node_id"] == lost["node_id"])
    assert len(node["workers"]) == 2 and lost["worker"] in node["workers"], node
    # a user each: the three left, the killed one's node-mate among them, answer every tick after it
    ticks = [e for e in _events(lines) if e["type"] == "tick" and e["phase"] == "hold"]
    assert ticks[0]["users"] == 4 and [t["users"] for t in ticks[-3:]] == [3, 3, 3], [t["users"] for t in ticks]
    hold = [i for i in doc["intervals"] if i["phase"] == "hold"]
    assert hold[-1]["count"] > 0 and sum(i["count"] for i in hold) == doc["summary"]["count"]


def _lose_a_node_in_the_hold(cluster: RayCluster, f: Path, out: Path, lines: Path, node_id: str, timeout: float,
                             then: Callable[[], object] | None = None
                             ) -> tuple[list[dict[str, Any]], str, str, int, float]:
    """`f` run with `workers ray`, node `node_id`'s raylet killed once its hold has begun (then `then()`):
    the events before the kill, the run's stdout, stderr and exit status, and when the node was killed."""
    proc = cluster.popen([BENCH, "run", str(f), "--headless", "--workers", "ray", "--json", str(out),
                          "--jsonl", str(lines)], cwd=f.parent)
    try:
        before = _until_hold(lines, proc)
        cluster.kill_raylet(node_id)
        killed = time.monotonic()
        if then is not None:
            then()
        stdout, stderr = proc.communicate(timeout=timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return before, stdout, stderr, proc.returncode, killed


def test_a_lost_node_fails_the_run_and_keeps_what_was_measured(cluster: RayCluster, tmp_path: Path) -> None:
    ids = _two_live_nodes(cluster)
    lost = ids[max(ids)]  # never the head (1)
    f, out, lines = tmp_path / "lost.bench", tmp_path / "l.json", tmp_path / "l.jsonl"
    f.write_text(SLEEPER.format(duration="30s", extra=""))
    # the next test's second node starts while this run ends
    before, stdout, stderr, code, killed = _lose_a_node_in_the_hold(cluster, f, out, lines, lost, 60,
                                                                    then=lambda: cluster.add_node(wait=False))
    assert time.monotonic() - killed < 25, "the run went on to its end"
    assert code == ExitCode.FAILURE, stderr[-3000:]
    _quiet(stdout, stderr)
    doc = _result(out)
    assert doc["status"] == "failed" and doc["exit_code"] == ExitCode.FAILURE
    assert doc["stop"]["reason"] == "worker_failed"
    assert lost[:8] in doc["stop"]["message"], doc["stop"]  # the node by its id: both hosts are this machine
    # what was measured before the loss is kept, and adds up
    measured = [e for e in before if e["type"] == "interval" and e["phase"] == "hold"]
    assert len([i for i in doc["intervals"] if i["phase"] == "hold"]) >= len(measured) >= 1
    assert doc["summary"]["count"] > 0
    assert sum(i["count"] for i in doc["intervals"] if i["phase"] == "hold") == doc["summary"]["count"]


def test_with_on_worker_loss_continue_the_run_goes_on_without_the_node(cluster: RayCluster, tmp_path: Path) -> None:
    ids = _two_live_nodes(cluster)
    lost = ids[max(ids)]
    f, out, lines = tmp_path / "goes-on.bench", tmp_path / "g.json", tmp_path / "g.jsonl"
    f.write_text(SLEEPER.format(duration="10s", extra="on worker loss continue"))
    _, stdout, stderr, code, _ = _lose_a_node_in_the_hold(cluster, f, out, lines, lost, 90)
    assert code == 0, stderr[-3000:]
    _quiet(stdout, stderr)
    doc = _result(out)
    assert doc["status"] == "completed" and doc["exit_code"] == 0, doc["stop"]
    ray = doc["cluster"]
    assert isinstance(ray["lost"], list) and lost[:8] in json.dumps(ray["lost"]), ray
    # the step went on with the survivor's users (2 of the 4: 2 an actor), to its end
    ticks = [e for e in _events(lines) if e["type"] == "tick" and e["phase"] == "hold"]
    assert ticks[0]["users"] == 4, ticks[0]
    assert [t["users"] for t in ticks[-3:]] == [2, 2, 2], [t["users"] for t in ticks]
    assert sum(tx["count"] for t in ticks[-3:] for tx in t["transactions"].values()) > 0, ticks[-3:]
    hold = [i for i in doc["intervals"] if i["phase"] == "hold"]
    assert hold[-1]["count"] > 0 and sum(i["count"] for i in hold) == doc["summary"]["count"]


def test_a_rate_is_whole_after_a_lost_node_while_ray_declares_it_dead(cluster: RayCluster, tmp_path: Path) -> None:
    """200 tps on two actors, a node killed in the hold, on worker loss continue: while Ray takes
    seconds to call its actor dead, that actor's half is due with no user to start it, and counts as
    offered and dropped (the step offered 179.7 of 200 before); the loss's interval ends where the
    survivor's counts end, so that the rows follow each other (they overlapped by 1.4 s)."""
    ids = _two_live_nodes(cluster)
    lost = ids[max(ids)]
    f, out, lines = tmp_path / "paced-loss.bench", tmp_path / "p.json", tmp_path / "p.jsonl"
    f.write_text(RATE.replace("rate 100 tps", "rate 200 tps").replace("duration 2s", "duration 10s")
                 .replace("users max 8 queue", "users max 8")  # the lost actor's half is dropped, not queued
                 .replace("report every 1s", "report every 1s\n  on worker loss continue"))
    _, stdout, stderr, code, _ = _lose_a_node_in_the_hold(cluster, f, out, lines, lost, 90)
    assert code == 0, stderr[-3000:]
    doc = _result(out)
    assert doc["cluster"]["lost"], doc["cluster"]
    (step,) = doc["steps"]
    assert step["offered_tps"] == pytest.approx(200, rel=0.1), step
    assert step["offered"] == step["started"] + step["dropped"] + step["queue_growth"], step
    rows = doc["intervals"]
    for before, row in zip(rows, rows[1:], strict=False):
        assert before["t"] <= row["start_s"] <= row["t"], (before, row)
        # the counts' span ends where a tick's earliest answer was taken, its row's t where the tick was
        # merged: Ray's calls on a loaded machine put 65 ms between them (seen); the overlap this test
        # is about was 1.4 s
        assert row["t"] - row["seconds"] >= before["t"] - 0.25, (before, row)
