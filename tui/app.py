"""The live terminal UI of `bench run`: a Textual app that watches a Run through its event stream and
drives it only through its three control methods. The engine never imports this module.

    run_with_ui(run) -> exit code

The run executes as an asyncio task beside the app on the same event loop. Its events go to a sink
that folds them into LiveState at once (cheap, so the engine never waits and nothing queues); the
app redraws the parts that changed four times a second.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
from pathlib import Path
from typing import Any, ClassVar, Protocol

from textual import on
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.driver import Driver
from textual.drivers.linux_driver import LinuxDriver
from textual.events import Resize
from textual.screen import ModalScreen, Screen
from textual.widgets import Footer, Static

from bench_dsl.core.printable import printable_data
from bench_dsl.engine.events import Event

from . import render
from .hangup_driver import HangupSafeDriver
from .state import HEADER, LOG, VERDICT, LiveState
from .widgets import (
    ConditionsPanel,
    Headline,
    LogPanel,
    NodesPanel,
    RanOutPanel,
    RunHeader,
    StatePanel,
    TimeChartPanel,
    TxPanel,
    UsersChartPanel,
    VerdictPanel,
)

REFRESH_S = 0.25  # the screen looks for changes four times a second; it draws only what changed
# how often it asks whether its terminal is still there (one ioctl): a hangup may come without a signal
TERMINAL_LOOK_S = 0.5


class Controls(Protocol):
    """What the UI may ask of a run (bench_dsl.engine.runner.Run has these)."""

    def request_stop(self) -> None: ...

    def next_step(self) -> None: ...

    def toggle_hold(self) -> bool: ...


class UiSink:
    """The run's sink for the screen: folds each event into the state as it arrives."""

    def __init__(self, state: LiveState) -> None:
        self.state = state
        self.failures = 0

    def emit(self, event: Event) -> None:
        try:
            self.state.apply(printable_data(event))  # what a file or the server said, never a terminal's command
        except Exception as exc:  # a display problem must never stop a measurement
            self.failures += 1
            if self.failures <= 3:
                self.state.log.add("warning", f"the screen could not show a {event.type} event: {exc!r}", None)
                self.state.changed.add(LOG)

    def close(self) -> None:
        pass


class ConfirmStop(ModalScreen[bool]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y,enter,q", "answer(True)", "stop and save"),
        Binding("n,escape", "answer(False)", "go on"),
    ]

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static("[b]Stop the run now?[/b]\n\nEverything measured so far is saved and the verdict is "
                         "worked out from the steps that ended.\n\n[b]y[/b] stop and save    [b]n[/b] go on")

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)


class HelpScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,question_mark,q", "close", "close")]

    def compose(self) -> ComposeResult:
        with Vertical(id="help"):
            yield Static(render.HELP)

    def action_close(self) -> None:
        self.dismiss(None)


class MainScreen(Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q", "stop", "stop & save"),
        Binding("q", "leave", "quit"),
        Binding("enter", "leave", "quit", show=False),
        Binding("n", "next_step", "next step"),
        Binding("h", "hold", "hold / go on"),
        Binding("question_mark", "help", "help", key_display="?"),
    ]

    def __init__(self, state: LiveState, results: Path | None) -> None:
        super().__init__()
        self.state = state
        self.results = results

    def compose(self) -> ComposeResult:
        st = self.state
        yield RunHeader(st, id="header")
        yield Headline(st, id="figures")
        yield NodesPanel(st, id="nodes")
        with Horizontal(id="charts"):
            yield TimeChartPanel(st, id="time-chart")
            yield UsersChartPanel(st, id="users-chart")
        yield TxPanel(st, id="tx")
        with Horizontal(id="bottom"):
            yield ConditionsPanel(st, id="conditions")
            yield RanOutPanel(st, id="ran-out")
            yield LogPanel(st, id="log")
        yield VerdictPanel(st, self.results, id="verdict")
        yield Footer()

    def update_from(self, changes: set[str]) -> None:
        for panel in self.query(StatePanel):
            panel.update_from(changes)

    @on(Resize)
    def _fit(self, event: Resize) -> None:
        # 80x24 is usable: a short screen drops the borders of the transaction table and the figures' gap
        self.set_class(event.size.height < 32, "-short")
        self.set_class(event.size.width < 100, "-narrow")

    @property
    def bench(self) -> BenchApp:
        app = self.app
        assert isinstance(app, BenchApp)
        return app

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        app = self.bench
        if action == "stop":
            return not app.done
        if action == "leave":
            return app.done
        if action in ("next_step", "hold"):
            if app.done or app.leaving or self.state.stopping:
                return False
            # only once users run: during the prepare the engine would carry the key to the warmup
            return True if self.state.phase in ("warmup", "settle", "hold", "ramp") else None
        return True

    def action_stop(self) -> None:
        def answered(yes: bool | None) -> None:
            if yes:
                self.bench.stop_run()

        self.app.push_screen(ConfirmStop(), answered)

    def action_leave(self) -> None:
        self.bench.leave()

    def action_next_step(self) -> None:
        self.bench.controls.next_step()

    def action_hold(self) -> None:
        self.bench.controls.toggle_hold()

    def action_help(self) -> None:
        self.app.push_screen(HelpScreen())


class BenchApp(App[int]):
    """The screen of one run. `run_done` is called when the run's task has ended (results written)."""

    CSS_PATH = "app.tcss"
    TITLE = "bench-dsl"  # the header's tag: a replay says what it replays
    # a run stopped on request ends its screen at once: the person asked to leave
    LEAVE_WHEN_INTERRUPTED: ClassVar[bool] = True
    ENABLE_COMMAND_PALETTE = False  # nothing to command but the keys in the footer
    BINDINGS: ClassVar[list[BindingType]] = [
        # as Ctrl-C in a shell: stop and save at once, then leave when the results are written
        Binding("ctrl+c", "interrupt", "stop", show=False, priority=True),
        Binding("ctrl+q", "interrupt", "stop", show=False, priority=True),
    ]

    def __init__(self, state: LiveState, controls: Controls, *, results: Path | None = None,
                 wait_for_key: bool = True, refresh_s: float = REFRESH_S) -> None:
        super().__init__()
        self.state = state
        self.controls = controls
        self.results = results
        self.wait_for_key = wait_for_key
        self.refresh_s = refresh_s
        self.done = False
        self.leaving = False  # the person asked to stop: leave as soon as the run has ended
        self.terminal_gone = False  # nobody is left to read the verdict or press a key
        self.exit_code: int | None = None
        self.run_task: asyncio.Task[int] | None = None  # set by run_app
        self._keys: tuple[bool, ...] = ()
        self.main = MainScreen(state, results)

    def get_driver_class(self) -> type[Driver]:
        default = super().get_driver_class()
        return HangupSafeDriver if default is LinuxDriver else default

    @property
    def waiting_for_key(self) -> bool:
        return self.done and not self.leaving

    def on_mount(self) -> None:
        self.push_screen(self.main)
        self.set_interval(self.refresh_s, self.pull)
        if isinstance(self._driver, HangupSafeDriver):
            self.set_interval(TERMINAL_LOOK_S, self.look_for_terminal)
        task = self.run_task
        if task is not None and task.done():  # it ended before the screen was up (an unreachable target)
            self.run_done(_code(task))

    def pull(self) -> None:
        """Redraws what changed since the last look."""
        if not self.main.is_mounted:
            return  # the first drawing reads the whole state anyway
        changes = self.state.take_changes()
        if changes:
            self.main.update_from(changes)
            # the footer is rebuilt when bindings are refreshed (a full layout): only when keys change
            keys = self.keys_state()
            if keys != self._keys:
                self._keys = keys
                self.main.refresh_bindings()

    def look_for_terminal(self) -> None:
        """A terminal gone without a hangup signal (its session leader ignores SIGHUP, as after
        `trap '' HUP`): the run, told to ignore hangups, goes on to its end, and then nobody is there
        to press the key that ends the verdict."""
        driver = self._driver
        if self.terminal_gone or not isinstance(driver, HangupSafeDriver) or not driver.terminal_gone():
            return
        self.terminal_gone = True
        driver.stop_input()
        if self.done:
            self.exit(self.exit_code)

    def keys_state(self) -> tuple[bool, ...]:
        """What decides which keys the footer offers (MainScreen.check_action)."""
        st = self.state
        return (self.done, self.leaving, st.stopping, st.phase in ("warmup", "settle", "hold", "ramp"))

    def stop_run(self) -> None:
        self.leaving = True
        if self.done:
            self.exit(self.exit_code)
            return
        self.controls.request_stop()
        self.state.stopping = True
        self.state.changed.add(HEADER)
        self.pull()

    def action_interrupt(self) -> None:
        self.stop_run()

    def leave(self) -> None:
        if self.done:
            self.exit(self.exit_code)

    def run_done(self, exit_code: int) -> None:
        """The run has ended and its results are written: leave, or show the verdict until a key."""
        if self.done:
            return
        self.done = True
        self.exit_code = exit_code
        status = self.state.finished.status if self.state.finished is not None else None
        if (self.leaving or not self.wait_for_key or self.terminal_gone
                or (status == "interrupted" and self.LEAVE_WHEN_INTERRUPTED)):
            self.exit(exit_code)
            return
        while len(self.screen_stack) > 2:  # a question about stopping no longer applies
            self.pop_screen()
        self.state.changed |= {HEADER, VERDICT}
        self.pull()
        # Waiting for a key from here on, with nothing left to save: a closed terminal (SIGHUP, as a
        # closed ssh session or tmux window sends), a kill or Ctrl-C leave at once. (The run's own
        # handlers would make the first of them wait for a save already done, and a screen whose
        # terminal is gone would wait for ever, as an orphan.)
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGHUP, signal.SIGTERM, signal.SIGINT):
            if signal.getsignal(sig) is not signal.SIG_IGN:  # started to ignore it (nohup): still ignored
                with contextlib.suppress(NotImplementedError, RuntimeError):
                    loop.add_signal_handler(sig, self.exit, exit_code)


def results_path(sinks: list[Any]) -> Path | None:
    from bench_dsl.results.sinks import JsonResultSink

    return next((s.path for s in sinks if isinstance(s, JsonResultSink)), None)


def _code(task: asyncio.Task[int]) -> int:
    """The run's exit code; 1 when it failed (the error itself comes out of run_app)."""
    return int(task.result()) if not task.cancelled() and task.exception() is None else 1


def attach_ui(run: Any, *, wait_for_key: bool | None = None) -> BenchApp:
    """The screen of `run` (a bench_dsl.engine.runner.Run): its sink is added to the run's sinks.

    wait_for_key: keep the verdict on screen until q or Enter (default: when stdin is a terminal,
    so a run started with its input redirected never waits for a key nobody can press).
    """
    state = LiveState()
    run.sinks.append(UiSink(state))
    if wait_for_key is None:
        wait_for_key = sys.stdin.isatty()
    return BenchApp(state, run, results=results_path(run.sinks), wait_for_key=wait_for_key)


def start_run(app: BenchApp, run: Any) -> asyncio.Task[int]:
    """The run's execution as a task beside the app (which it tells when it ends)."""
    task = asyncio.create_task(run.execute(), name="bench-run")
    app.run_task = task

    def ended(t: asyncio.Task[int]) -> None:
        if app.is_running:
            app.call_later(app.run_done, _code(t))

    task.add_done_callback(ended)
    return task


async def run_app(app: BenchApp, run: Any, **run_async: Any) -> int:
    """Executes the run beside the app on this event loop; returns the run's exit code once its
    results are written, however the app ended."""
    task = start_run(app, run)
    try:
        await app.run_async(**run_async)
    finally:
        if not task.done():
            run.request_stop()  # the screen went away first (an error, a closed terminal): save all the same
        code = await asyncio.shield(task)
    return int(code)


async def run_with_ui(run: Any, *, wait_for_key: bool | None = None) -> int:
    """Runs `run` (a bench_dsl.engine.runner.Run) with the live screen; returns the run's exit code."""
    return await run_app(attach_ui(run, wait_for_key=wait_for_key), run)
