"""The UI's logic without an app: the state folded from events, the stop conditions' live values and
states, the log, and the renderables as text. Fed by a recorded run (tests/fixtures/steps.jsonl)."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest
from rich.console import Console, RenderableType
from rich.style import Style

from bench_dsl.core.live_figures import TickFigures
from bench_dsl.engine import events as ev
from bench_dsl.engine.events import Event
from bench_dsl.engine.rows import IntervalRow
from bench_dsl.engine.phases import PlannedRun
from bench_dsl.engine.saturation import SaturationPoint
from bench_dsl.results import verdict
from bench_dsl.results.verdict import fmt_num
from bench_dsl.tui import render
from bench_dsl.tui.chart import Canvas, ThroughputChart, UsersChart, doubling, nice_ceiling, time_ticks
from bench_dsl.tui.state import MAX_POINTS, Boundary, LiveState, LogBook, StepPoint

from ..fixtures.replay import QUICKSTART, events, upto


def text_of(r: RenderableType, width: int = 120) -> str:
    c = Console(width=width, color_system=None, record=True, file=None, legacy_windows=False)
    with c.capture() as cap:
        c.print(r)
    return cap.get()


def fold(evs: list[Event]) -> LiveState:
    st = LiveState()
    for e in evs:
        st.apply(e)
    return st


# the conditions, as the judge's events say them ----------------------------------------------------
def test_the_board_through_the_recorded_run() -> None:
    evs = events()
    # step 5 so far: the plateau is read against step 4's throughput
    st = fold(upto(evs, lambda e: isinstance(e, ev.Interval) and e.row.step == 5 and e.row.measured, after=1))
    rows = {r.text: r for r in st.board.rows()}
    step4 = next(e.row.figures for e in evs if isinstance(e, ev.StepEnded) and e.row.step == 4)
    so_far = st.step_so_far
    assert so_far is not None and so_far.tps is not None
    gain = 100 * (so_far.tps - step4["tps"]) / step4["tps"]
    assert rows["tps plateau 10%"].value == f"{gain:+.1f}%"
    assert rows["p90(locked) > 200ms"].source == "step 5 so far"
    # `for 3s`: the mean of the last three measured ticks
    ticks = [e for e in evs if isinstance(e, ev.LiveTick) and e.step == 5 and e.phase == "hold"]
    st = fold(upto(evs, lambda e: e is ticks[3], after=1))  # the tick, then the judge's word on it
    cpu = sum(t.figures.cpu.server or 0.0 for t in ticks[1:4]) / 3
    row = {r.text: r for r in st.board.rows()}["cpu(server) > 95% for 3s"]
    assert row.source == "last 3s" and row.value == fmt_num(cpu) + "%" and row.state == "ok"
    # the last step's verdicts: p90 and the plateau both fired, before the `fired` event names p90
    st = fold(upto(evs, lambda e: isinstance(e, ev.StepEnded) and e.row.step == 6, after=1))
    rows = {r.text: r for r in st.board.rows()}
    assert rows["p90(locked) > 200ms"].state == "FIRED" and rows["tps plateau 10%"].state == "FIRED"
    assert rows["p90 kink 4x"].state == "ok" and rows["p90 kink 4x"].source == "step 6"
    st = fold(evs)
    rows = {r.text: r for r in st.board.rows()}
    assert (rows["p90(locked) > 200ms"].value, rows["p90(locked) > 200ms"].state) == ("246ms", "FIRED")


def test_conditions_the_judge_has_not_spoken_of_are_listed_with_their_limits() -> None:
    st = fold([e for e in events() if not isinstance(e, ev.Conditions)])
    rows = st.board.rows()
    assert [r.text for r in rows][:2] == ["p90(locked) > 200ms", "tps plateau 10%"]
    assert [(r.value, r.limit, r.state) for r in rows[:2]] == [("-", "> 200ms", "-"), ("-", "gain < 10%", "-")]


def test_the_board_shows_the_gain_and_ratio_the_judge_said_not_its_own() -> None:
    """Figures the judge gives that no arithmetic over value and previous would: the screen shows them."""
    evs = upto(events(), lambda e: isinstance(e, ev.Started))
    st = fold([*evs, ev.Conditions(10.0, (
        ev.ConditionState("tps plateau 10%", 120.0, 100.0, "near", "step 2 so far", 7.25, "gain", against=1),
        ev.ConditionState("p90 kink 4x", 30.0, 10.0, "near", "step 2 so far", 3.5, "ratio", against=1)))])
    rows = {r.text: r for r in st.board.rows()}
    assert (rows["tps plateau 10%"].value, rows["p90 kink 4x"].value) == ("+7.2%", "3.50x")  # not +20.0%, 3.00x
    # a state without them (recorded before the judge said them, rebuilt from a result): its formula
    st.apply(ev.Conditions(11.0, (ev.ConditionState("tps plateau 10%", 120.0, 100.0, "ok", "step 2"),)))
    assert {r.text: r for r in st.board.rows()}["tps plateau 10%"].value == "+20.0%"


async def test_the_judge_says_what_a_plateau_and_a_kink_compared(tmp_path: Path) -> None:
    """The run's own judge on a fake fleet: each plateau / kink state carries its gain or ratio, over
    the run's own figures, and the step it compared with; the JSON stream keeps them."""
    import asyncio

    from bench_dsl.engine.plan import plan
    from bench_dsl.engine.runner import Run
    from bench_dsl.engine.scenario_file import load

    from ..fakes import FakeCpu, FakeFleet

    f = tmp_path / "s.bench"
    f.write_text('scenario "fake" { seed 1  workload custom { transaction read { query "SELECT 1" } }\n'
                 "ramp step { start 1 users step x2 settle 1s hold 2s max 8 users }\n"
                 "stop when { tps plateau 10%  p90 kink 100x } }")
    sc = load(str(f))
    seen: list[ev.Event] = []

    class Sink:
        def emit(self, e: ev.Event) -> None:
            seen.append(e)

        def close(self) -> None:
            pass

    run = Run(sc, plan(sc), [Sink()])
    run.scheduler.second = 0.03
    run.t0 = 1.0

    def model(users: int) -> dict[str, tuple[float, float]]:  # throughput flat from 4 users on
        return {"read": (100.0 * min(users, 4), 5.0 * max(1.0, users / 4))}

    await asyncio.wait_for(run.measure(FakeFleet(model, second=0.03), FakeCpu()), 60)  # type: ignore[arg-type]
    steps = {e.row.step: e.row.figures for e in seen if isinstance(e, ev.StepEnded)}
    last = [s for e in seen if isinstance(e, ev.Conditions) for s in e.states]
    plateau = [s for s in last if s.text == "tps plateau 10%" and s.source == "step 4"][-1]
    assert plateau.state == "fired" and plateau.against == 3 and plateau.held_key == "gain"
    assert plateau.held is not None and plateau.held < 10
    assert plateau.held == pytest.approx(100 * (steps[4]["tps"] - steps[3]["tps"]) / steps[3]["tps"], abs=0.01)
    kink = [s for s in last if s.text == "p90 kink 100x" and s.source == "step 3"][-1]
    assert kink.against == 2 and kink.held_key == "ratio" and kink.held is not None and kink.held > 0
    first = [s for s in last if s.text == "tps plateau 10%" and s.source.startswith("step 1")]
    assert first and all(s.held is None and s.against is None for s in first)  # nothing to compare with yet
    for s in (plateau, kink, first[0]):
        back = ev.from_json(ev.Conditions(1.0, (s,)).to_json())
        assert isinstance(back, ev.Conditions) and back.states == (s,)
    assert "gain" not in first[0].to_json() and "ratio" not in plateau.to_json()
    assert plateau.to_json()["gain"] == plateau.held and kink.to_json()["ratio"] == kink.held  # as recorded before


# the state --------------------------------------------------------------------------------------------
def test_saturation_is_the_judges_once_the_climb_ended_and_final_when_the_run_ends() -> None:
    evs = events()
    assert fold(upto(evs, lambda e: isinstance(e, ev.StepEnded) and e.row.step == 6, after=1)).saturation_users is None
    assert fold(upto(evs, lambda e: isinstance(e, ev.Saturation))).saturation_users == 16
    assert fold(evs).saturation_users == 16
    qs = fold(events(QUICKSTART))
    assert qs.saturation_users == 8 and qs.finished is not None and qs.finished.saturation is not None
    assert not qs.finished.saturation.saturated
    # the judge's word, not the steps': a saturation point the steps would put at 16 users reads 4,
    # and where the climb stands (not saturated yet) is no saturation point
    fired = upto(evs, lambda e: isinstance(e, ev.Fired))
    judged = {"users": 4, "step": 3, "saturated": True, "condition": "p90(locked) > 200ms"}
    assert fold([*fired, ev.Saturation(SaturationPoint.from_json(judged))]).saturation_users == 4
    assert fold([*fired, ev.Saturation(SaturationPoint.from_json({**judged, "saturated": False}))]).saturation_users is None


def test_steps_and_boundaries_follow_the_run() -> None:
    st = fold(events())
    assert [(p.step, p.users) for p in st.step_points] == [(1, 1), (2, 2), (3, 4), (4, 8), (5, 16), (6, 32)]
    assert [b.users for b in st.boundaries] == [1, 2, 4, 8, 16, 32]
    assert all(p.p90_ms is not None and p.tps > 0 for p in st.step_points)
    assert st.p90_tx == "locked" and st.p90_limit_ms == pytest.approx(200.0)


def test_a_flood_of_ticks_keeps_the_state_small_and_the_peaks() -> None:
    st = LiveState()
    for i in range(20 * MAX_POINTS):
        tps = 5000.0 if i == 7777 else 100.0
        st.apply(ev.LiveTick(float(i + 1), "hold", 1, 4, False, 1.0, TickFigures({"tps": tps})))
    assert len(st.series) <= MAX_POINTS
    assert max(p.hi for p in st.series) == 5000.0 and min(p.lo for p in st.series) == 100.0
    assert st.series[-1].t == 20 * MAX_POINTS
    assert st.take_changes() and not st.take_changes()  # changes are handed over once


def test_hold_and_stop_show_in_the_header() -> None:
    evs = events()
    st = fold(upto(evs, lambda e: isinstance(e, ev.Control) and e.action == "hold", after=1))
    head = text_of(render.header(st, 120), 120)
    assert "step 3/6 hold · 4 users" in head and "HOLDING" in head and "left" not in head
    st.apply(ev.Control("stop", False, 30.0))
    assert "stopping: saving what was measured" in text_of(render.header(st, 120), 120)


def test_prepare_shows_a_progress_bar() -> None:
    st = fold(upto(events(QUICKSTART), lambda e: isinstance(e, ev.PhaseBegan) and e.phase == "prepare"))
    assert "prepare: checking and loading the data" in text_of(render.header(st, 100), 100)
    st.apply(ev.Prepare(4500, 10000, 12345.0, 0.4, 2.0))
    line = text_of(render.header(st, 100), 100).splitlines()[1]
    assert "45%" in line and "4,500/10,000 rows" in line and "12,345 rows/s" in line and "0:00 left" in line
    assert "█" in line


def test_the_target_never_shows_a_password() -> None:
    st = LiveState()
    st.apply(ev.Started("s", "mysql://app:Sekret-99@db.example:3306/shop", "8.0.36", False, PlannedRun.from_json({}),
                        [], []))
    head = text_of(render.header(st, 120), 120)
    assert "Sekret-99" not in head and "MySQL 8.0.36" in head and "db.example:3306/shop" in head
    # at 80 columns the target is cut, never the clock
    assert text_of(render.header(st, 60), 60).splitlines()[0].rstrip().endswith("elapsed 0:00")


# the log ------------------------------------------------------------------------------------------------
def test_repeated_lines_fold_into_one_with_a_count() -> None:
    book = LogBook(keep=3)
    book.add("info", "a", 1.0)
    book.add("warning", "b", 2.0)
    book.add("info", "a", 3.0)
    assert [(e.message, e.count, e.t) for e in book.tail(5)] == [("b", 1, 2.0), ("a", 2, 3.0)]
    book.error(1213, 4, "payment", 4.0, "")
    book.error(1213, 3, "new_order", 5.0, "")
    book.describe(1213, "Deadlock found when trying to get lock")
    e = book.tail(1)[0]
    assert (e.code, e.count, e.where, e.t) == (1213, 7, {"payment", "new_order"}, 5.0)
    assert render.log_line(e).plain == "0:05 7× error 1213 deadlock in new_order, payment: Deadlock found when " \
                                       "trying to get lock"
    book.add("info", "c", 6.0)
    assert len(book.tail(10)) == 3  # the oldest goes


def test_errors_of_the_recording_are_one_line_with_their_message() -> None:
    st = fold(events())
    errors = [e for e in st.log.tail(100) if e.code is not None]
    assert len(errors) == 1
    total = sum(int(n) for e in events() if isinstance(e, ev.Interval)
                for n in e.row.figures["transactions"]["dup"]["errors_by_code"].values())
    assert errors[0].count == total and errors[0].message == "Duplicate entry '1' for key 'PRIMARY'"


# the renderables ------------------------------------------------------------------------------------
def test_axis_helpers() -> None:
    assert [nice_ceiling(v) for v in (0.0, 7.0, 101.0, 349.0, 9999.0)] == [1.0, 8.0, 150.0, 400.0, 10000.0]
    assert time_ticks(0, 60, 5) == [0, 15, 30, 45, 60]
    assert time_ticks(3, 100, 4) == [30, 60, 90]
    assert doubling([1, 2, 4, 8]) and not doubling([4, 8, 12, 16]) and not doubling([1, 2])


def test_canvas_draws_braille_dots() -> None:
    cv = Canvas(2, 1)
    cv.dot(0, 3, Style())  # the top left dot of the first cell
    cv.line(2, 0, 3, 3, Style())  # the second cell: a diagonal from its bottom left to its top right
    # dots of a cell: 0x01 0x08 / 0x02 0x10 / 0x04 0x20 / 0x40 0x80, top to bottom
    assert [t.plain for t in cv.lines()] == [chr(0x2800 + 0x01) + chr(0x2800 + 0x40 + 0x04 + 0x10 + 0x08)]


def test_throughput_chart_marks_steps_and_fits_its_box() -> None:
    st = fold(events())
    lines = ThroughputChart(st.series, st.boundaries, 70, 12).lines()
    assert len(lines) == 12 and all(line.cell_len <= 70 for line in lines)
    top = lines[0].plain
    assert top.startswith("400┤") and all(f"{u}u" in top for u in (1, 2, 4, 8, 16, 32))
    assert lines[-1].plain.split() == ["10s", "20s", "30s", "40s"]
    # measured seconds bright, warmup and settle dim
    styles = {str(span.style) for line in lines for span in line.spans}
    assert "bright_cyan" in styles and "dim cyan" in styles
    assert "waiting" in ThroughputChart([], [], 70, 12).lines()[0].plain


def test_users_chart_draws_each_step_the_limit_and_the_saturation_point() -> None:
    p90s = (5.0, 6.0, 12.0, 45.0)  # latency rises late, throughput early: the markers do not meet
    pts = [StepPoint(i + 1, u, 100.0 * (i + 1), p90s[i], True) for i, u in enumerate((1, 2, 4, 8))]
    lines = UsersChart(pts, 60, 12, p90_limit_ms=35.0, saturation=4, log_scale=True).lines()
    body = "\n".join(line.plain for line in lines)
    assert body.count("●") == 4 and body.count("◆") == 4
    assert "sat 4" in body and "p90 limit" in body
    assert lines[-1].plain.split() == ["1", "2", "4", "8"]
    # a log scale spaces doubling users evenly
    cols = [lines[-1].plain.index(f" {u}") for u in (1, 2, 4, 8)]
    gaps = {b - a for a, b in zip(cols, cols[1:], strict=False)}
    assert max(gaps) - min(gaps) <= 1
    assert lines[0].plain.startswith("500┤") and lines[0].plain.rstrip().endswith("├50")


def test_transactions_table_keeps_what_matters_when_narrow() -> None:
    st = fold(upto(events(), lambda e: isinstance(e, ev.Interval) and e.row.step == 5 and e.row.measured))
    wide = text_of(render.tx_table(st, 116), 116).splitlines()
    assert wide[0].split() == ["transaction", "count", "tps", "p50", "p90", "p99", "max", "err", "│", "count", "tps",
                               "p50", "p90", "p95", "p99", "max", "err"]
    assert [line.split()[0] for line in wide[1:]] == ["locked", "dup", "all"]
    locked = st.interval["transactions"]["locked"]  # type: ignore[index]
    assert wide[1].split()[2] == f"{locked['tps']:.1f}"
    narrow = text_of(render.tx_table(st, 76), 76).splitlines()
    assert narrow[0].split() == ["transaction", "tps", "p90", "p99", "err", "│", "count", "tps", "p90", "p99", "err"]
    assert all(len(line) <= 76 for line in narrow)


def test_verdict_says_where_it_stopped_and_where_the_results_are() -> None:
    text = text_of(render.verdict(fold(events()), Path("results/four-locks.json"), waiting_for_key=True))
    assert "Saturation point: 16 users (step 5" in text
    assert "ended by p90(locked) > 200ms: measured 246ms against 200ms, step 6 at 32 users" in text
    assert "results results/four-locks.json" in text and "press q or Enter to leave" in text
    qs = text_of(render.verdict(fold(events(QUICKSTART)), None, waiting_for_key=False))
    assert "No stop condition fired: 8 users met every condition" in qs and "press q" not in qs


def test_verdict_of_a_climb_the_client_limited_says_at_least_and_why() -> None:
    evs = events()
    fin = evs[-1]
    assert isinstance(fin, ev.Finished)
    why = ("bench-dsl itself was the limit: its worker 1 process waited for a core (a thread of its woke 96 ms late "
           "at one wakeup in ten: client_lag_ms thread p90, over the bound of 10 ms), so the server carries at least 16 users")
    assert fin.saturation is not None
    sat = dataclasses.replace(fin.saturation, limited_by="client", reason=f"stopped by: p90(locked) > 200ms; {why}")
    expect = [ev.Expectation("saturation >= 8 users", 16.0, 8, "users", False, why)]
    st = fold([*evs[:-1], dataclasses.replace(fin, saturation=sat, expect=expect)])
    text = text_of(render.verdict(st, None, waiting_for_key=False), 400)
    assert "Saturation point: at least 16 users (step 5" in text
    assert "\n" + why in text  # the judge's words on a line of their own
    assert f"expect saturation >= 8 users: FAIL (measured 16.0): {why}" in text


def test_the_screen_and_the_console_say_the_verdict_in_the_same_words() -> None:
    import io

    from bench_dsl.results.sinks import ConsoleSink

    for evs in (events(), events(QUICKSTART)):
        fin = evs[-1]
        assert isinstance(fin, ev.Finished)
        out = io.StringIO()
        ConsoleSink(Console(file=out, width=400, color_system=None)).emit(fin)
        screen = text_of(render.verdict(fold(evs), None, waiting_for_key=False), 400).splitlines()
        printed = out.getvalue().splitlines()
        words = [verdict.text(line) for line in verdict.verdict_lines(fin.saturation.to_json() if fin.saturation else None, fin.stop)]
        assert screen[:2] == [words[0][0].upper() + words[0][1:], words[1]] and printed[:2] == words
    assert printed[0] == "no stop condition fired: 8 users met every condition (step 1)"


def test_the_phase_has_one_name_on_the_screen_in_the_log_and_on_the_console() -> None:
    import io

    from bench_dsl.results.sinks import ConsoleSink

    evs = events()
    hold3 = next(e for e in evs if isinstance(e, ev.PhaseBegan) and e.phase == "hold" and e.step == 3)
    assert (hold3.label(), hold3.line()) == ("step 3/6 hold", "step 3/6 hold: 4 users for 5s")
    assert any(isinstance(e, ev.Log) and e.message == hold3.line() for e in evs)  # as the run logged it
    st = fold(upto(evs, lambda e: e is hold3))
    assert text_of(render.header(st, 120), 120).splitlines()[1].strip().startswith(hold3.label())
    iv = next(e for e in evs if isinstance(e, ev.Interval) and e.row.step == 3 and e.row.phase == "hold")
    out = io.StringIO()
    ConsoleSink(Console(file=out, width=400, color_system=None)).emit(iv)
    column = out.getvalue().split("]", 1)[1].split()[:2]  # "[   18s] s3 hold   users ..."
    assert column == ev.phase_label("hold", 3, short=True).split() == ["s3", "hold"]
    assert ev.PhaseBegan("ramp", 1, 1, 1, 30.0, 32, 0.0).line() == "step 1/1 ramp: 1 -> 32 users for 30s"
    assert ev.PhaseBegan("warmup", None, 6, 1, 3.0).label() == "warmup"


def test_figures_show_the_last_second() -> None:
    evs = events()
    st = fold(upto(evs, lambda e: isinstance(e, ev.LiveTick) and e.step == 5 and e.phase == "hold"))
    tick = st.tick
    assert tick is not None
    labels, values = text_of(render.figures(st, 120)).splitlines()
    assert labels.split() == ["users", "tps", "tpm", "errors/s", "retries/s", "cpu", "server", "cpu", "client"]
    assert values.split()[:3] == ["16", f"{tick.figures.tps:.1f}", f"{tick.figures.declared['tpm']:,.0f}"]
    st.apply(ev.from_json({**tick.to_json(), "nopm": 1234.0}))
    assert "NOPM" in text_of(render.figures(st, 120)) and "1,234" in text_of(render.figures(st, 120))


# a rate's tick and interval as the headline shows them: each label with the value it shows
RATE_SHOWN = {"users": "16", "tps": "12,346", "tpm": "740,736", "offered": "20,000", "achieved": "12,346",
              "dropped/s": "7654.4", "busy": "16/16", "p99 resp": "123 ms", "p99 serv": "4.56 ms", "errors/s": "0.0",
              "retries/s": "0.0", "cpu server": "81%", "cpu client": "40%"}


@pytest.mark.parametrize("width", [158, 118, 78, 58, 38, 28, 18])  # the figures' room at 160 ... 20 columns
def test_a_rates_headline_keeps_its_labels_and_its_values_apart_at_any_width(width: int) -> None:
    """At 80x24 the labels ran together (`offered achieveddropped/`), at 40x10 the numbers too: a figure
    that does not fit whole is left out, the rate's own (offered, achieved, dropped) last."""
    st = LiveState()
    st.apply(ev.Begin("", "", ev.ScenarioInfo(load_axis="rate"), ev.Machine.from_json({})))  # the run's load axis: what the headline shows
    st.apply(ev.LiveTick(2.0, "hold", 1, 16, False, 1.0, TickFigures.from_json({
        "tps": 12345.6, "tpm": 740736.0, "cpu": {"server": 81.0, "client": 40.0}, "errors_per_s": 0.0,
        "retries_per_s": 0.0, "offered_tps": 20000.0, "achieved_tps": 12345.6, "dropped_per_s": 7654.4, "busy": 16})))
    lat = {"p50": 1.0, "p90": 2.0, "p99": 123.4}
    st.apply(ev.Interval(IntervalRow(2.0, 1.0, "hold", 1, True, {
        "seconds": 1.0, "users": 16, "tps": 12345.6, "count": 12345, "errors": 0, "latency_ms": lat,
        "service_ms": {"p99": 4.56}, "transactions": {}})))
    labels, values = (line.plain for line in render.figures(st, width).lines)
    assert len(labels) <= width and len(values) <= width
    shown = re.split(r"\s{2,}", labels.strip())
    assert [RATE_SHOWN.get(label) for label in shown] == re.split(r"\s{2,}", values.strip()), (labels, values)
    if width >= 38:
        assert {"offered", "achieved", "dropped/s"} <= set(shown), labels
    if width >= 118:
        assert {"users", "tps", "busy", "p99 resp", "p99 serv", "cpu server"} <= set(shown), labels


def test_a_boundary_label_never_runs_off_the_chart() -> None:
    st = fold(events())
    lines = ThroughputChart(st.series, [*st.boundaries, Boundary(st.series[-1].t, 7, 64)], 40, 6).lines()
    assert all(line.cell_len <= 40 for line in lines)


def test_a_linear_ramp_is_drawn_per_interval() -> None:
    st = LiveState()
    phases = [{"kind": "ramp", "step": 1, "users": 1, "users_end": 8, "seconds": 4.0}]
    st.apply(ev.Started("lin", "t", "v", True, PlannedRun.from_json({"steps": 1, "phases": phases}), ["read"], ["p90(read) > 50ms"],
                        (ev.ConditionSpec("p90(read) > 50ms", "p90(read) > 50ms", "threshold", "p90(read)", ">",
                                          50.0, "ms", None, True),)))
    st.apply(ev.PhaseBegan("ramp", 1, 1, 1, 4.0, 8, 1.0))
    for i, (users, tps) in enumerate(((1, 50.0), (3, 140.0), (6, 260.0))):
        lat = {"p50": 1.0, "p90": 2.0 + i, "p99": 3.0 + i}
        st.apply(ev.Interval(IntervalRow(2.0 + i, 1.0 + i, "ramp", 1, True, {
            "seconds": 1.0, "users": users, "tps": tps, "count": int(tps), "errors": 0, "latency_ms": lat,
            "transactions": {"read": {"tps": tps, "count": int(tps), "errors": 0, "latency_ms": lat}}})))
    assert [(p.users, p.tps, p.p90_ms) for p in st.step_points] == [(1, 50.0, 2.0), (3, 140.0, 3.0), (6, 260.0, 4.0)]
    assert st.p90_tx == "read" and st.p90_limit_ms == 50.0


def test_the_headline_shows_replica_lag_and_the_busiest_disk_when_measured() -> None:
    st = LiveState()
    st.apply(ev.LiveTick(1.0, "hold", 1, 4, False, 1.0, TickFigures.from_json({"tps": 100.0, "cpu": {}})))
    plain = text_of(render.figures(st, 140), width=140)
    assert "replica lag" not in plain and "disk" not in plain  # not measured: not shown
    st.apply(ev.LiveTick(2.0, "hold", 1, 4, False, 1.0, TickFigures.from_json({
        "tps": 100.0, "cpu": {}, "lag_s": 6.5, "disk": {"device": "nvme0n1", "util_pct": 87.0}})))
    plain = text_of(render.figures(st, 140), width=140)
    assert "replica lag" in plain and "6.50s" in plain
    assert "disk nvme0n1" in plain and "87%" in plain


def test_the_headline_shows_the_step_s_longest_stall_once_there_is_one() -> None:
    st = LiveState()
    st.apply(ev.LiveTick(1.0, "hold", 1, 4, False, 1.0, TickFigures.from_json({"tps": 100.0, "cpu": {}})))
    assert "stall" not in text_of(render.figures(st, 160), width=160)
    st.apply(ev.LiveTick(2.0, "hold", 1, 4, False, 1.0, TickFigures.from_json({"tps": 0.0, "cpu": {}, "stall_s": 6.2})))
    plain = text_of(render.figures(st, 160), width=160)
    assert "stall" in plain and "6.2s" in plain


def test_the_headline_shows_the_client_s_scheduling_lag_yellow_over_its_bound() -> None:
    st = LiveState()
    st.apply(ev.LiveTick(1.0, "hold", 1, 4, False, 1.0, TickFigures.from_json({"tps": 100.0, "cpu": {}})))
    assert "client lag" not in text_of(render.figures(st, 160), width=160)  # a fake fleet measures none
    for p90, yellow in ((0.8, False), (23.0, True)):
        st.apply(ev.LiveTick(2.0, "hold", 1, 4, False, 1.0, TickFigures.from_json({
            "tps": 100.0, "cpu": {}, "client_lag": {"p90_ms": p90, "bound_ms": 10.0}})))
        lines = render.figures(st, 160)
        plain = text_of(lines, width=160)
        assert "client lag" in plain and f"{p90:.1f} ms" in plain
        values = lines.lines[1]
        styles = {str(s.style) for s in values.spans if f"{p90:.1f} ms" in values.plain[s.start:s.end]}
        assert ("bold yellow" in styles) == yellow, styles


def test_a_rates_steps_are_drawn_at_the_rates_they_offered() -> None:
    """The chart against the load plotted a rate run's pool: every step at its 8 users, on one x. On
    the rate's axis each step stands at the rate it offered, with what it achieved above it (issue 40)."""
    from bench_dsl.engine.rows import StepRow

    st = LiveState()
    st.apply(ev.Begin("test", "now", ev.ScenarioInfo("rates", load_axis="rate"), ev.Machine.from_json({})))
    phases = [{"kind": "hold", "step": n, "users": 8, "users_end": 8, "seconds": 3.0} for n in (1, 2, 3)]
    st.apply(ev.Started("rates", "t", "v", True, PlannedRun.from_json({"steps": 3, "phases": phases}), ["t"], [], ()))
    for n, (rate, achieved) in enumerate(((100.0, 99.5), (200.0, 198.0), (400.0, 260.0)), 1):
        st.apply(ev.StepEnded(StepRow(n, 8, True, None, 3.0 * n, {"tps": achieved, "users": 8,
                                                            "latency_ms": {"p90": 2.0 * n}}, None, [], {}, {"rate_tps": rate})))
    assert [(p.x, p.users, p.tps) for p in st.step_points] == [(100.0, 8, 99.5), (200.0, 8, 198.0), (400.0, 8, 260.0)]
    st.apply(ev.Saturation(SaturationPoint.from_json({"users": 8, "step": 2, "saturated": True, "axis": "rate",
                                                      "rate_tps": 200.0})))
    assert st.saturation_point == 200.0 and st.saturation_users == 8
    drawn = text_of(UsersChart(st.step_points, 60, 12, saturation=st.saturation_point))
    assert all(label in drawn for label in ("100", "200", "400"))
