"""The rows of a result: an interval's (every `report every`) and a step's (its end), each defined
once here. The tally makes them, the Interval and StepEnded events carry them, and the result document,
the event stream, the console and the screen read them; a reader of a result file gets them back
with from_json.

A row is where and when it was measured (typed fields) and what was measured: `figures`, the
aggregate's figures as the result schema has them (bench_dsl.measure.metrics.Aggregate.summary:
throughput, latency percentiles, errors, CPU, per transaction; with the client's scheduling lag and
the statements by kind beside them). The JSON is the row as the result always held it: the typed
fields and the figures side by side in one object, with its "type" (interval | step) first."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from bench_dsl.attribution import Diagnosis
from bench_dsl.core.json_object import Json


@dataclass(frozen=True, slots=True)
class IntervalRow:
    t: float  # seconds since the run started, at the interval's end
    start_s: float
    phase: str  # warmup | settle | hold | ramp
    step: int | None
    measured: bool  # a hold's or a ramp's: counted in the step and the run
    figures: Json  # users: the most that ran in it

    def to_json(self) -> Json:
        return {"type": "interval", "t": self.t, "start_s": self.start_s, "phase": self.phase, "step": self.step,
                "measured": self.measured, **self.figures}

    @classmethod
    def from_json(cls, d: Json) -> IntervalRow:
        """A row of a result file (bench_dsl.results.read checked its fields' types)."""
        figures = {k: v for k, v in d.items() if k not in _INTERVAL_HEAD}
        return cls(d["t"], d["start_s"], d["phase"], d.get("step"), bool(d.get("measured")), figures)


@dataclass(frozen=True, slots=True)
class StepRow:
    step: int
    users: int  # a hold's users; a ramp's most
    complete: bool  # its hold ran to its end and was judged (what a saturation point counts)
    incomplete_reason: str | None
    start_s: float
    figures: Json
    server: Json | None  # the server's counters over the step (None: not read)
    conditions: list[Json]  # every stop condition's verdict on the step (judge.Diagnosis.to_json)
    histograms: dict[str, str | None] = field(default_factory=dict)  # per transaction, encoded
    # its point where the load's axis is not its users, under the axis' key (an open-loop rate's
    # step: {"rate_tps": the rate asked}); read back, it is among the figures
    load: Json = field(default_factory=dict)
    bottleneck: Diagnosis | None = None  # what ran out in it (bench_dsl.engine.bottleneck); None: not judged

    def to_json(self, histograms: bool = True) -> Json:
        """The row as the result holds it; without the histograms, as the event stream says it."""
        out: Json = {"type": "step", "step": self.step, "users": self.users, "complete": self.complete}
        out |= self.load
        if self.incomplete_reason is not None:
            out["incomplete_reason"] = self.incomplete_reason
        out |= {"start_s": self.start_s, **self.figures, "server": self.server, "conditions": self.conditions}
        if self.bottleneck is not None:
            out["bottleneck"] = self.bottleneck.to_json()
        if histograms:
            out["histograms"] = self.histograms
        return out

    @classmethod
    def from_json(cls, d: Json) -> StepRow:
        figures = {k: v for k, v in d.items() if k not in _STEP_HEAD}
        return cls(d["step"], d["users"], bool(d.get("complete")), d.get("incomplete_reason"), d.get("start_s", 0.0),
                   figures, d.get("server"), list(d.get("conditions") or []), dict(d.get("histograms") or {}),
                   {}, diagnosis_of(d.get("bottleneck")))


_INTERVAL_HEAD = ("type", "t", "start_s", "phase", "step", "measured")


def diagnosis_of(d: Any) -> Diagnosis | None:
    """A bottleneck as the result holds it (a step's, the saturation point's); None where it has
    none or not one this reads."""
    if not isinstance(d, dict):
        return None
    try:
        return Diagnosis.from_json(d)
    except (KeyError, TypeError, ValueError, AttributeError):
        return None


_STEP_HEAD = ("type", "bottleneck", "step", "users", "complete", "incomplete_reason", "start_s", "server",
              "conditions", "histograms")
