"""The stop conditions as a person watching the run sees them: one row per condition with its value,
its limit and its state. Pure: no Textual.

Nothing is computed here: the engine's judge says each condition's value, state and where the value
was read from, and for a comparison (a plateau, a kink, a plugin's) the figure it held against the
limit (`Conditions` events); the `Started` event says how each is written (its limit in the unit the
file used, and a comparison's figure by name and the side that fires). This module only puts them
into words, and names no comparison.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from bench_dsl.engine import events as ev
from bench_dsl.results.verdict import fmt_latency, fmt_num

# ok / near: values within their limits; over: a value past its limit that the judge has not judged
# yet (a step is judged at its end); FIRED: the judge's verdict.
State = Literal["ok", "near", "over", "FIRED", "-"]


@dataclass(frozen=True, slots=True)
class ConditionRow:
    text: str  # as written in the file
    value: str  # the current value, in the unit the file used for the limit
    limit: str
    state: State
    source: str  # which figures the value was read from: "step 3 so far", "last 3s", ...


def _unit(c: ev.ConditionSpec) -> str:
    if c.latency:
        return "ms"
    # the server side's units: replica lag in s, disk await in ms, status counters per second
    return {"%": "%", "x": "x", "s": "s", "ms": "ms", "/s": "/s"}.get(c.unit, "")


def show_limit(c: ev.ConditionSpec) -> str:
    if (held := c.compared_by) is not None:  # a comparison: its figure against the limit ("gain < 5%", "ratio > 3x")
        return f"{held[0]} {held[1]} {fmt_num(c.limit)}{c.unit}"
    if c.latency:
        return f"{c.op} {fmt_latency(c.limit)}"
    return f"{c.op} {fmt_num(c.limit)}{_unit(c)}"


def show_value(c: ev.ConditionSpec, value: float | None, said: float | None = None) -> str:
    """The value; a comparison's figure, `said`, as the judge held it against the limit
    (ConditionState.compared): a gain in % with its sign, a factor to two decimals."""
    if value is None:
        return "-"
    if c.compared_by is not None:
        return "-" if said is None else f"{said:+.1f}%" if c.unit == "%" else f"{said:.2f}{c.unit}"
    if c.latency:
        return fmt_latency(value)
    return f"{fmt_num(value)}{_unit(c)}"


_STATES: dict[str, State] = {"ok": "ok", "near": "near", "over": "over", "fired": "FIRED", "-": "-"}


class ConditionBoard:
    """The judge's latest word on each condition, as rows. Before the run starts (or in a replay of
    a stream without condition events) the conditions' texts are listed without values."""

    def __init__(self) -> None:
        self.specs: dict[str, ev.ConditionSpec] = {}
        self.texts: list[str] = []
        self.states: dict[str, ev.ConditionState] = {}
        self.fired: ev.Fired | None = None

    def started(self, event: ev.Started) -> None:
        self.specs = {c.text: c for c in event.condition_specs}
        self.texts = list(event.conditions)

    def update(self, event: ev.Conditions) -> None:
        self.states = {s.text: s for s in event.states}

    def on_fired(self, event: ev.Fired) -> None:
        self.fired = event

    def rows(self) -> list[ConditionRow]:
        return [self._row(t) for t in self.texts]

    def _row(self, text: str) -> ConditionRow:
        c = self.specs.get(text)
        s = self.states.get(text)
        if c is None:
            return ConditionRow(text, "-", "-", "-", "")
        if s is None:
            return ConditionRow(text, "-", show_limit(c), "-", "")
        return ConditionRow(text, show_value(c, s.value, s.compared(c.kind)), show_limit(c),
                            _STATES.get(s.state, "-"), s.source)
