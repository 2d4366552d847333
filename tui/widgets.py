"""Thin widgets: each draws one part of LiveState with a pure renderable (render.py, chart.py) at its
own size, and is redrawn only when an event changed that part."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from rich.console import RenderableType
from rich.text import Text
from textual.widget import Widget

from bench_dsl.results import verdict as verdict_words

from . import render
from .chart import ThroughputChart, UsersChart, doubling
from .nodes import nodes
from .state import CONDITIONS, FIGURES, HEADER, LOG, NODES, RAN_OUT, TIME_CHART, TX, USERS_CHART, VERDICT, LiveState


class StatePanel(Widget):
    """A part of the screen drawn from LiveState."""

    PARTS: ClassVar[frozenset[str]] = frozenset()

    def __init__(self, state: LiveState, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.state = state
        self._lines = -1

    def update_from(self, changes: set[str]) -> None:
        if changes & self.PARTS:
            self.retitle()
            # a new layout repaints the whole screen: only when this panel's height may change
            lines = self.content_lines()
            self.refresh(layout=lines != self._lines)
            self._lines = lines

    def content_lines(self) -> int:
        """How many lines the content takes, for panels whose height follows it (height: auto)."""
        return 0

    def on_mount(self) -> None:
        self.retitle()

    def retitle(self) -> None:
        """Border titles follow the state; set here, never while rendering."""

    def title(self, title: str, subtitle: str | None = None) -> None:
        """Sets the border's titles when they change (each setting is parsed as markup and redrawn)."""
        if title != self.border_title:
            self.border_title = title
        if subtitle is not None and subtitle != self.border_subtitle:
            self.border_subtitle = subtitle

    @property
    def waiting_for_key(self) -> bool:
        return bool(getattr(self.app, "waiting_for_key", False))


class RunHeader(StatePanel):
    PARTS = frozenset({HEADER})

    def render(self) -> RenderableType:
        return render.header(self.state, self.content_size.width, self.waiting_for_key, self.app.title)


class Headline(StatePanel):
    PARTS = frozenset({FIGURES})

    def render(self) -> RenderableType:
        return render.figures(self.state, self.content_size.width)



class NodesPanel(StatePanel):
    """A cluster's nodes (workers ray), a line each, with their CPU of the last second; hidden when
    the users run on this machine."""

    PARTS = frozenset({NODES, FIGURES})

    def update_from(self, changes: set[str]) -> None:
        self.set_class(self.state.cluster is not None, "-cluster")  # app.tcss: shown only then
        super().update_from(changes)

    def content_lines(self) -> int:
        return len(nodes(self.state, 200).lines)

    def render(self) -> RenderableType:
        return nodes(self.state, self.content_size.width)

class TimeChartPanel(StatePanel):
    PARTS = frozenset({TIME_CHART})

    def retitle(self) -> None:
        # Textual's markup: its colour names, not Rich's (bright_black would be looked up, and fail, each time)
        self.title("throughput (tps) each second",
                   "[cyan]━[/] measured  [dim cyan]━[/] warmup/settle  [dim]┆[/] step start")

    def render(self) -> RenderableType:
        size = self.content_size
        return ThroughputChart(self.state.series, self.state.boundaries, size.width, size.height)


class UsersChartPanel(StatePanel):
    PARTS = frozenset({USERS_CHART})

    def retitle(self) -> None:
        p90 = f"p90({self.state.p90_tx})" if self.state.p90_tx else "p90"
        # against the run's load axis: users, or the rate offered (each step's throughput then what it achieved)
        self.title(f"tps and {p90} by {self.state.axis.heading}",
                   f"[cyan]●[/] tps  [magenta]◆[/] {p90} ms  [green]│[/] saturation")

    def render(self) -> RenderableType:
        st, size = self.state, self.content_size
        whole = st.axis.whole  # a users axis: the plan's users, and the step in progress, are its points
        step_users = sorted({p.users for p in st.plan.plan.phases if p.step is not None})
        points = step_users if whole else sorted({p.x for p in st.step_points if p.x})
        running = st.finished is None and st.phase in ("settle", "hold", "ramp") and whole
        return UsersChart(st.step_points, size.width, size.height, p90_limit_ms=st.p90_limit_ms,
                          saturation=st.saturation_point, next_users=st.phase_users if running else None,
                          log_scale=doubling(points))


class TxPanel(StatePanel):
    PARTS = frozenset({TX})

    def content_lines(self) -> int:
        n = len(self.state.transactions)
        return 1 + n + (1 if n > 1 else 0)

    def retitle(self) -> None:
        self.title(render.tx_title(self.state))

    def render(self) -> RenderableType:
        return render.tx_table(self.state, self.content_size.width)


class ConditionsPanel(StatePanel):
    PARTS = frozenset({CONDITIONS})

    def retitle(self) -> None:
        self.title("stop conditions")

    def render(self) -> RenderableType:
        # on a short screen every row counts: the column names go before any condition does
        size = self.content_size
        rows = self.state.board.rows()
        return render.conditions_table(rows, size.width, header=size.height > len(rows))


class LogPanel(StatePanel):
    PARTS = frozenset({LOG})

    def retitle(self) -> None:
        self.title("log")

    def render(self) -> RenderableType:
        size = self.content_size
        return render.log_text(self.state.log.tail(size.height), size.width)


class RanOutPanel(StatePanel):
    """What ran out in the last measured step (bench_dsl.attribution, by the engine's bottleneck):
    the finding, its evidence, what was ruled out; it changes with each step."""

    PARTS = frozenset({RAN_OUT})

    def retitle(self) -> None:
        at = self.state.ran_out
        # shown from the first step that says: a run without steps (or a recording from before) keeps
        # the conditions' and the log's room
        self.display = at is not None
        self.title("what ran out", f"step {at[0]} · {at[1]} users" if at is not None else "")

    def render(self) -> RenderableType:
        at = self.state.ran_out
        if at is None:
            return Text("")
        return Text("\n").join(render.said(line) for line in verdict_words.ran_out_lines(at[2]))


class VerdictPanel(StatePanel):
    PARTS = frozenset({VERDICT})

    def content_lines(self) -> int:
        return len(self.state.finished.expect) if self.state.finished else -1

    def __init__(self, state: LiveState, results: Path | None, *, id: str | None = None) -> None:
        super().__init__(state, id=id)
        self.results = results

    def retitle(self) -> None:
        self.title("verdict")
        if self.display != (self.state.finished is not None):
            self.display = self.state.finished is not None

    def render(self) -> RenderableType:
        return render.verdict(self.state, self.results, self.waiting_for_key)
