"""The live screen showing a finished run again (`bench replay`): the same app and panels, fed by a
bench_dsl.results.player.Player instead of a Run. The player stands where the run stood (it has a run's
controls), so the screen reads the same events the same way; only the keys differ: there is no run
to stop, step or hold, so q leaves at once and space pauses the replay.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.widgets import Static

from . import render
from .app import REFRESH_S, BenchApp, Controls, HelpScreen, MainScreen, UiSink, run_app
from .state import HEADER, LiveState

HELP = """\
[b]Keys (a replay)[/b]
  [b]space[/b]  pause the replay, and go on
  [b]q[/b]      leave (nothing to save: the run was saved when it ran)
  [b]n h[/b]    step and hold control a live run; a replay shows the steps as they were
  [b]?[/b]      this help

""" + render.HELP[render.HELP.index("[b]Stop conditions"):]


class ReplayHelp(HelpScreen):
    def compose(self) -> ComposeResult:
        with Vertical(id="help"):
            yield Static(HELP)


class ReplayScreen(MainScreen, inherit_bindings=False):
    """The main screen with a replay's keys (the run's own would offer to stop and save)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q,enter", "leave", "quit"),
        Binding("space", "pause", "pause / go on"),
        Binding("n,h", "run_key", "step / hold", show=False),
        Binding("question_mark", "help", "help", key_display="?"),
    ]

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "pause":
            return not self.bench.done
        return True

    def action_pause(self) -> None:
        app = self.app
        assert isinstance(app, ReplayApp)
        app.toggle_pause()

    def action_run_key(self) -> None:
        self.app.notify("a replay: n and h control a live run; space pauses the replay", timeout=3)

    def action_help(self) -> None:
        self.app.push_screen(ReplayHelp())


class ReplayApp(BenchApp):
    """The screen of a recorded run. `controls` is the player: hold pauses it, stop ends it."""

    LEAVE_WHEN_INTERRUPTED = False  # the replay of an interrupted run still shows its verdict

    def __init__(self, state: LiveState, controls: Controls, source: Path, *, wait_for_key: bool = True,
                 refresh_s: float = REFRESH_S) -> None:
        super().__init__(state, controls, results=source, wait_for_key=wait_for_key, refresh_s=refresh_s)
        self.source = source
        self.main = ReplayScreen(state, source)
        self.title = f"replay of {source}"
        self.paused = False

    def toggle_pause(self) -> None:
        self.paused = self.controls.toggle_hold()
        self.title = f"replay of {self.source}" + (" · paused" if self.paused else "")
        self.state.changed.add(HEADER)
        self.pull()

    def stop_run(self) -> None:
        self.leave()

    def leave(self) -> None:
        # nothing to save: leave at once, at any point of the replay
        self.leaving = True
        self.controls.request_stop()
        self.exit(self.exit_code or 0)


def attach_replay(player: Any, source: Path, *, wait_for_key: bool | None = None) -> ReplayApp:
    """The screen of a bench_dsl.results.player.Player: its sink is added to the player's sinks.
    wait_for_key: keep the verdict on screen until q (default: when stdin is a terminal)."""
    state = LiveState()
    player.sinks.append(UiSink(state))
    if wait_for_key is None:
        wait_for_key = sys.stdin.isatty()
    return ReplayApp(state, player, source, wait_for_key=wait_for_key)


async def run_replay(player: Any, source: Path, **run_async: Any) -> int:
    """Plays the recording on the screen until it ends (and a key, at a terminal) or q; returns 0."""
    return await run_app(attach_replay(player, source), player, **run_async)
