"""The scheduler and the judge on a fake fleet (tests/fakes.py): the run's own code from a plan to
its events and result document, on a virtual clock (a phase's seconds take no time, and every run
gives the same figures whatever the machine's load), without a server."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench_dsl.engine import events as ev
from bench_dsl.engine.judge import spec, state_of
from bench_dsl.engine.plan import plan
from bench_dsl.engine.runner import Run
from bench_dsl.engine.scenario_file import load
from bench_dsl.language.model import Condition, Scenario
from bench_dsl.measure.metrics import Aggregate, TickStats
from bench_dsl.results.document import ResultDocument
from bench_dsl.tui.live_conditions import show_limit, show_value

from ..fakes import FakeCpu, FakeFleet, Model, VirtualClock, judge_of


class Events:
    def __init__(self) -> None:
        self.all: list[ev.Event] = []
        self.document = ResultDocument()

    def emit(self, event: ev.Event) -> None:
        self.all.append(event)
        self.document.apply(event)

    def close(self) -> None:
        pass

    def of(self, kind: type[ev.Event]) -> list[ev.Event]:
        return [e for e in self.all if isinstance(e, kind)]


def scenario(tmp_path: Path, body: str, txs: tuple[str, ...] = ("read",)) -> Scenario:
    f = tmp_path / "s.bench"
    mix = " ".join(f'transaction {t} {{ query "SELECT 1" }}' for t in txs)
    f.write_text(f'scenario "fake" {{ seed 1  workload custom {{ {mix} }}\n{body}\n}}')
    return load(str(f))


def fake_run(sc: Scenario, sink: Events) -> Run:
    """A run of `sc` on a virtual clock, begun (its fleet's clock is to be `run.clock` too)."""
    run = Run(sc, plan(sc), [sink], clock=VirtualClock())
    run.t0 = run.clock.now()
    run.publish(ev.Begin("test", "now", ev.ScenarioInfo(sc.name), ev.Machine.from_json({})))
    return run


async def run_fake(sc: Scenario, model: Model, cpu: FakeCpu | None = None) -> tuple[Events, FakeFleet, Run]:
    sink = Events()
    run = fake_run(sc, sink)
    fleet = FakeFleet(model, second=1.0, clock=run.clock)  # counts for as long as each tick lasted
    await run.measure(fleet, cpu or FakeCpu())  # type: ignore[arg-type]
    run.finish()
    return sink, fleet, run


def flat_after(knee: int, per_user: float = 100.0, ms: float = 5.0) -> Model:
    """Throughput grows with users up to `knee`, then stays; latency grows with the queue."""
    return lambda users: {"read": (per_user * min(users, knee), ms * max(1.0, users / knee))}


# the scheduler ------------------------------------------------------------------------------------
async def test_the_scheduler_walks_the_phases_sets_the_users_and_ticks_each_second(tmp_path: Path) -> None:
    sc = scenario(tmp_path, "warmup 2s  ramp step { start 1 users step x2 settle 1s hold 3s max 4 users }")
    events, fleet, _ = await run_fake(sc, flat_after(100))
    assert fleet.resizes == [1, 1, 2, 2, 4, 4]
    assert [(p.phase, p.step, p.users) for p in events.of(ev.PhaseBegan)] == [
        ("warmup", None, 1), ("hold", 1, 1), ("settle", 2, 2), ("hold", 2, 2), ("settle", 3, 4), ("hold", 3, 4)]
    ticks = events.of(ev.LiveTick)
    assert [sum(1 for t in ticks if (t.phase, t.step) == k) for k in
            (("warmup", None), ("hold", 1), ("settle", 2), ("hold", 2), ("settle", 3), ("hold", 3))] == [2, 3, 1, 3, 1, 3]
    steps = [s.row.to_json() for s in events.of(ev.StepEnded)]
    assert [(s["step"], s["users"], s["complete"]) for s in steps] == [(1, 1, True), (2, 2, True), (3, 4, True)]
    assert [s["tps"] for s in steps] == [100, 200, 400]


async def test_a_runs_measuring_leaves_nothing_frozen_from_the_collector_after_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run.measure freezes what the run holds (gc.freeze: the ticks' collections skip it) and
    unfreezes it at its end, so that a study's next run frees this one's."""
    import gc

    sc = scenario(tmp_path, "users 2  duration 2s")
    frozen = []
    original = FakeFleet.collect

    async def collect(self: FakeFleet) -> object:
        frozen.append(gc.get_freeze_count())
        return await original(self)

    monkeypatch.setattr(FakeFleet, "collect", collect)
    await run_fake(sc, flat_after(100))
    assert frozen and all(n > 0 for n in frozen)
    assert gc.get_freeze_count() == 0


async def test_a_linear_ramp_moves_the_users_within_its_phase(tmp_path: Path) -> None:
    sc = scenario(tmp_path, "ramp linear from 1 to 9 users over 4s  duration 6s")
    _, fleet, _ = await run_fake(sc, flat_after(100))
    # after each of the ramp's 4 ticks, a quarter of the way further (the clock is virtual: always these)
    assert fleet.resizes == [1, 3, 5, 7, 9]


# the judge through a run ---------------------------------------------------------------------------
async def test_a_plateau_ends_the_climb_and_the_step_before_is_the_saturation_point(tmp_path: Path) -> None:
    sc = scenario(tmp_path, "ramp step { start 1 users step x2 settle 1s hold 2s max 32 users }\n"
                            "stop when { tps plateau 10%  p90 > 1s }")
    events, fleet, run = await run_fake(sc, flat_after(4))
    doc = events.document.doc
    assert doc["stop"]["reason"] == "stop_condition" and doc["stop"]["condition"] == "tps plateau 10%"
    assert doc["saturation"]["users"] == 4 and doc["saturation"]["saturated"]
    assert max(fleet.resizes) == 8  # the climb ended at the step that did not grow
    fired = events.of(ev.Fired)
    assert len(fired) == 1 and fired[0].stop.step == 4  # type: ignore[attr-defined]
    assert run.exit_code == 0 and doc["status"] == "completed"


async def test_the_live_values_are_the_ones_the_judge_then_judges(tmp_path: Path) -> None:
    """Just before each step's verdict, the conditions' states show the values the verdict then
    judges, for every kind judged at a step's end (threshold, plateau, kink, error rate)."""
    sc = scenario(tmp_path, "ramp step { start 1 users step x2 settle 1s hold 3s max 16 users }\n"
                            "report every 1s\n"
                            "stop when { p90(read) > 1s  tps plateau 1%  p90 kink 100x  error_rate > 90% }")
    events, _, _ = await run_fake(sc, flat_after(100, ms=2.0))
    latest: ev.Conditions | None = None
    checked = 0
    for e in events.all:
        if isinstance(e, ev.Conditions):
            latest = e
        elif isinstance(e, ev.StepEnded):
            assert latest is not None
            live = {s.text: s for s in latest.states}
            for v in e.row.conditions:
                assert live[v["condition"]].value == v["value"], (e.row.step, v["condition"])
                assert live[v["condition"]].source == f"step {e.row.step} so far"
                checked += 1
    assert checked == 5 * 4
    last = {s.text: s for s in events.of(ev.Conditions)[-1].states}  # type: ignore[attr-defined]
    assert last["tps plateau 1%"].source == "step 5" and last["tps plateau 1%"].previous is not None


async def test_a_for_window_fires_live_in_the_middle_of_a_step(tmp_path: Path) -> None:
    sc = scenario(tmp_path, "ramp step { start 1 users step +1 users settle 1s hold 10s max 3 users }\n"
                            "stop when { cpu(server) > 80% for 3s }")
    clock = {"n": 0}

    def server_cpu() -> float:
        clock["n"] += 1
        return 90.0 if clock["n"] > 13 else 20.0  # high from the second step's 2nd tick on

    events, _, _ = await run_fake(sc, flat_after(100), FakeCpu(server_cpu))
    stop = events.document.doc["stop"]
    assert stop["condition"] == "cpu(server) > 80% for 3s" and stop["window_s"] == 3 and stop["step"] == 2
    states = [s for c in events.of(ev.Conditions) for s in c.states]  # type: ignore[attr-defined]
    assert any(s.source == "last 2s of 3s" for s in states)  # the window filling up is shown as such
    assert states[-1].state == "fired" and states[-1].value == pytest.approx(90.0)
    step2 = [s.row.to_json() for s in events.of(ev.StepEnded) if s.row.step == 2]
    assert step2 and not step2[0]["complete"]  # cut short by the fired condition
    assert events.document.doc["saturation"]["users"] == 1


async def test_a_linear_ramp_is_judged_per_interval(tmp_path: Path) -> None:
    sc = scenario(tmp_path, "ramp linear from 1 to 8 users over 8s  duration 8s\n"
                            "report every 1s\nstop when { tps < 5  p99(read) > 50ms }")
    events, _, _ = await run_fake(sc, lambda users: {"read": (100.0 * users, 10.0 * users)})
    doc = events.document.doc
    assert doc["stop"]["condition"] == "p99(read) > 50ms"
    ok = [i for i in doc["intervals"] if i["measured"] and i["latency_ms"]["p99"] <= 50]
    assert doc["saturation"]["users"] == ok[-1]["users"]
    states = {s.text: s for s in events.of(ev.Conditions)[-1].states}  # type: ignore[attr-defined]
    assert states["tps < 5"].source == "last interval" and states["tps < 5"].state == "ok"
    assert states["p99(read) > 50ms"].state == "fired"


async def test_expectations_are_judged_on_the_whole_run(tmp_path: Path) -> None:
    sc = scenario(tmp_path, "ramp step { start 1 users step x2 settle 1s hold 2s max 4 users }\n"
                            "expect { saturation >= 8 users  tps > 10 }")
    events, _, run = await run_fake(sc, flat_after(100))
    expect = {e["expect"]: e for e in events.document.doc["expect"]}
    assert not expect["saturation >= 8 users"]["passed"] and expect["saturation >= 8 users"]["value"] == 4
    assert expect["tps > 10"]["passed"]
    assert run.exit_code == 3


@pytest.mark.parametrize(("processes", "limited"), [
    ({"coordinator": 10.0, "worker 1": 89.0, "worker 2": 89.0}, "of the machine"),  # 94% of 2 cores, none out of its own
    ({"coordinator": 5.0, "worker 1": 60.0, "worker 2": 60.0}, None),
    ({"coordinator": 5.0, "worker 1": 97.0, "worker 2": 20.0}, "worker 1 process used 97% of a core"),
])
async def test_a_climb_ended_by_the_clients_own_limit_says_so(processes: dict[str, float], limited: str | None,
                                                               tmp_path: Path) -> None:
    """The client's CPU comes from the fleet's reports: each process's own, added up."""
    sc = scenario(tmp_path, "ramp step { start 1 users step x2 settle 1s hold 2s max 32 users }\n"
                            "stop when { tps plateau 10% }\nexpect { saturation >= 2 users }")
    sink = Events()
    run = fake_run(sc, sink)
    run.judge.client_capacity_pct = 100.0  # the client's processes may use the whole machine
    fleet = FakeFleet(flat_after(4), second=1.0, cpu=lambda: processes, cores=2, clock=run.clock)
    await run.measure(fleet, FakeCpu())  # type: ignore[arg-type]
    run.finish()
    sat = sink.document.doc["saturation"]
    assert sat["users"] == 4 and sat["saturated"]
    (expect,) = sink.document.doc["expect"]
    if limited:
        assert sat["limited_by"] == "client" and "at least 4 users" in sat["reason"] and limited in sat["reason"]
        assert not expect["passed"] and "bench-dsl itself was the limit" in expect["reason"]
        assert run.exit_code == 3
    else:
        assert sat["limited_by"] is None and expect["passed"] and run.exit_code == 0


@pytest.mark.parametrize(("late_ms", "per_collect", "limited"), [
    (40.0, 12, "worker 2 process waited for a core (a thread of its woke 40 ms late"),
    (4.0, 12, None),  # under the bound
    (40.0, 4, None),  # over it, but on too few samples to tell a p90 from one hiccup
])
async def test_a_climb_ended_while_the_client_lagged_is_the_clients_own_limit(
        late_ms: float, per_collect: int, limited: str | None, tmp_path: Path) -> None:
    sc = scenario(tmp_path, "ramp step { start 1 users step x2 settle 1s hold 2s max 32 users }\n"
                            "stop when { tps plateau 10% }\nexpect { saturation >= 2 users }")
    sink = Events()
    run = fake_run(sc, sink)
    run.judge.client_capacity_pct = 100.0
    # worker 2's thread wakes `late_ms` late at one wakeup in four; its loop and worker 1 are on time
    lags = {"worker 1": {"loop": [0.3] * per_collect, "thread": [0.2] * per_collect},
            "worker 2": {"loop": [0.4] * per_collect,
                         "thread": [late_ms if i % 4 == 0 else 0.2 for i in range(per_collect)]}}
    fleet = FakeFleet(flat_after(4), lags=lambda: lags, second=1.0, cores=2, clock=run.clock,
                      cpu=lambda: {"coordinator": 1.0, "worker 1": 20.0, "worker 2": 20.0})
    await run.measure(fleet, FakeCpu())  # type: ignore[arg-type]
    run.finish()
    doc = sink.document.doc
    sat = doc["saturation"]
    last = doc["steps"][-1]
    assert last["client_lag_ms"]["thread"]["max"] == late_ms and last["client_lag_ms"]["loop"]["max"] == 0.4
    # the hold's collects add up: two in its 2 s
    assert last["client_lag_ms_by_process"]["worker 2"]["thread"]["samples"] == 2 * per_collect
    assert all("client_lag_ms" in i for i in doc["intervals"]) and "client_lag_ms" in doc["summary"]
    (expect,) = doc["expect"]
    if limited:
        assert sat["limited_by"] == "client" and limited in sat["reason"] and "at least 4 users" in sat["reason"]
        assert "over the bound of 10 ms" in sat["reason"]
        assert not expect["passed"] and limited in expect["reason"] and run.exit_code == 3
    else:
        assert sat["limited_by"] is None and expect["passed"] and run.exit_code == 0


async def test_errors_reach_the_document_by_code(tmp_path: Path) -> None:
    sc = scenario(tmp_path, "users 2  duration 3s  report every 1s", txs=("read", "write"))
    sink = Events()
    run = fake_run(sc, sink)
    fleet = FakeFleet(lambda users: {"read": (10.0, 1.0), "write": (5.0, 2.0)}, errors={"write": {1213: 2}},
                      clock=run.clock)
    await run.measure(fleet, FakeCpu())  # type: ignore[arg-type]
    run.finish()
    errors = events_errors = sink.document.doc["errors"]
    assert errors_total(events_errors) == 2 * 3 and errors[0]["code"] == 1213


def errors_total(errors: list[dict[str, int]]) -> int:
    return sum(e["count"] for e in errors)


# the judge's rules, unit by unit --------------------------------------------------------------------
def conditions(tmp_path: Path, *texts: str) -> dict[str, Condition]:
    sc = scenario(tmp_path, "ramp step { start 1 users step +1 users settle 1s hold 1s max 3 users }\n"
                            "stop when { " + "\n".join(texts) + " }", txs=("locked",))
    return {c.text: c for c in sc.stop}


def test_states_ok_near_over(tmp_path: Path) -> None:
    cs = conditions(tmp_path, "p90 > 200ms", "tps < 100", "tps plateau 10%", "p90 kink 4x", "error_rate == 0%")
    p90, tps, plateau, kink, exact = cs.values()
    assert [state_of(p90, v) for v in (0.100, 0.165, 0.200, 0.201)] == ["ok", "near", "near", "over"]
    assert [state_of(tps, v) for v in (200.0, 120.0, 99.0)] == ["ok", "near", "over"]
    # plateau: the gain over the step before (100 tps)
    assert [state_of(plateau, v, 100.0) for v in (130.0, 111.0, 105.0)] == ["ok", "near", "over"]
    assert plateau.comparison is not None and kink.comparison is not None
    assert show_value(spec(plateau), 111.0, plateau.comparison.figure(111.0, 100.0)) == "+11.0%"
    assert [state_of(kink, v, 10.0) for v in (20.0, 35.0, 41.0)] == ["ok", "near", "over"]
    assert show_value(spec(kink), 35.0, kink.comparison.figure(35.0, 10.0)) == "3.50x"
    assert state_of(plateau, 120.0, None) == "-"  # the first step has nothing to compare with
    assert state_of(exact, 0.0) == "over" and state_of(exact, 1.0) == "ok"  # no "near" for == or !=
    assert state_of(p90, None) == "-"
    # a second or more reads in seconds, as the file would write it
    p99 = spec(conditions(tmp_path, "p99 > 10s")["p99 > 10s"])
    assert (show_limit(p99), show_value(p99, 1500.0), show_value(p99, 5.15)) == ("> 10s", "1.5s", "5.15ms")


def test_values_are_given_in_the_files_units(tmp_path: Path) -> None:
    cs = conditions(tmp_path, "p90(locked) > 200ms", "p99.9 > 1s", "avg(locked) > 50ms", "tps < 10", "tpm < 600",
                    "qps < 5", "error_rate > 1%", "cpu(server) > 80%")
    judge = judge_of(tuple(cs.values()), ("locked",))
    fleet = FakeFleet(lambda users: {"locked": (40.0, 12.5)}, errors={"locked": {1062: 1}})
    import asyncio

    stats = asyncio.run(fleet.collect()).tx
    agg = Aggregate(("locked",))
    agg.add(TickStats(1.0, 1.0, "hold", 1, 4, stats, {"server": 55.0}))
    from bench_dsl.engine.phases import Phase

    judge.interval(Phase("hold", 1, 4, 4, 1.0, "step"), agg, agg)
    got = {s.text: s.value for s in judge.states()}
    assert got["p90(locked) > 200ms"] == pytest.approx(12.5, rel=0.01)
    assert got["p99.9 > 1s"] == pytest.approx(12.5, rel=0.01) and got["avg(locked) > 50ms"] == pytest.approx(12.5)
    assert (got["tps < 10"], got["tpm < 600"], got["qps < 5"]) == (40.0, 2400.0, 40.0)
    assert got["error_rate > 1%"] == pytest.approx(100 / 41, abs=1e-3)
    assert got["cpu(server) > 80%"] == 55.0


def test_the_seed_is_drawn_when_a_run_starts_not_when_the_file_is_read(tmp_path: Path) -> None:
    from bench_dsl.engine.plan_text import describe

    f = tmp_path / "s.bench"
    f.write_text('scenario "s" { workload custom { transaction t { query "SELECT 1" } } users 1 duration 1s }')
    sc = load(str(f))
    assert sc.seed is None and not sc.seed_given
    assert "seed:     random, drawn when the run starts" in describe(sc, plan(sc))
    a, b = Run(sc, plan(sc), []), Run(sc, plan(sc), [])
    assert isinstance(a.sc.seed, int) and a.sc.seed != b.sc.seed  # each run its own, recorded with it
    given = scenario(tmp_path, "users 1 duration 1s")  # seed 1
    assert Run(given, plan(given), []).sc.seed == 1


async def test_a_slow_collection_does_not_inflate_the_rate(tmp_path: Path) -> None:
    """The counts of a tick cover the time up to their collection: a worker that answers late
    (a thousand users starting) makes a longer tick, not a higher rate."""
    sc = scenario(tmp_path, "users 4  duration 4s  report every 1s")
    sink = Events()
    run = fake_run(sc, sink)
    fleet = FakeFleet(lambda users: {"read": (1000.0, 1.0)}, second=1.0, delays=[0.0, 0.8], clock=run.clock)
    await run.measure(fleet, FakeCpu())  # type: ignore[arg-type]
    run.finish()
    rates = [t.figures.tps for t in sink.of(ev.LiveTick)]  # type: ignore[attr-defined]
    # the first tick waited 0.8 s for its counts: 1.8 s long, at the same rate
    assert rates == pytest.approx([1000] * 4), rates
    assert sink.document.doc["summary"]["tps"] == pytest.approx(1000)


async def test_a_step_whose_users_are_not_all_connected_is_not_a_measured_step(tmp_path: Path) -> None:
    """3,000 users asked, 2,541 connected by the step's end, none refused: the step is incomplete
    and the saturation point is the step before, not the users asked for."""
    sc = scenario(tmp_path, "ramp step { start 2 users step x2 settle 1s hold 2s max 16 users }")
    sink = Events()
    run = fake_run(sc, sink)
    fleet = FakeFleet(flat_after(100), connectable=6, clock=run.clock)
    await run.measure(fleet, FakeCpu())  # type: ignore[arg-type]
    run.finish()
    doc = sink.document.doc
    assert doc["stop"]["reason"] == "users_not_connected" and doc["stop"]["connected"] == 6
    assert doc["stop"]["users"] == 8 and doc["saturation"]["users"] == 4 and doc["saturation"]["saturated"]
    assert [(s["step"], s["complete"]) for s in doc["steps"]] == [(1, True), (2, True), (3, False)]
    assert "6 of 8 users had a connection" in doc["saturation"]["reason"] and run.exit_code == 0
