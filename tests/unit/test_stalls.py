"""Stalls (bench_dsl.measure.stalls) and the judge's rule on them, and every condition in a step's row, on
the fake fleet (tests/fakes.py): a server that answers nothing for some seconds of a step. The
real server, stopped with SIGSTOP, is tests/e2e/test_failures.py's."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from bench_dsl.engine import events as ev
from bench_dsl.engine.judge import stalled
from bench_dsl.engine.runner import Run
from bench_dsl.language.model import Metric
from bench_dsl.measure.metrics import Aggregate, TickStats
from bench_dsl.measure.txstats import TxStats
from bench_dsl.measure.stalls import BREAK_S, Quiet, Stalls, quiet_spans

from ..fakes import FakeCpu, FakeFleet
from .test_judge import Events, fake_run, flat_after, run_fake, scenario


# the spans -----------------------------------------------------------------------------------------
def test_the_fleet_is_quiet_only_where_every_process_was() -> None:
    a = Quiet(((1.0, 4.0), (5.0, 5.5)), 9.0, 9.5)  # then still quiet since 9.0
    b = Quiet(((2.0, 6.0),), 9.8, 9.9)
    assert quiet_spans([a, b], 0.0, 10.0) == [(2.0, pytest.approx(4.0 - BREAK_S)), (5.0, pytest.approx(5.5 - BREAK_S)),
                                              (9.8, 10.0)]
    # a process with no user (none completed yet) does not hold the others' stalls back
    assert quiet_spans([a, Quiet((), None, 9.9)], 3.0, 10.0) == [(3.0, pytest.approx(4.0 - BREAK_S)),
                                                                 (5.0, pytest.approx(5.5 - BREAK_S)), (9.0, 10.0)]
    assert quiet_spans([], 0.0, 10.0) == []  # nobody said: nothing is known


def test_users_waiting_for_their_arrivals_are_no_stall() -> None:
    """0.5 tps of a 0.25 ms transaction: a completion every 2 s, and between two of them both users
    waited for their next arrival but for the last 0.25 ms. The gaps alone (what a process that says
    nothing of its users' idleness reports) made the whole step one stall after another."""
    gaps = tuple((2.0 * k + 0.00025, 2.0 * (k + 1) + 0.00025) for k in range(5))
    idle = tuple((2.0 * k + 0.00025, 2.0 * (k + 1)) for k in range(5))  # from a completion to the next send
    assert Stalls.of(quiet_spans([Quiet(gaps, 10.00025, 10.5, idle, 10.00025)], 0.0, 10.5)).spans == ()
    assert Stalls.of(quiet_spans([Quiet(gaps, 10.00025, 10.5)], 0.0, 10.5)).total_s > 9


def test_a_user_inside_a_transaction_in_any_process_makes_the_fleet_s_quiet_a_stall() -> None:
    """A process whose users are all idle holds no stall back (it finished nothing either), nor makes
    one: the fleet stalls where no process finished anything and some user was inside."""
    stuck = Quiet((), 1.0, 6.0, ((1.0, 1.5),), None)  # finished at 1.0, a user inside since 1.5
    idle = Quiet((), None, 6.0, (), 0.0)  # none of its users inside, ever
    assert quiet_spans([stuck, idle], 0.0, 6.0) == [(1.5, 6.0)]
    left = Quiet((), 1.0, 6.0, (), 1.0)  # finished at 1.0, and no user inside since
    assert quiet_spans([left, idle], 0.0, 6.0) == []
    # idle for a while, inside again: the stall starts at its send, and ends at the next completion
    back = Quiet(((1.0, 5.0),), 5.0, 6.0, ((1.0, 3.0),), 5.0)
    assert quiet_spans([back], 0.0, 6.0) == [(3.0, pytest.approx(5.0 - BREAK_S))]


def test_idle_spans_cross_the_wire_and_a_report_without_them_is_never_idle() -> None:
    q = Quiet(((1.0, 2.0),), 2.0, 3.0, ((1.0, 1.5),), 2.0)
    assert Quiet.from_wire(q.to_wire()) == q
    old = Quiet.from_wire([[[1.0, 2.0]], 2.0, 3.0])  # a worker of before idle spans
    assert old == Quiet(((1.0, 2.0),), 2.0, 3.0) and old.idle == () and old.idle_from is None
    assert Quiet.from_counts(([(10**9, 2 * 10**9)], 2 * 10**9, 3 * 10**9, [(0, 10**9)], None)) == \
        Quiet(((1.0, 2.0),), 2.0, 3.0, ((0.0, 1.0),), None)


def test_gaps_either_side_of_a_completion_are_two_not_one_stall() -> None:
    """Two users sleeping 0.2 s in step leave gaps of 0.2 s end to end, each ended by a completion:
    joined, they made one stall of the whole step (a step of SELECT SLEEP(0.2) called frozen)."""
    gaps = tuple((k * 0.2, (k + 1) * 0.2) for k in range(15))
    spans = quiet_spans([Quiet(gaps, 3.0, 3.1)], 0.0, 3.1)
    assert Stalls.of(spans).longest_s < 0.21 and Stalls.of(spans).total_s == 0.0
    # a gap cut by a tick's end goes on in the next tick: one stall
    assert Stalls.of(quiet_spans([Quiet(((0.5,  2.0),), 0.5, 1.0)], 0.0, 1.0)
                     + quiet_spans([Quiet(((0.5, 2.0),), 2.0, 2.5)], 1.0, 2.5)).longest_s == pytest.approx(1.5 - BREAK_S)


def test_a_stall_across_ticks_is_one_stall() -> None:
    stalls = Stalls.of([(4.0, 5.0), (2.5, 3.0), (3.0, 4.0), (7.0, 7.01), (8.0, 9.2)])
    assert stalls.spans == ((2.5, 5.0), (8.0, 9.2))  # 10 ms is below what is recorded
    assert stalls.longest == (2.5, 5.0) and round(stalls.total_s, 3) == 3.7
    assert stalls.to_json() == {"stall_s": 2.5, "stall_total_s": 3.7, "stalls": [[2.5, 5.0], [8.0, 9.2]]}


def _step(seconds: int, stalls: list[tuple[float, float]]) -> Aggregate:
    agg = Aggregate(("read",))
    for k in range(seconds):
        mine = [(max(a, k), min(b, k + 1.0)) for a, b in stalls if a < k + 1 and b > k]
        agg.add(TickStats(k + 1.0, 1.0, "hold", 1, 4, {}, {}, stalls=mine))
    return agg


def test_the_rule_one_long_stall_or_a_quarter_of_the_step() -> None:
    assert stalled(_step(20, [(12.0, 22.0)])) == "the server answered nothing for 8.0 s (12.0-20.0 s)"
    assert stalled(_step(20, [(2.0, 7.0)])) == "the server answered nothing for 5.0 s (2.0-7.0 s)"
    assert stalled(_step(20, [(2.0, 6.9)])) is None  # 4.9 s: under both bounds
    # three stalls of 2 s: 30% of 20 s
    why = stalled(_step(20, [(1.0, 3.0), (6.0, 8.0), (11.0, 13.0)]))
    assert why == ("the server answered nothing for 6.0 s in 3 stalls, 30% of the 20 s measured "
                   "(the longest 2.0 s, 1.0-3.0 s)")
    assert stalled(_step(20, [(1.0, 3.0), (6.0, 8.0)])) is None  # 20%
    # gaps under a second are a transaction's own time, not stalls: they never add up to the total
    assert stalled(_step(20, [(k + 0.1, k + 0.95) for k in range(20)])) is None
    unknown = Aggregate(("read",))
    unknown.add(TickStats(1.0, 1.0, "hold", 1, 4, {}, {}))
    assert stalled(unknown) is None and unknown.value(Metric("stall")) is None


def test_gaps_of_the_workloads_own_pace_are_no_stall_that_unmakes_a_step() -> None:
    """One user in transactions of 3 s finishes nothing for 3 s at a time: stalls as measured
    (stall_s), but the server answered; a freeze well past that pace still counts."""
    def slow_step(stalls: list[tuple[float, float]]) -> Aggregate:
        agg = Aggregate(("read",))
        for k in range(30):
            st = TxStats()
            if k % 3 == 2:  # one 3 s transaction done every third second
                st.hist.record_value(3_000_000)
                st.count, st.total_us = 1, 3_000_000
            mine = [(max(a, k), min(b, k + 1.0)) for a, b in stalls if a < k + 1 and b > k]
            agg.add(TickStats(k + 1.0, 1.0, "hold", 1, 1, {"read": st}, {}, stalls=mine))
        return agg

    pace = slow_step([(k + 0.01, k + 3.0) for k in range(0, 30, 3)])
    assert pace.value(Metric("stall")) == pytest.approx(2.99) and stalled(pace) is None
    frozen = slow_step([(0.01, 3.0), (3.01, 15.0), (15.01, 18.0)])  # a 12 s freeze among them
    assert stalled(frozen) == "the server answered nothing for 12.0 s (3.0-15.0 s)"


# the run on the fake fleet ------------------------------------------------------------------------
async def _run(tmp_path: Path, body: str, frozen: Callable[[int, int], bool]) -> tuple[Events, Run]:
    sc = scenario(tmp_path, body)
    sink = Events()
    run = fake_run(sc, sink)
    await run.measure(FakeFleet(flat_after(100), frozen=frozen, clock=run.clock), FakeCpu())  # type: ignore[arg-type]
    run.finish()
    return sink, run


async def test_a_step_frozen_for_six_of_its_eight_seconds_is_not_clean_nor_the_saturation_point(tmp_path: Path) -> None:
    # at 2 users the server answers nothing from the first second's end to the seventh's
    events, run = await _run(tmp_path, "ramp step { start 1 users step +1 users settle 1s hold 8s max 3 users }",
                             lambda users, k: users == 2 and 2 <= k <= 7)
    doc = events.document.doc
    s1, s2, s3 = doc["steps"]
    assert s1["complete"] and s3["complete"] and s1["stall_s"] == 0 and s3["stall_s"] == 0
    # from the first collect that found nothing (the step's 2nd second: 10 s into the run) to the 8th
    assert not s2["complete"] and s2["stall_s"] == 6 and s2["stall_total_s"] == 6 and s2["stalls"] == [[10, 16]]
    assert s2["incomplete_reason"] == "the server answered nothing for 6.0 s (10.0-16.0 s)"
    # the intervals record it too
    assert max(i["stall_s"] for i in doc["intervals"] if i["step"] == 2) == 6
    assert any(w.startswith("s2: the server answered nothing for ") and "not a clean measured step" in w
               for w in doc["warnings"])
    # the run goes on to its end; the climb's clean steps are 1 and 3
    assert doc["status"] == "completed" and run.exit_code == 0
    assert doc["saturation"]["users"] == 3 and doc["saturation"]["steps_completed"] == 2
    # shown live: the step's longest stall so far in its ticks
    assert max(t.figures.stall_s or 0 for t in events.of(ev.LiveTick) if t.step == 2) == 6


async def test_a_stall_is_a_stop_condition_judged_per_step_and_for_a_window(tmp_path: Path) -> None:
    frozen = lambda users, k: users == 2 and 2 <= k <= 6  # noqa: E731  about 5 s without an answer
    events, run = await _run(tmp_path, "ramp step { start 1 users step +1 users settle 1s hold 8s max 3 users }\n"
                             "report every 1s  stop when { stall > 2s }", frozen)
    doc = events.document.doc
    assert doc["stop"]["condition"] == "stall > 2s" and doc["stop"]["value"] == 5 and doc["stop"]["unit"] == "s"
    assert doc["saturation"]["users"] == 1 and run.exit_code == 0
    live = [s for c in events.of(ev.Conditions) for s in c.states]
    assert any(s.state == "over" and s.source == "step 2 so far" for s in live)  # before the step's end
    # sustained: the window holds the stall, and fires at once
    events, _ = await _run(tmp_path, "ramp step { start 1 users step +1 users settle 1s hold 8s max 3 users }\n"
                           "stop when { stall > 2s for 4s }", frozen)
    doc = events.document.doc
    assert doc["stop"]["condition"] == "stall > 2s for 4s" and doc["stop"]["step"] == 2
    assert doc["saturation"]["users"] == 1


# every condition in each step's row --------------------------------------------------------------
async def test_each_step_lists_every_condition_sustained_ones_at_their_worst_window(tmp_path: Path) -> None:
    sc = scenario(tmp_path, "ramp step { start 1 users step x2 settle 1s hold 4s max 4 users }\n"
                            "stop when { p90 > 1s for 2s  tps < 5  p90 > 15ms for 3s }")
    # latency 5 ms at 1 user, 10 at 2, 20 at 4: the last window fires at 4 users
    events, _, _ = await run_fake(sc, lambda users: {"read": (100.0 * users, 5.0 * users)})
    steps = events.document.doc["steps"]
    assert [s["complete"] for s in steps] == [True, True, False]
    for s in steps:
        assert [c["condition"] for c in s["conditions"]] == ["p90 > 1s for 2s", "tps < 5", "p90 > 15ms for 3s"]
    first = {c["condition"]: c for c in steps[0]["conditions"]}
    sustained = first["p90 > 1s for 2s"]
    assert sustained["value"] == pytest.approx(5.0, rel=0.01) and sustained["window_s"] == 2 and not sustained["fired"]
    assert (sustained["limit"], sustained["unit"]) == (1000.0, "ms")
    last = {c["condition"]: c for c in steps[2]["conditions"]}
    assert last["p90 > 15ms for 3s"]["fired"] and last["p90 > 15ms for 3s"]["value"] == pytest.approx(20.0, rel=0.01)
    assert not last["tps < 5"]["fired"] and last["tps < 5"]["value"] > 5  # cut short: its value, not judged
    assert steps[2]["incomplete_reason"] == "the run stopped during the step"
    # the event stream says the same (its step events are the rows)
    assert [len(e.row.conditions) for e in events.of(ev.StepEnded)] == [3, 3, 3]



async def test_compare_shows_every_condition_where_each_configuration_s_climb_ended(tmp_path: Path) -> None:
    from bench_dsl.results.comparison import compare
    from bench_dsl.results.summary import summarize

    docs = []
    for knee in (2, 4):
        sc = scenario(tmp_path, "ramp step { start 1 users step x2 settle 1s hold 3s max 8 users }\n"
                                "stop when { tps plateau 10%  p90 > 1s for 2s }")
        events, _, _ = await run_fake(sc, flat_after(knee))
        docs.append(events.document.doc)
    table = compare(summarize(docs), force=True)
    (row,) = [r for r in table["rows"] if r["metric"] == "condition"]
    first, second = (cell["verdicts"][0] for cell in row["cells"])
    for v, doc in zip((first, second), docs):  # the last step of each: where the climb ended
        plateau, sustained = v["conditions"]
        assert v["users"] == doc["steps"][-1]["users"] and plateau["condition"] == "tps plateau 10%"
        assert plateau["fired"] and doc["stop"]["condition"] == "tps plateau 10%"
        assert sustained["condition"] == "p90 > 1s for 2s" and not sustained["fired"]
        assert sustained["window_s"] == 2 and sustained["unit"] == "ms" and sustained["value"] is not None


def test_stall_is_a_duration_of_the_whole_run() -> None:
    from bench_dsl.core.errors import ScenarioError
    from bench_dsl.engine.scenario_file import load

    def scenario_text(stop: str) -> str:
        return ('scenario "t" { workload custom { transaction read { query "SELECT 1" } }\n'
                f"ramp step {{ start 1 users step +1 users hold 10s max 4 users }}\nstop when {{ {stop} }} }}\n")

    c, w = load("t.bench", text=scenario_text("stall > 1s  stall > 500ms for 3s"), env={}).stop
    assert (c.metric, c.limit, c.unit, c.window) == (Metric("stall"), 1.0, "s", None)
    assert (w.limit, w.window) == (0.5, 3.0)
    with pytest.raises(ScenarioError) as e:
        load("t.bench", text=scenario_text("stall(read) > 1s  stall > 1  stall plateau 5%"), env={})
    out = e.value.render()
    assert "stall is the whole run's (no user finished a transaction): it takes no (name)" in out
    assert "stall is a time: give the limit a unit" in out and "hint: stall > 1s" in out
    assert "plateau applies to throughput" in out and "stall kink" not in out  # kink is a latency's


def test_a_long_run_keeps_its_stalls_not_a_piece_a_second() -> None:
    agg = Aggregate(("read",))
    for k in range(3600):  # an hour of ticks, each ending with a moment of quiet before its collect
        agg.add(TickStats(k + 1.0, 1.0, "hold", 1, 4, {}, {}, stalls=[(k + 0.999, k + 1.0)]))
    agg.add(TickStats(3601.0, 1.0, "hold", 1, 4, {}, {}, stalls=[(3600.0, 3601.0)]))  # joins the last piece
    assert len(agg._stall_pieces or []) <= 2
    assert agg.stalls() == Stalls(((3599.999, 3601.0),))


def test_a_run_whose_only_step_stalled_is_no_measured_point() -> None:
    """compare and summary take a run's summary for its one step only when that step was cut short
    by the stop; a step left out because it stalled is no measurement of those users at all."""
    from bench_dsl.engine.judge import CUT_SHORT
    from bench_dsl.results.fold import measured_steps

    summary = {"users": 4, "seconds": 10.0, "tps": 100.0}
    stalled = {"steps": [{"step": 1, "users": 4, "complete": False,
                          "incomplete_reason": "the server answered nothing for 6.0 s (2.0-8.0 s)"}], "summary": summary}
    cut = {"steps": [{"step": 1, "users": 4, "complete": False, "incomplete_reason": CUT_SHORT}], "summary": summary}
    assert measured_steps(stalled) == []
    assert measured_steps(cut) == [(None, summary)]


# a step that is not clean is judged only by its stalls (issue 38) -----------------------------------
FROZEN_STEP_2 = "ramp step { start 1 users step +1 users settle 1s hold 8s max 3 users }\n"


async def test_a_frozen_step_is_not_judged_by_its_throughput_the_climb_goes_on(tmp_path: Path) -> None:
    """Step 2 froze (no answer for about 6 of its 8 s): its throughput against step 1's is a
    plateau, which blamed the load for the freeze. Not judged: the climb goes on, and step 3 is
    compared with step 1, the last clean one."""
    events, run = await _run(tmp_path, FROZEN_STEP_2 + "stop when { tps plateau 1%  p90 > 1s }",
                             lambda users, k: users == 2 and 2 <= k <= 7)
    doc = events.document.doc
    assert doc["stop"] is None and run.exit_code == 0, doc["stop"]
    s1, s2, s3 = doc["steps"]
    assert not s2["complete"] and s1["complete"] and s3["complete"]
    plateau = s2["conditions"][0]
    assert plateau["condition"] == "tps plateau 1%" and not plateau["fired"] and plateau["value"] < plateau["previous"]
    assert s3["conditions"][0]["previous"] == pytest.approx(s1["tps"], rel=0.01)  # step 1, not step 2
    assert doc["saturation"]["users"] == 3 and doc["saturation"]["steps_completed"] == 2
    assert any(w.startswith("s2: tps plateau 1%  (this step ") and w.endswith(
        ": not judged, the step is not a clean measurement") for w in doc["warnings"]), doc["warnings"]
    live = [s for c in events.of(ev.Conditions) for s in c.states if s.text == "tps plateau 1%"]
    assert any(s.source == "step 2, not clean: not judged" and s.state == "over" for s in live)
    assert all(s.state != "fired" for s in live)


async def test_a_frozen_step_ends_the_climb_on_its_stall_not_on_its_throughput(tmp_path: Path) -> None:
    events, _ = await _run(tmp_path, FROZEN_STEP_2 + "stop when { tps plateau 1%  stall > 1s }",
                           lambda users, k: users == 2 and 2 <= k <= 7)
    doc = events.document.doc
    assert doc["stop"]["condition"] == "stall > 1s" and doc["stop"]["step"] == 2
    assert doc["saturation"]["users"] == 1 and doc["saturation"]["reason"] == "stopped by: stall > 1s"
    assert [c["fired"] for c in doc["steps"][1]["conditions"]] == [False, True]


def test_a_window_of_a_frozen_server_fires_only_a_stall_condition() -> None:
    """`for D` conditions are judged over their window: one in which the server answered nothing
    is no measurement of its throughput either; the stall condition fires."""
    from bench_dsl.engine.scenario_file import load
    from tests.fakes import judge_of

    text = ('scenario "t" { workload custom { transaction read { query "SELECT 1" } }\n'
            "users 4  duration 10s\nstop when { tps < 50 for 3s  stall > 2s for 3s } }\n")
    conditions = load("t.bench", text=text, env={}).stop
    ticks = [TickStats(k + 1.0, 1.0, "hold", 1, 4, {}, {}, stalls=[(float(k), k + 1.0)]) for k in range(3)]
    judge = judge_of(conditions, ("read",))
    fired = [judge.tick(t) for t in ticks]
    assert fired[:2] == [None, None] and fired[2] is not None and fired[2].condition.text == "stall > 2s for 3s"
    judge = judge_of(conditions[:1], ("read",))  # throughput alone: never fired by a freeze
    assert [judge.tick(t) for t in ticks] == [None, None, None]
