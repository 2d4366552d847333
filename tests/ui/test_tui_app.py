"""The app with Textual's Pilot, fed by a recorded run (no database): keys reach the run's controls,
the verdict stays until a key, ending the app always lets the run save; and snapshots of the
screen in its phases (text, as a person reads it: `pytest --snapshot-update` rewrites them)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from syrupy.assertion import SnapshotAssertion
from textual.pilot import Pilot

from bench_dsl.core.live_figures import TickFigures
from bench_dsl.engine import events as ev
from bench_dsl.engine.events import Event
from bench_dsl.engine.rows import StepRow
from bench_dsl.results.sinks import JsonResultSink
from bench_dsl.tui.app import BenchApp, ConfirmStop, HelpScreen, UiSink, attach_ui, run_app
from bench_dsl.tui.state import LiveState

from ..fakes import wait_until
from ..fixtures.replay import FakeControls, FakeRun, events, scenario, screen_text, settled, upto

BIG, SMALL = (120, 40), (80, 24)
RESULTS = Path("results/four-locks.json")
# Pilot's press() and pause() return once the process looks idle (its CPU time against the wall
# clock's): on a loaded machine, possibly before a key was handled. So what a key does is waited for
# (wait_until, with a deadline), and that a key did nothing is read once a later key's effect is seen
# (keys are handled in order): the help screen, opened by `?` whatever the run's phase.


async def keys_handled(app: BenchApp, pilot: Pilot[int]) -> None:
    """Until every key pressed so far has been handled: `?` opens the help, then it is closed."""
    await pilot.press("question_mark")
    await wait_until("the help screen opened by ?", lambda: isinstance(app.screen, HelpScreen))
    await pilot.press("escape")
    await wait_until("the help screen closed by escape", lambda: not isinstance(app.screen, HelpScreen))


async def left(app: BenchApp) -> None:
    await wait_until("the app to leave", lambda: not app.is_running)


@asynccontextmanager
async def replayed(evs: list[Event], *, size: tuple[int, int] = BIG, wait_for_key: bool = True
                   ) -> AsyncIterator[tuple[BenchApp, Pilot[int], FakeControls, UiSink]]:
    """The app showing a recorded run up to some point, with fake controls."""
    controls = FakeControls()
    sink = UiSink(LiveState())
    app = BenchApp(sink.state, controls, results=RESULTS, wait_for_key=wait_for_key)
    async with app.run_test(size=size) as pilot:
        for e in evs:
            sink.emit(e)
        app.pull()
        await settled(pilot)
        yield app, pilot, controls, sink


def hold_of_step(step: int, tick: int = 1):  # type: ignore[no-untyped-def]
    """Predicate: the n-th tick of a step's hold."""
    seen = []

    def pred(e: Event) -> bool:
        if isinstance(e, ev.LiveTick) and e.step == step and e.phase == "hold":
            seen.append(e)
        return len(seen) == tick and seen[-1] is e

    return pred


# keys ---------------------------------------------------------------------------------------------
async def test_n_and_h_reach_the_run() -> None:
    async with replayed(upto(events(), hold_of_step(2))) as (app, pilot, controls, _):
        await pilot.press("n", "h", "h")
        await wait_until("the three keys to reach the run", lambda: len(controls.calls) >= 3)
        assert controls.calls == ["next", "hold", "hold"]


async def test_n_and_h_wait_until_users_run() -> None:
    evs = upto(events(), lambda e: isinstance(e, ev.PhaseBegan) and e.phase == "prepare")
    async with replayed(evs) as (app, pilot, controls, _):
        await pilot.press("n", "h")
        await keys_handled(app, pilot)
        assert controls.calls == []


async def test_q_asks_first_then_stops_and_leaves_once_saved() -> None:
    async with replayed(upto(events(), hold_of_step(2))) as (app, pilot, controls, _):
        await pilot.press("q")
        await wait_until("the question q asks", lambda: isinstance(app.screen, ConfirmStop))
        await pilot.press("n")  # "no": go on
        await wait_until("the question answered no", lambda: not isinstance(app.screen, ConfirmStop))
        assert controls.calls == []
        await pilot.press("q", "y")
        await wait_until("the stop to reach the run", lambda: bool(controls.calls))
        assert controls.calls == ["stop"]
        assert app.is_running  # still there: the run is writing its results
        await wait_until("the screen saying it saves",
                         lambda: "stopping: saving what was measured" in screen_text(app))
        app.run_done(130)
        await left(app)
    assert app.return_value == 130


async def test_ctrl_c_stops_at_once() -> None:
    async with replayed(upto(events(), hold_of_step(2))) as (app, pilot, controls, _):
        await pilot.press("ctrl+c")
        await wait_until("the stop to reach the run", lambda: bool(controls.calls))
        assert controls.calls == ["stop"] and app.is_running
        app.run_done(130)
        await left(app)
    assert app.return_value == 130


async def test_help_opens_and_closes() -> None:
    async with replayed(upto(events(), hold_of_step(2))) as (app, pilot, controls, _):
        await pilot.press("question_mark")
        await wait_until("the help screen", lambda: isinstance(app.screen, HelpScreen))
        await wait_until("the help's text", lambda: "hold at the current users" in screen_text(app))
        await pilot.press("n")  # the run's keys do not reach through the help
        await pilot.press("escape")
        await wait_until("the help screen closed", lambda: not isinstance(app.screen, HelpScreen))
        assert controls.calls == []  # the n before the escape was handled: keys are handled in order


async def test_the_verdict_stays_until_a_key() -> None:
    async with replayed(events()) as (app, pilot, controls, _):
        app.run_done(0)
        await settled(pilot)
        assert app.is_running and app.screen.query_one("#verdict").display
        text = screen_text(app)
        assert "Saturation point: 16 users" in text and str(RESULTS) in text and "q quit" in text
        await pilot.press("n", "h")  # nothing left to control
        await keys_handled(app, pilot)
        assert controls.calls == [] and app.is_running
        await pilot.press("enter")
        await left(app)
    assert app.return_value == 0


async def test_a_stop_question_left_open_gives_way_to_the_verdict() -> None:
    async with replayed(upto(events(), lambda e: e.type == "fired")) as (app, pilot, controls, sink):
        await pilot.press("q")
        await wait_until("the question q asks", lambda: isinstance(app.screen, ConfirmStop))
        for e in events()[len(upto(events(), lambda e: e.type == "fired")):]:
            sink.emit(e)
        app.run_done(0)
        await wait_until("the question to give way", lambda: not isinstance(app.screen, ConfirmStop))
        assert app.is_running
        await pilot.press("q")  # after the verdict, q leaves without asking
        await left(app)


async def test_without_a_key_to_wait_for_it_leaves_when_the_run_ends() -> None:
    async with replayed(events(), wait_for_key=False) as (app, pilot, controls, _):
        app.run_done(0)
        await left(app)


async def test_the_screen_redraws_by_itself() -> None:
    """No pull() here: the app's own timer must bring new events to the screen."""
    evs = events()
    head = upto(evs, hold_of_step(2))
    async with replayed(head) as (app, pilot, controls, sink):
        assert "step 2/6 hold" in screen_text(app)
        for e in upto(evs, hold_of_step(3))[len(head):]:
            sink.emit(e)
        await wait_until("the timer's redraw", lambda: "step 3/6 hold" in screen_text(app))


def test_the_sink_never_breaks_the_run() -> None:
    sink = UiSink(LiveState())
    sink.emit(ev.LiveTick(1.0, "hold", 1, 1, False, 1.0, TickFigures({"tps": "not a number"})))  # type: ignore[dict-item]
    sink.emit(ev.StepEnded(StepRow("not a number", 1, True, None, 0.0, {}, None, [])))  # type: ignore[arg-type]
    warnings = [e.message for e in sink.state.log.tail(10)]
    assert sink.failures == 2 and warnings[0].startswith("the screen could not show a tick event")


# with a Run's interface ----------------------------------------------------------------------------
async def test_run_app_replays_a_run_and_returns_its_exit_code(tmp_path: Path) -> None:
    run = FakeRun(events(), scenario(), exit_code=3, sinks=[JsonResultSink(tmp_path / "r.json")])
    app = attach_ui(run, wait_for_key=False)
    assert isinstance(run.sinks[-1], UiSink) and app.results == tmp_path / "r.json"
    code = await run_app(app, run, headless=True, size=BIG)
    assert code == 3 and run.finished_writing
    assert app.state.finished is not None and app.state.saturation_users == 16


async def test_ctrl_c_waits_for_the_run_to_save_before_leaving() -> None:
    run = FakeRun(upto(events(), hold_of_step(3)), scenario(), exit_code=130, until_stopped=True)
    app = attach_ui(run, wait_for_key=True)
    task = asyncio.create_task(run_app(app, run, headless=True, size=BIG))
    await wait_until("the replay at step 3", lambda: app.is_running and app.state.step == 3)
    await Pilot(app).press("ctrl+c")
    assert await task == 130
    assert run.calls == ["stop"] and run.finished_writing


async def test_a_screen_that_goes_away_still_lets_the_run_save() -> None:
    run = FakeRun(upto(events(), hold_of_step(3)), scenario(), exit_code=130, until_stopped=True)
    app = attach_ui(run, wait_for_key=True)
    task = asyncio.create_task(run_app(app, run, headless=True, size=BIG))
    await wait_until("the app running", lambda: app.is_running)
    app.exit()  # as when the terminal closes or the UI fails
    assert await task == 130
    assert run.calls == ["stop"] and run.finished_writing


async def test_a_run_that_ends_before_the_screen_is_up_is_not_waited_for() -> None:
    run = FakeRun(events(), scenario(), exit_code=4)
    app = attach_ui(run, wait_for_key=False)
    app.run_task = asyncio.create_task(run.execute())
    await app.run_task  # ended before the app started, as with an unreachable target
    async with app.run_test(size=BIG):
        await left(app)
    assert app.return_value == 4


# snapshots: the main screen in its phases ------------------------------------------------------------
@pytest.mark.parametrize(("cut", "size"), [
    pytest.param(lambda e: isinstance(e, ev.LiveTick) and e.phase == "warmup" and e.remaining_s < 1.5, BIG,
                 id="warmup"),
    pytest.param(hold_of_step(5, 3), BIG, id="stepping"),
    pytest.param(lambda e: isinstance(e, ev.Control) and e.action == "hold" and e.holding, SMALL,
                 id="holding-80x24"),
    pytest.param(lambda e: isinstance(e, ev.Fired), BIG, id="stop-fired"),
])
async def test_screen(cut, size: tuple[int, int], snapshot: SnapshotAssertion) -> None:  # type: ignore[no-untyped-def]
    evs = events()
    shown = upto(evs, cut)
    while len(shown) < len(evs) and isinstance(evs[len(shown)], ev.Conditions | ev.Saturation):
        shown.append(evs[len(shown)])  # the judge's word on the figures shown comes right after them
    async with replayed(shown, size=size) as (app, pilot, controls, _):
        assert screen_text(app) == snapshot


async def test_screen_summary(snapshot: SnapshotAssertion) -> None:
    async with replayed(events()) as (app, pilot, controls, _):
        app.run_done(0)
        await settled(pilot)
        assert screen_text(app) == snapshot
