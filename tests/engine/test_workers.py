"""Virtual users spread over worker processes measure what one process measures."""

from __future__ import annotations

import asyncio
import itertools
import os
import signal
import time
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest

from bench_dsl.engine import events as ev
from bench_dsl.engine.events import Event
from bench_dsl.engine.plan import plan
from bench_dsl.engine.runner import Options, Run
from bench_dsl.engine.scenario_file import load
from bench_dsl.fleet.base import worker_count
from bench_dsl.fleet.process import ProcessFleet
from bench_dsl.results.document import ResultDocument

pytestmark = pytest.mark.slow

# Every transaction sleeps 20 ms on the server: whatever runs the users, 4 users make ~195 tps with
# a median latency just above 20 ms. That is the meaning both modes must agree on.
SLEEPER = """
scenario "sleeper" {
  target env("BENCH_DSN")
  workload custom {
    transaction nap { query "SELECT SLEEP(0.02)" }
  }
  users 4
  warmup 1s
  duration 4s
  report every 1s
}
"""


class Collect:
    def __init__(self) -> None:
        self.events: list[Event] = []
        self.document = ResultDocument()  # what the JSON result sink would write

    def emit(self, event: Event) -> None:
        self.events.append(event)
        self.document.apply(event)

    def close(self) -> None:
        pass


async def _run(path: Path, workers: int) -> tuple[int, dict, Run]:
    sc = load(str(path), {})
    sink = Collect()
    run = Run(sc, plan(sc), [sink], Options(workers=workers))
    code = await run.execute()
    return code, sink.document.doc, run


async def _collected(fleet: ProcessFleet, name: str, at_least: int, within: float = 30) -> int:
    """The transactions `name` the fleet counted, collected until there are `at_least` of them."""
    total = 0
    deadline = time.monotonic() + within
    while total < at_least:
        assert time.monotonic() < deadline, f"{total} transactions counted, not {at_least}"
        await asyncio.sleep(0.05)
        total += (await fleet.collect()).tx[name].count
    return total


async def _until(fleet: ProcessFleet, done: Callable[[], bool], within: float = 30) -> None:
    """Collects (the workers' reports) until `done()`."""
    deadline = time.monotonic() + within
    while not done():
        assert time.monotonic() < deadline, "not within the deadline"
        await asyncio.sleep(0.05)
        await fleet.collect()


async def _while_running(run: asyncio.Task[int], done: Callable[[], bool], what: str, within: float = 60) -> None:
    """Waits until `done()`, the run still going: `what` if it ended first or took too long."""
    deadline = time.monotonic() + within
    while not done():
        assert not run.done() and time.monotonic() < deadline, what
        await asyncio.sleep(0.05)


@pytest.mark.parametrize("workers", [1, 2])
async def test_one_process_and_several_measure_the_same(workers: int, dsn_url: str, tmp_path: Path) -> None:
    path = tmp_path / "sleeper.bench"
    path.write_text(SLEEPER)
    code, doc, _ = await _run(path, workers)
    assert code == 0
    assert doc["workers"] == workers
    summary = doc["summary"]
    assert summary["errors"] == 0
    assert summary["users"] == 4
    # 4 users, each ~20.3 ms per transaction (sleep + round trip): 180-197 tps on an idle machine. A
    # loaded one stretches the round trips and the gaps between a user's transactions (69 tps seen with
    # the machine shared), never a SLEEP(0.02) nor a user's one transaction at a time: the bounds that
    # hold whatever the load are what is checked
    assert 0 < summary["tps"] <= 200, summary["tps"]
    lat = summary["latency_ms"]
    assert lat["min"] >= 20.0  # SLEEP(0.02) can never answer sooner: no latency was lost in transit
    # a closed loop's users are each in one transaction at most (Little's law: tps x latency <= users;
    # 5% for the transactions a tick's edge cuts): a process that counted twice, or timed short, breaks it
    assert summary["tps"] * lat["avg"] / 1000 <= 4 * 1.05, (summary["tps"], lat)
    # every interval's count adds up to the step's: nothing dropped or counted twice between processes
    hold = [i for i in doc["intervals"] if i["phase"] == "hold"]
    assert sum(i["count"] for i in hold) == doc["steps"][0]["count"] == summary["count"]


async def test_the_live_ticks_carry_the_worst_process_s_scheduling_lag(dsn_url: str, tmp_path: Path) -> None:
    """What the live screen shows as `client lag`: the worst p90 of any process and probe over the
    step so far, which at the step's last tick is the worst the step records."""
    path = tmp_path / "sleeper.bench"
    path.write_text(SLEEPER)
    sc = load(str(path), {})
    sink = Collect()
    assert await Run(sc, plan(sc), [sink], Options(workers=2)).execute() == 0
    hold = [e.figures.client_lag for e in sink.events if isinstance(e, ev.LiveTick) and e.phase == "hold"]
    assert hold and all(lag is not None and lag.bound_ms == 10.0 for lag in hold[1:]), hold
    step = sink.document.doc["steps"][0]["client_lag_ms_by_process"]
    assert set(step) == {"worker 1", "worker 2"}
    worst = max(fig["p90"] for probes in step.values() for fig in probes.values() if fig)
    assert hold[-1] is not None and hold[-1].p90_ms == worst


def test_worker_count() -> None:
    assert worker_count(None, 1) == 1  # one user needs no second process
    assert worker_count(None, 1000) == (os.cpu_count() or 1)
    assert worker_count(None, 1000, server_local=True) == (os.cpu_count() or 1)  # raw executor: light users
    assert worker_count(None, 1000, server_local=True, light=False) == max(1, (os.cpu_count() or 1) // 2)
    assert worker_count(3, 2) == 2
    assert worker_count(4, 100) == 4


async def test_users_are_spread_evenly_with_distinct_seeds(dsn_url: str, tmp_path: Path) -> None:
    path = tmp_path / "sleeper.bench"
    path.write_text(SLEEPER)
    sc = load(str(path), {}).seeded()  # as a run does before its users start
    from bench_dsl.core.dsn import parse_dsn

    fleet = ProcessFleet(sc, parse_dsn(dsn_url), ("nap",), 3, lambda msg, level: None)
    assert fleet.share(10) == [4, 3, 3]
    assert fleet.share(2) == [1, 1, 0]
    await fleet.start()
    try:
        await fleet.resize(7)
        assert fleet.active == 7
        assert await _collected(fleet, "nap", 1) > 0
        await fleet.resize(2)
        await _until(fleet, lambda: fleet.active == 2)
    finally:
        await fleet.stop()
    assert all(p.proc.returncode is not None for p in fleet.procs)


# Each transaction writes the server's count of connections made so far (its status variable
# Connections): once every user has connected it no longer grows, so a smaller count is a
# transaction that ran while some user was still connecting.
WITNESS = """
scenario "witness" {
  target env("BENCH_DSN")
  workload custom {
    transaction seen {
      query "INSERT INTO connect_witness SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = 'CONNECTIONS'"
    }
  }
  users 300
  duration 5s
}
"""


async def test_the_users_of_a_step_start_once_all_of_them_are_connected(dsn_url: str, tmp_path: Path) -> None:
    """Users that start as soon as they connect load the server while the others connect: 3,000 users
    on 2 cores left hundreds unconnected after 60 s (bench/connect.py measures it). Every user of a
    step, on every worker, connects before any of them runs a transaction."""
    from bench_dsl.core.dsn import parse_dsn
    from bench_dsl.server.connect import connect

    path = tmp_path / "witness.bench"
    path.write_text(WITNESS)
    sc = load(str(path), {}).seeded()
    dsn = parse_dsn(dsn_url)
    conn = await connect(dsn, dsn.database)
    try:
        async with conn.cursor() as cur:
            await cur.execute("CREATE OR REPLACE TABLE connect_witness (connections BIGINT NOT NULL)")
            fleet = ProcessFleet(sc, dsn, ("seen",), 2, lambda msg, level: None)
            await fleet.start()
            try:
                await fleet.resize(300)
                await cur.execute("SHOW GLOBAL STATUS LIKE 'Connections'")
                all_in = int((await cur.fetchone())[1])  # no user connects after the resize
                counted = await _collected(fleet, "seen", 301)
                assert fleet.health().connected == 300, fleet.health()
            finally:
                await fleet.stop()
            await cur.execute("SELECT COUNT(*), SUM(connections < %s) FROM connect_witness", (all_in,))
            ran, early = await cur.fetchone()
            await cur.execute("DROP TABLE connect_witness")
    finally:
        conn.close()
    assert ran >= counted > 300
    assert early == 0, f"{early} of {ran} transactions ran before the last user had connected"


async def test_a_dead_worker_fails_the_run_but_keeps_the_data(dsn_url: str, tmp_path: Path) -> None:
    path = tmp_path / "sleeper.bench"
    path.write_text(SLEEPER.replace("duration 4s", "duration 30s"))
    sc = load(str(path), {})
    sink = Collect()
    run = Run(sc, plan(sc), [sink], Options(workers=2))
    task = asyncio.create_task(run.execute())
    await _while_running(task, lambda: any(isinstance(e, ev.Interval) and e.row.phase == "hold" for e in sink.events),
                         "no interval of the hold")
    assert isinstance(run.fleet, ProcessFleet)
    os.kill(run.fleet.procs[1].proc.pid, signal.SIGKILL)
    before = sum(isinstance(e, ev.LiveTick) for e in sink.events)
    code = await asyncio.wait_for(task, 30)
    assert code == 1
    doc = sink.document.doc
    assert doc["status"] == "failed"
    assert doc["stop"]["reason"] == "worker_failed"
    assert doc["intervals"] and doc["summary"]["count"] > 0
    # the surviving worker's last second (its report came with the failure) is counted, streamed,
    # and in the figures: every measured tick adds up to the run's count
    assert sum(isinstance(e, ev.LiveTick) for e in sink.events) > before  # the one whose report failed
    ticks = [e.figures for e in sink.events if isinstance(e, ev.LiveTick) and e.phase == "hold"]
    assert sum(t.count or 0 for t in ticks[-1].transactions.values()) > 0
    assert sum(c.count or 0 for t in ticks for c in t.transactions.values()) == doc["summary"]["count"]
    hold = [i for i in doc["intervals"] if i["phase"] == "hold"]
    assert sum(i["count"] for i in hold) == doc["summary"]["count"]
    me = psutil.Process()
    assert not [c for c in me.children(recursive=True) if "bench_dsl.fleet.worker" in " ".join(c.cmdline())]


PACED_LOSS = """
scenario "paced loss" {
  target env("BENCH_DSN")
  workload custom {
    transaction nap { query "SELECT SLEEP(0.02)" }
  }
  rate 100 tps
  users max 8
  warmup 1s
  duration 30s
  report every 1s
  on worker loss continue
}
"""


async def test_a_rate_stays_whole_on_the_workers_left_after_a_loss(dsn_url: str, tmp_path: Path) -> None:
    """Worker 2 of 2 killed in the hold of a 100 tps rate, on worker loss continue: the survivor
    offers the whole rate with its 4 users (200 a second at most), not its half of it."""
    path = tmp_path / "paced.bench"
    path.write_text(PACED_LOSS)
    sc = load(str(path), {})
    sink = Collect()
    run = Run(sc, plan(sc), [sink], Options(workers=2))
    task = asyncio.create_task(run.execute())

    def hold_ticks() -> list[ev.LiveTick]:
        return [e for e in sink.events if isinstance(e, ev.LiveTick) and e.phase == "hold"]

    await _while_running(task, lambda: len(hold_ticks()) >= 2, "no tick of the hold")
    assert isinstance(run.fleet, ProcessFleet)
    os.kill(run.fleet.procs[1].proc.pid, signal.SIGKILL)
    await _while_running(task, lambda: any(isinstance(e, ev.WorkerLostEvent) for e in sink.events), "the loss was not seen")
    lost_at = len(sink.events)
    # how it ended is said: a worker that "exited" alone left a 10,000-user run's failure unexplained
    said = next(e for e in sink.events if isinstance(e, ev.WorkerLostEvent)).reasons
    assert any("worker process 1 exited, killed by SIGKILL" in r for r in said), said
    await _while_running(task, lambda: sum(isinstance(e, ev.LiveTick) for e in sink.events[lost_at:]) >= 5,
                         "no ticks after the loss")
    run.request_stop()  # what follows the loss is what this test is about: the rest of the hold is not needed
    await asyncio.wait_for(task, 30)
    ticks = [e for e in sink.events[lost_at:] if isinstance(e, ev.LiveTick)]
    after = ticks[1:5]  # the loss's own tick aside
    offered = sum(e.figures.declared["offered_tps"] or 0.0 for e in after) / len(after)
    assert offered == pytest.approx(100, rel=0.1), [e.figures.declared["offered_tps"] for e in after]
    assert all(e.users == 4 for e in after), [e.users for e in after]
    # the loss's own tick (the first after it is said): worker 2's half was due too, and no user of it
    # was left to start it
    loss = sink.events.index(next(e for e in sink.events if isinstance(e, ev.WorkerLostEvent)))
    own = next(e for e in sink.events[loss:] if isinstance(e, ev.LiveTick))
    assert own.figures.declared["offered_tps"] == pytest.approx(100, rel=0.2), own.figures
    assert (own.figures.declared["dropped_per_s"] or 0.0) >= 30, own.figures
    rows = [e.row for e in sink.events if isinstance(e, ev.Interval)]
    for before, row in itertools.pairwise(rows):
        assert before.t <= row.start_s <= row.t, (before, row)


class _Paced:
    """A session that waits 0.2 s before each transaction, as a TPC-C terminal keys and thinks."""

    paced = True
    ran = 0  # transactions run, by every session

    def __init__(self) -> None:
        self.stmt = None

    async def pause(self, tx: int) -> None:
        await asyncio.sleep(0.2)

    async def run(self, conn, tx: int) -> int:  # type: ignore[no-untyped-def]
        if self.stmt is None:
            self.stmt = await conn.prepare("SELECT 1")
        await self.stmt.execute(())
        _Paced.ran += 1
        return 1

    def forget(self) -> None:
        self.stmt = None


async def test_pauses_are_not_part_of_the_response_time(dsn_url: str) -> None:
    from bench_dsl.core.dsn import parse_dsn
    from bench_dsl.fleet.users import UserPool
    from bench_dsl.measure.recorder import Recorder

    class Workload:
        names, weights, retries, retry_on = ("t",), (1.0,), (0,), (frozenset(),)
        raw = False  # its transactions are Python's: none for the C executor

        def session(self, rng, user):  # type: ignore[no-untyped-def]
            return _Paced()

    rec = Recorder(("t",))
    pool = UserPool(parse_dsn(dsn_url), Workload(), rec, 1)  # type: ignore[arg-type]
    await pool.resize(2)
    rec.swap()
    start, first = time.monotonic(), _Paced.ran
    deadline = start + 60  # a hung test's, never a slow machine's: the wait ends at the 12th transaction
    while _Paced.ran < first + 12:
        assert time.monotonic() < deadline, "the users ran no 12 transactions"
        await asyncio.sleep(0.01)
    st = rec.swap()["t"]
    took = time.monotonic() - start
    await pool.stop_all(1.0)
    # two users pausing 0.2 s before each transaction: no more than the time allows (a loaded machine
    # makes them fewer), and, counted as they ran (the last two may be recorded after the take) ...
    assert 10 <= st.count <= 2 * (took / 0.2 + 1), (st.count, took)
    # ... none of them 0.2 s long on average: a pause measured would make each at least that (one
    # SELECT 1 answered late on a loaded machine is no pause: 195 ms seen)
    assert st.total_us / st.count < 200_000, st.total_us / st.count  # microseconds


@pytest.mark.slow
def test_a_folder_named_like_the_package_in_the_current_directory_is_never_imported(dsn_url: str,
                                                                                    tmp_path: Path) -> None:
    """Run from a checkout of this repository (or any folder holding a bench_dsl/), the workers
    import the installed package, as the coordinator does, not the folder."""
    import json
    import subprocess
    import sys

    fake = tmp_path / "bench_dsl"
    fake.mkdir()
    marker = tmp_path / "imported"
    (fake / "__init__.py").write_text(f"open({str(marker)!r}, 'w').close()\nraise ImportError('the shadow')\n")
    (fake / "worker.py").write_text("")
    scenario = tmp_path / "s.bench"
    scenario.write_text(SLEEPER.replace("transaction nap { query \"SELECT SLEEP(0.02)\" }",
                                        "transaction nap { query \"SELECT 1\" }").replace("duration 4s", "duration 2s"))
    bench = Path(sys.executable).parent / "bench"  # the installed command, as a user runs it
    r = subprocess.run([str(bench), "run", "s.bench", "--workers", "2", "--json", "r.json"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert not marker.exists()
    doc = json.loads((tmp_path / "r.json").read_text())
    assert doc["workers"] == 2 and doc["summary"]["count"] > 0
