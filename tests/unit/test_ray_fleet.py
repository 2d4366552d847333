"""`workers ray` without a cluster: the language and the command's refusals, where actors go, the
clock of a worker on another machine, the coordinator's loss of a worker, and the private hook of
Ray's that keeps its messages off stdout. The cluster itself: tests/e2e/test_ray.py."""

from __future__ import annotations

import argparse
import asyncio
import platform
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import pytest

import bench_dsl
from bench_dsl.core.cluster_info import ClusterCalls
from bench_dsl.core.errors import ScenarioError
from bench_dsl.engine.scenario_file import load
from bench_dsl.fleet.base import WorkerFailed, WorkerLostError
from bench_dsl.fleet.clocks import ClockMap
from bench_dsl.fleet.coordinator import WorkerFleet, WorkerHandle
from bench_dsl.fleet.ray import RayFleet, _Actor, place
from bench_dsl.measure.stalls import Quiet
from tests.conftest import ROOT

SCENARIO = """
scenario "c" {{
  {target}
  {workers}
  workload sysbench oltp_point_select {{ tables = 1 table_size = 100 }}
  users 4
  duration 2s
}}
"""


def _load(tmp_path: Path, workers: str, target: str = 'target "mysql://u@db.example:3306/d"', env: Any = None) -> Any:
    f = tmp_path / "s.bench"
    f.write_text(SCENARIO.format(target=target, workers=workers))
    return load(str(f), env={} if env is None else env)


def test_workers_ray_in_the_language(tmp_path: Path) -> None:
    sc = _load(tmp_path, "workers ray")
    assert (sc.cluster, sc.workers, sc.on_worker_loss) == ("ray", None, "fail")
    sc = _load(tmp_path, "workers ray 8\n  on worker loss continue")
    assert (sc.cluster, sc.workers, sc.on_worker_loss) == ("ray", 8, "continue")
    sc = _load(tmp_path, "workers 3")
    assert (sc.cluster, sc.workers) == (None, 3)
    # a target from an unset env() may be set when the file runs: `bench run` refuses it then
    assert _load(tmp_path, "workers ray", target='target env("NOT_SET_HERE")').cluster == "ray"


@pytest.mark.parametrize(("workers", "target", "said"), [
    ("workers ray", "", "a scenario without a target cannot run on a cluster"),
    ("workers ray 0", "", "at least 1"),
    ("workers 4 5", 'target "mysql://u@h/d"', "workers takes one value here"),
    ("workers cloud", 'target "mysql://u@h/d"', "workers is auto, a number of processes or ray, not 'cloud'"),
    ("on worker loss maybe", 'target "mysql://u@h/d"', "on worker loss is fail or continue, not 'maybe'"),
])
def test_what_the_language_refuses(tmp_path: Path, workers: str, target: str, said: str) -> None:
    with pytest.raises(ScenarioError) as e:
        _load(tmp_path, workers, target=target)
    assert said in str(e.value), str(e.value)


def _bench(args: list[str], hide_ray: bool = False, env: dict[str, str] | None = None,
           cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    """`bench`, with Ray not installed as far as it can tell (sys.modules["ray"] = None: find_spec
    says None, and an import fails) when `hide_ray`."""
    code = ("import sys\n" + ("sys.modules['ray'] = None\n" if hide_ray else "")
            + "sys.argv = ['bench', *sys.argv[1:]]\nfrom bench_dsl.cli.main import main\nraise SystemExit(main())\n")
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=120,
                          env=env, cwd=cwd)


def test_without_ray_installed_workers_ray_is_refused_with_the_command_that_installs_it(tmp_path: Path) -> None:
    r = _bench(["check", "examples/cluster.bench"], hide_ray=True, env={"BENCH_DSN": "mysql://u@h/d"})
    assert r.returncode == 2, r.stdout + r.stderr
    assert "workers ray needs Ray, which is not installed" in r.stderr and "pip install 'bench-dsl[ray]'" in r.stderr
    assert "examples/cluster.bench:4:" in r.stderr  # placed, as every error of a file is
    f = tmp_path / "local.bench"
    f.write_text(SCENARIO.format(target='target "mysql://u@h/d"', workers=""))
    r = _bench(["run", str(f), "--workers", "ray", "--headless"], hide_ray=True, cwd=tmp_path)
    assert r.returncode == 2 and "pip install 'bench-dsl[ray]'" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr


@pytest.mark.parametrize(("init", "said", "hint"), [
    pytest.param("", "workers ray needs Ray, and the ray that imports here is not Ray", "rename that folder",
                 id="a-folder-named-ray"),
    pytest.param("raise ImportError('libray.so: cannot open shared object file')",
                 "workers ray needs Ray, and it does not import (ImportError: libray.so: cannot open shared object",
                 "pip install 'bench-dsl[ray]', again", id="a-broken-ray"),
])
def test_a_ray_that_is_not_one_or_does_not_import_is_refused_before_the_run(
        tmp_path: Path, init: str, said: str, hint: str) -> None:
    """`check` trusted find_spec: a package named ray ahead of Ray on the path, or a Ray that fails to
    import, passed it, and `run` failed later (exit 1)."""
    (tmp_path / "ray").mkdir()
    (tmp_path / "ray" / "__init__.py").write_text(init + "\n")  # on the path first: the command's directory
    f = tmp_path / "c.bench"
    f.write_text(SCENARIO.format(target='target "mysql://u@db.example:3306/d"', workers="workers ray"))
    r = _bench(["check", str(f)], cwd=tmp_path)
    flat = " ".join(r.stderr.split())
    assert r.returncode == 2 and said in flat and hint in flat, r.stderr
    assert f"{f}:4:" in r.stderr and "Traceback" not in r.stderr
    r = _bench(["run", str(f), "--headless", "--json", str(tmp_path / "r.json")], cwd=tmp_path)
    assert r.returncode == 2 and said in " ".join(r.stderr.split()), r.stderr
    assert not (tmp_path / "r.json").exists()  # refused before anything ran


def test_a_run_on_a_cluster_needs_a_target(tmp_path: Path) -> None:
    r = _bench(["run", "examples/cluster.bench", "--headless", "--json", str(tmp_path / "r.json")], env={})
    assert r.returncode == 2, r.stderr
    assert "cannot run on a cluster" in r.stderr and "BENCH_DSN is not set" in r.stderr, r.stderr
    f = tmp_path / "embedded.bench"
    f.write_text(SCENARIO.format(target="", workers=""))
    r = _bench(["run", str(f), "--workers", "ray:2", "--headless"], cwd=tmp_path)
    assert r.returncode == 2 and "the throwaway server listens on this machine's loopback only" in r.stderr, r.stderr
    assert not (tmp_path / "results").exists()  # refused before anything ran


def test_the_command_line_workers() -> None:
    from bench_dsl.cli.run import _workers

    assert _workers("auto") == (None, 0) and _workers("3") == (None, 3)
    assert _workers("ray") == ("ray", 0) and _workers("ray:5") == ("ray", 5)
    for bad in ("ray:auto", "ray:0", "4:ray", "cloud"):
        with pytest.raises(argparse.ArgumentTypeError):
            _workers(bad)


def test_actors_go_one_per_cpu_or_in_proportion_alternating_between_nodes() -> None:
    assert place(None, [("a", 1), ("b", 1)]) == [("a", 1.0), ("b", 1.0)]
    assert place(None, [("a", 2), ("b", 1)]) == [("a", 1.0), ("b", 1.0), ("a", 1.0)]
    # 5 asked of 3 CPUs: 3.33 and 1.67 -> 3 and 2; each node's actors share its CPUs (Ray would hold
    # an actor that asks for a whole CPU it has not back for ever)
    assert place(5, [("a", 2), ("b", 1)]) == [("a", 0.6666), ("b", 0.5), ("a", 0.6666), ("b", 0.5), ("a", 0.6666)]
    assert place(1, [("a", 4), ("b", 4)]) == [("a", 1.0)]
    # 7 of 32 CPUs: 1.75, 1.75 and 3.5 -> the largest remainders take the two left over
    assert sorted(n for n, _ in place(7, [("a", 8), ("b", 8), ("c", 16)])) == ["a", "a", "b", "b", "c", "c", "c"]


def test_a_workers_clock_is_read_on_the_coordinators() -> None:
    """A worker on another machine whose monotonic clock is 1000 s ahead: its report's times come
    back on the coordinator's clock, within half the shortest round trip."""
    clock = ClockMap()
    skew = 1000.0
    for sent, rtt, taken_after in ((10.0, 0.040, 0.030), (11.0, 0.004, 0.001), (12.0, 0.020, 0.019)):
        clock.observe(sent, sent + rtt, sent + taken_after + skew)
    assert clock.error_s == pytest.approx(0.002)  # the 4 ms round trip's
    assert abs(clock.offset + skew) <= clock.error_s + 1e-9
    wire = [Quiet(((1010.5, 1010.9),), 1011.0, 1011.2).to_wire()]
    (q,) = [Quiet.from_wire(w) for w in clock.quiet_wire(wire)]
    assert q.spans[0][0] == pytest.approx(10.5, abs=0.002) and q.at == pytest.approx(11.2, abs=0.002)
    assert q.last == pytest.approx(11.0, abs=0.002)
    assert clock.quiet_wire([Quiet((), None, 1005.0).to_wire()])[0][1] is None
    # its users' idle spans too (bench_dsl.measure.stalls): on the worker's clock they made no sense here
    (q,) = [Quiet.from_wire(w) for w in clock.quiet_wire([Quiet((), 1011.0, 1011.2, ((1010.2, 1010.4),),
                                                                1011.1).to_wire()])]
    assert q.idle[0][1] == pytest.approx(10.4, abs=0.002) and q.idle_from == pytest.approx(11.1, abs=0.002)
    assert clock.quiet_wire([[[], None, 1005.0]])[0][3:] == [[], None]  # a report of before them


class _Handles(WorkerFleet):
    """The coordinator's protocol over workers that answer from a table: reports, or a loss."""

    def __init__(self, answers: list[Any]) -> None:
        from bench_dsl.language.model import Scenario

        sc = Scenario.__new__(Scenario)
        object.__setattr__(sc, "seed", 1)
        super().__init__(sc, None, ("t",), len(answers), lambda msg, level: None)  # type: ignore[arg-type]
        self.procs = [WorkerHandle(i) for i in range(len(answers))]
        self.answers = answers

    def _send(self, p: Any, msg: dict[str, Any]) -> asyncio.Future[dict[str, Any]]:
        fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        answer = self.answers[p.index]
        if isinstance(answer, BaseException):
            fut.set_exception(answer)
        else:
            fut.set_result({"op": msg["op"], "id": 0, **answer})
        return fut


def _report(active: int) -> dict[str, Any]:
    from bench_dsl.fleet.base import Health, WorkerReport

    return WorkerReport({}, Health(0, 0.0, None, {}), active).to_wire()


async def test_a_lost_worker_is_dropped_only_when_others_are_left() -> None:
    fleet = _Handles([_report(2), WorkerLostError("worker 2 on node abcd1234 (h) lost"), _report(3)])
    with pytest.raises(WorkerFailed) as e:
        await fleet.collect()
    assert e.value.partial is not None and e.value.partial.active == 5  # the others' report is kept
    assert fleet.lose() == ["worker 2 on node abcd1234 (h) lost"]
    assert [p.name for p in fleet.procs] == ["worker 1", "worker 3"] and fleet.workers == 2
    assert fleet.share(5) == [3, 2]  # the next users go to those left
    report = await fleet.collect()
    assert report.active == 5
    alone = _Handles([WorkerLostError("worker 1 lost")])
    with pytest.raises(WorkerFailed):
        await alone.collect()
    assert alone.lose() == [] and alone.workers == 1  # none would be left: the run fails


def test_joining_asks_no_outside_address_for_this_machines_own(monkeypatch: pytest.MonkeyPatch) -> None:
    """Ray resolves a local cluster address (127.0.0.1:6379) through node_ip_address_from_perspective
    (a private name of ray._private.services), a UDP connect to 8.8.8.8 whose failure (no route out)
    its C++ logger printed among bench's stderr lines. While joining, this machine's node's address
    answers instead; after, Ray's own again."""
    import ray._private.services as services

    from bench_dsl.fleet import ray as ray_fleet

    probe = services.node_ip_address_from_perspective
    monkeypatch.setattr(ray_fleet, "_local_node_ip", lambda: "10.9.8.7")
    with ray_fleet._no_ip_probe():
        assert services.resolve_ip_for_localhost("127.0.0.1") == "10.9.8.7"  # what ray.init asks of the address
        assert services.get_node_ip_address() == "10.9.8.7"
    assert services.node_ip_address_from_perspective is probe
    monkeypatch.setattr(ray_fleet, "_local_node_ip", lambda: None)  # no node here, or nodes that disagree
    with ray_fleet._no_ip_probe():
        assert services.node_ip_address_from_perspective is probe


def test_rays_messages_go_to_the_runs_log_once_each() -> None:
    """Ray's error listener prints the cluster's errors with print_to_stdstream (a private function
    of ray._private.worker): the hook bench-dsl puts in its place must still be the one called."""
    import inspect

    import ray._private.worker as ray_worker

    from bench_dsl.fleet.ray import _quiet_ray

    assert list(inspect.signature(ray_worker.print_to_stdstream).parameters) == ["data", "ignore_prefix"]
    assert "print_to_stdstream(" in inspect.getsource(ray_worker.listen_error_messages)
    said: list[str] = []
    original = ray_worker.print_to_stdstream
    try:
        import ray

        _quiet_ray(ray, said.append)
        block = "Raylet is terminated. Termination is unexpected. Possible reasons include: (1) SIGKILL\nLast 20 lines"
        for _ in range(2):  # each node's listener says it
            ray_worker.print_to_stdstream({"lines": [block], "pid": "raylet", "is_err": False}, ignore_prefix=False)
    finally:
        ray_worker.print_to_stdstream = original
    assert said == ["ray (raylet): Raylet is terminated."]


def _fleet_checking(nodes: dict[str, dict[str, Any]], logged: list[tuple[str, str]]) -> tuple[RayFleet, dict[str, Any]]:
    """A RayFleet as far as `_check` needs one, with no cluster, and what an actor that started
    answers on this machine."""
    fleet = RayFleet.__new__(RayFleet)
    fleet.ray = types.SimpleNamespace(__version__="2.60.0")
    fleet.nodes = nodes
    fleet.log = lambda text, level: logged.append((level, text))
    facts = {"bench_dsl": bench_dsl.__version__, "python": platform.python_version(), "ray": "2.60.0",
             "host": "client1", "cores": 8}
    return fleet, facts


def test_an_actor_whose_users_stay_niced_is_a_warning_that_says_how_to_start_the_nodes() -> None:
    """Not root on a node: Ray's nice 15 stays, and the run says what to do (the suite runs as root,
    where the actor lowers it itself: tests/e2e/test_ray.py)."""
    logged: list[tuple[str, str]] = []
    fleet, facts = _fleet_checking({"n1": {"node_id": "n1", "host": "?"}}, logged)
    fleet._check(_Actor(0, "n1", "?"), facts | {"nice": 15})
    (level, text), = logged
    assert level == "warning" and "nice 15" in text and "RAY_worker_niceness=0" in text
    assert fleet.nodes["n1"]["host"] == "client1" and fleet.nodes["n1"]["workers"] == ["worker 1"]
    logged.clear()
    fleet._check(_Actor(1, "n1", "?"), facts | {"nice": 0})
    assert logged == []
    with pytest.raises(WorkerFailed, match="install the same on every node"):
        fleet._check(_Actor(2, "n1", "?"), facts | {"ray": "2.59.0", "nice": 0})


class _Clock:
    """The coordinator's monotonic clock: each node's actor moves it to when its answer comes."""

    def __init__(self) -> None:
        self.now = 500.0

    def monotonic(self) -> float:
        return self.now


async def test_each_nodes_answers_are_timed_from_the_ticks_ask_into_cluster_nodes(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Two nodes, one answering 3 ms after each tick's ask, the other 40 ms and once 900 ms: each
    node's lateness over the run is in the result's cluster.nodes, and the schema knows it."""
    import json

    import jsonschema

    from bench_dsl.fleet import coordinator, ray
    from bench_dsl.fleet.base import Health, WorkerReport
    from bench_dsl.language.model import Scenario

    clock = _Clock()
    monkeypatch.setattr(ray, "time", clock)
    monkeypatch.setattr(coordinator, "time", clock)
    late = {"aaaa": [0.003] * 3, "bbbb": [0.040, 0.900, 0.040]}
    ticks = 0

    class Actor:
        def __init__(self, node: str) -> None:
            self.node = node
            self.ask = types.SimpleNamespace(remote=self.remote)

        async def remote(self, msg: dict[str, Any]) -> dict[str, Any]:
            clock.now = asked + late[self.node][ticks]
            return {"op": msg["op"], "id": msg["id"], **WorkerReport({}, Health(0, 0.0, None, {}), 2).to_wire()}

    sc = Scenario.__new__(Scenario)
    object.__setattr__(sc, "seed", 1)
    fleet = RayFleet(sc, None, ("t",), 2, 4, None, lambda msg, level: None)  # type: ignore[arg-type]
    fleet.ray = types.SimpleNamespace(exceptions=types.SimpleNamespace())
    fleet.nodes = {n: {"node_id": n, "host": f"client-{n}", "address": "10.0.0.1", "ray_cpus": 1, "cores": 1}
                   for n in late}
    for i, n in enumerate(late):
        p = _Actor(i, n, f"client-{n}")
        p.actor = Actor(n)
        fleet.procs.append(p)
    for ticks in range(3):
        asked = clock.now = 1000.0 + ticks
        await fleet.collect()
    nodes = {n["node_id"]: n for n in fleet.cluster().to_json()["nodes"]}
    three = pytest.approx(3.0, rel=1e-3)  # to the histogram's 3 digits
    assert nodes["aaaa"]["answers_late_ms"] == {"p50": three, "p99": three, "max": three, "answers": 3}
    b = nodes["bbbb"]["answers_late_ms"]
    assert b["p50"] == pytest.approx(40.0, rel=1e-3) and b["max"] == pytest.approx(900.0, rel=1e-3)
    schema = json.loads((ROOT / "bench_dsl/results/schema/result-v1.json").read_text())
    jsonschema.validate(fleet.cluster().to_json(), schema["properties"]["cluster"])


async def test_a_tick_is_one_call_per_node_and_a_lost_actor_is_still_its_worker_lost() -> None:
    """Four workers on two nodes: a collect makes one call to each node's relay, carrying that node's
    two reports. An actor the relay found dead is that worker lost, in the words of a direct call,
    its node's other worker unaffected; a relay whose call fails (its node gone) loses its node's
    workers, each by name."""
    import pickle

    import ray.exceptions as errors

    from bench_dsl.fleet.base import Health, WorkerReport
    from bench_dsl.fleet.ray_actor import fault
    from bench_dsl.language.model import Scenario

    calls: list[tuple[str, list[int]]] = []
    dead: set[int] = set()
    gone: set[str] = set()

    class Relay:
        def __init__(self, node: str) -> None:
            self.node = node
            self.ask = types.SimpleNamespace(remote=self.remote)

        async def remote(self, wire: bytes) -> bytes:  # pickled both ways, as RelayActor.ask
            msgs = pickle.loads(wire)
            calls.append((self.node, sorted(msgs)))
            if self.node in gone:
                raise errors.ActorDiedError()
            report = WorkerReport({}, Health(0, 0.0, None, {}), 2).to_wire()
            return pickle.dumps({i: fault(errors.ActorDiedError()) if i in dead
                                 else ["ok", {"op": m["op"], "id": m["id"], **report}] for i, m in msgs.items()})

    sc = Scenario.__new__(Scenario)
    object.__setattr__(sc, "seed", 1)
    fleet = RayFleet(sc, None, ("t",), 4, 8, None, lambda msg, level: None)  # type: ignore[arg-type]
    fleet.ray = types.SimpleNamespace(exceptions=errors)
    fleet.nodes = {n: {"node_id": n, "host": f"h-{n[:1]}", "address": None, "ray_cpus": 2, "cores": 2}
                   for n in ("aaaa1111", "bbbb2222")}
    fleet.procs = [_Actor(i, n, fleet.nodes[n]["host"]) for i, n in enumerate(["aaaa1111", "bbbb2222"] * 2)]
    fleet.relays = {n: Relay(n) for n in fleet.nodes}
    assert (await fleet.collect()).active == 8
    assert sorted(calls) == [("aaaa1111", [0, 2]), ("bbbb2222", [1, 3])]
    assert fleet.cluster().calls == ClusterCalls(collects=1, report_calls=2, reports=4, calls=2, messages=4)
    dead.add(1)  # worker 2's actor, on node bbbb
    with pytest.raises(WorkerFailed, match=r"^worker 2 on node bbbb2222 \(h-b\) lost: its process or its node "
                                         r"is gone \(ActorDiedError\)$") as e:
        await fleet.collect()
    assert e.value.partial is not None and e.value.partial.active == 6  # worker 4, on the same node, answered
    assert fleet.lose() == ["worker 2 on node bbbb2222 (h-b) lost: its process or its node is gone (ActorDiedError)"]
    calls.clear()
    gone.add("bbbb2222")
    with pytest.raises(WorkerFailed) as e:
        await fleet.collect()
    assert e.value.partial is not None and e.value.partial.active == 4
    assert sorted(calls) == [("aaaa1111", [0, 2]), ("bbbb2222", [3])]
    assert fleet.lose() == ["worker 4 on node bbbb2222 (h-b) lost: its process or its node is gone (ActorDiedError)"]
    assert [p.name for p in fleet.procs] == ["worker 1", "worker 3"]
