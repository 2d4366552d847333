"""Fleets: the report each process sends (both ends of a worker's pipe use WorkerReport), the
client's CPU computed from the reports, and the fleet picked through the registry by today's rule."""

from __future__ import annotations

import asyncio
import json
import socket
import time
from pathlib import Path

import pytest

from bench_dsl.core.dsn import parse_dsn
from bench_dsl.engine.plan import plan
from bench_dsl.engine.scenario_file import load
from bench_dsl.engine.stage import Stage, Target
from bench_dsl.engine.voice import Voice
from bench_dsl.fleet.base import Health, ProcessFigures, WorkerReport
from bench_dsl.fleet.local import LocalFleet
from bench_dsl.fleet.process import ProcessFleet
from bench_dsl.measure.txstats import TxStats, new_histogram
from bench_dsl.measure.recorder import Recorder
from bench_dsl.measure.stalls import Quiet
from bench_dsl.workloads.registry import make_workload

SCENARIO = """
scenario "fleet" {
  target env("BENCH_DSN")
  workload custom { transaction t { query "SELECT 1" } }
  users 4
  duration 2s
}
"""


def stats(count: int, us: int) -> TxStats:
    st = TxStats(new_histogram())
    st.hist.record_value(us, count)
    st.count, st.queries, st.total_us = count, count, us * count
    return st


def report(name: str, count: int, cpu_s: float | None, host: str = "here", cores: int = 2,
           lag: dict[str, list[float]] | None = None, **health: object) -> WorkerReport:
    h = Health(0, 1.5, None, {1213: "deadlock"}, ("libmariadb",), **health)  # type: ignore[arg-type]
    return WorkerReport({"t": stats(count, 900)}, h, 3, [Quiet(((1.0, 2.0),), 2.0, 3.0)],
                        {name: ProcessFigures(cpu_s, 2.0, lag or {}, host, cores)})


def test_a_report_goes_over_the_wire_and_back_whole() -> None:
    r = report("worker 1", 10, 0.5, lag={"loop": [0.2, 0.4], "thread": [0.1]}, connected=3, refused=1,
               connect_error=(1040, "too many"))
    back = WorkerReport.from_wire(json.loads(json.dumps(r.to_wire())))
    assert back.tx["t"].count == 10 and back.tx["t"].hist.get_max_value() == r.tx["t"].hist.get_max_value()
    assert back.health == r.health and back.active == 3 and back.quiet == r.quiet
    assert back.processes == r.processes


def test_reports_merge_into_the_fleets() -> None:
    a = report("worker 1", 10, 0.5, lag={"loop": [0.2]}, connected=2)
    b = report("worker 2", 5, 1.0, connected=1, never_connected=1)
    mine = WorkerReport({}, Health(0, float("inf"), None, {}), 0, [], {"coordinator": ProcessFigures(0.1, 2.0, {}, "here", 2)})
    m = WorkerReport.merge([a, b, mine], ("t", "other"))
    assert m.tx["t"].count == 15 and m.tx["other"].count == 0
    assert (m.health.connected, m.health.never_connected, m.health.idle_s) == (3, 1, 1.5)
    assert m.health.error_messages == {1213: "deadlock"} and m.health.executors == ("libmariadb",)
    assert m.active == 6 and len(m.quiet) == 2
    assert m.lag() == {"worker 1": {"loop": [0.2]}}  # only the processes that run users have a lag
    # the client's CPU from the processes' own: each % of a core, all of them % of the machine
    cpu = m.cpu()
    assert cpu["client:worker 1"] == pytest.approx(25.0) and cpu["client:worker 2"] == pytest.approx(50.0)
    assert cpu["client:coordinator"] == pytest.approx(5.0)
    assert cpu["client"] == pytest.approx(80.0 / 2)


def test_the_client_cpu_counts_each_machine_s_cores_once() -> None:
    m = WorkerReport.merge([report("worker 1", 1, 2.0, host="a", cores=2), report("worker 2", 1, 2.0, host="b", cores=4),
                            report("worker 3", 1, None, host="c", cores=8)], ("t",))
    cpu = m.cpu()
    assert cpu["client"] == pytest.approx(100.0 * 2 / 6)  # c said nothing of its CPU: not counted
    assert "client:worker 3" not in cpu
    assert WorkerReport.merge([], ("t",)).cpu() == {"client": None}


def test_the_stage_picks_the_fleet_by_todays_rule(tmp_path: Path) -> None:
    f = tmp_path / "s.bench"
    f.write_text(SCENARIO)
    sc = load(str(f), env={"BENCH_DSN": "mysql://u@127.0.0.1:1/d"}).seeded()
    stage = Stage(sc, plan(sc), make_workload(sc), Voice([]))
    target = Target(parse_dsn("mysql://u@127.0.0.1:1/d"), [], None, None, None)
    one = stage.fleet(target, 1, isolate_users=False)
    assert (one.kind, one.fleet.workers) == ("local", 1) and isinstance(one.fleet, LocalFleet)
    isolated = stage.fleet(target, 1, isolate_users=True)
    assert isolated.kind == "process" and isinstance(isolated.fleet, ProcessFleet)
    two = stage.fleet(target, 2, isolate_users=False)
    assert (two.kind, two.fleet.workers) == ("process", 2) and isinstance(two.fleet, ProcessFleet)


@pytest.mark.slow
async def test_each_process_reports_its_own_cpu_lag_and_host(dsn_url: str, tmp_path: Path) -> None:
    f = tmp_path / "s.bench"
    f.write_text(SCENARIO)
    sc = load(str(f), {}).seeded()
    fleet = ProcessFleet(sc, parse_dsn(dsn_url), ("t",), 2, lambda msg, level: None)
    await fleet.start()
    try:
        await fleet.resize(4)
        await fleet.collect()
        deadline = time.monotonic() + 60  # a hung test's: a busy machine's report has it all a collect later
        while True:
            await asyncio.sleep(1.0)  # each report a second long at least (longer on a busy machine)
            r = await fleet.collect()
            if r.tx["t"].count > 0 and set(r.lag()) == {"worker 1", "worker 2"}:
                break
            assert time.monotonic() < deadline, "no report with the users' transactions and lag"
    finally:
        await fleet.stop()
    assert r.tx["t"].count > 0 and r.health.connected == 4
    assert set(r.processes) == {"coordinator", "worker 1", "worker 2"}
    assert all(p.host == socket.gethostname() and p.cpu_s is not None and p.wall_s > 0.5
               for p in r.processes.values())
    assert set(r.lag()) == {"worker 1", "worker 2"}  # the coordinator runs no users
    cpu = r.cpu()
    assert cpu["client:worker 1"] > 0 and cpu["client"] is not None and cpu["client"] > 0


async def test_a_local_fleet_reports_the_coordinator(dsn_url: str, tmp_path: Path) -> None:
    f = tmp_path / "s.bench"
    f.write_text(SCENARIO)
    sc = load(str(f), {}).seeded()
    fleet = LocalFleet(parse_dsn(dsn_url), make_workload(sc), 7)
    assert isinstance(fleet.recorder, Recorder)
    await fleet.start()
    try:
        await fleet.resize(2)
        deadline = time.monotonic() + 60
        while True:
            await asyncio.sleep(0.6)
            r = await fleet.collect()
            if r.tx["t"].count > 0 and r.lag():  # a busy machine's first may have neither yet
                break
            assert time.monotonic() < deadline, "no report with the users' transactions and lag"
    finally:
        await fleet.stop()
    assert r.tx["t"].count > 0 and set(r.processes) == {"coordinator"}
    assert set(r.lag()) == {"coordinator"} and r.cpu()["client:coordinator"] is not None
