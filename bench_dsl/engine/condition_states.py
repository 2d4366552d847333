"""A stop condition as displays see it (bench_dsl.engine.events carries these): how it is written
(ConditionSpec, in the `Started` event) and the judge's view of it at a moment (ConditionState, in
`Conditions` events), each with its JSON form, which a recorded stream and a result give back."""

from __future__ import annotations

import re
from dataclasses import dataclass

from bench_dsl.core.json_object import Json
from bench_dsl.language.comparisons import CORE_COMPARISONS


@dataclass(frozen=True, slots=True)
class ConditionSpec:
    """A stop condition as displays show it: the limit in the unit the file used (latency in ms); a
    comparison's (plateau, kink, a plugin's) with what it holds against its limit: the figure's name
    and the side that fires (`held`: ("gain", "<")), which its states carry under that name."""
    text: str
    resolved: str
    kind: str  # threshold, or a comparison's word: plateau | kink | a plugin's
    metric: str
    op: str | None
    limit: float
    unit: str
    window_s: float | None
    latency: bool  # the metric is a latency (values and limit in ms)
    held: tuple[str, str] | None = None

    def to_json(self) -> Json:
        return {"text": self.text, "resolved": self.resolved, "kind": self.kind, "metric": self.metric,
                "op": self.op, "limit": self.limit, "unit": self.unit, "window_s": self.window_s,
                **({"held": {"figure": self.held[0], "op": self.held[1]}} if self.held else {})}

    @property
    def compared_by(self) -> tuple[str, str] | None:
        """`held`; for a spec written before comparisons said it, a plateau's or a kink's own."""
        return self.held or _HELD.get(self.kind)

    @classmethod
    def from_json(cls, d: Json) -> ConditionSpec:
        held = d.get("held")
        return cls(d["text"], d["resolved"], d["kind"], d["metric"], d["op"], d["limit"], d["unit"], d["window_s"],
                   is_latency(d["metric"]), (held["figure"], held["op"]) if isinstance(held, dict) else None)


_HELD = {c.name: (c.key, c.op) for c in CORE_COMPARISONS}


@dataclass(frozen=True, slots=True)
class ConditionState:
    """The judge's view of one stop condition at a moment of the run."""
    text: str
    value: float | None  # in the unit the file used for the limit (latency in ms)
    previous: float | None  # a comparison's: the figure of the step it is compared with
    state: str  # - | ok | near | over | fired   (over: past its limit, not judged yet)
    source: str  # what the value was read from: "step 3 so far", "last 3s", "step 2", ...
    # a comparison's, once there is a step to compare with: what the judge held against the limit,
    # under its name (a plateau's gain, in %; a kink's ratio), and the step `previous` is from
    held: float | None = None
    held_key: str | None = None
    against: int | None = None

    def to_json(self) -> Json:
        out: Json = {"text": self.text, "value": self.value, "previous": self.previous, "state": self.state,
                     "source": self.source}
        if self.held is not None and self.held_key:  # only where the judge compared steps
            out[self.held_key] = self.held
        return out | ({"against": self.against} if self.against is not None else {})

    @classmethod
    def from_json(cls, d: Json) -> ConditionState:
        """Its figure is the one key beyond the others (gain, ratio, a plugin's comparison's)."""
        held = [(v, k) for k, v in d.items() if k not in _STATE_KEYS and isinstance(v, int | float)]
        figure, key = held[0] if held else (None, None)
        return cls(d["text"], d["value"], d["previous"], d["state"], d["source"], figure, key, d.get("against"))

    def compared(self, kind: str) -> float | None:
        """What a comparison is judged on, as the judge said it; None for a threshold, or with no step
        to compare with. A state that does not say it (recorded by an older bench-dsl, or rebuilt from
        a result's verdicts) has it from `value` and `previous` by the comparison's own formula, where
        it is one of bench-dsl's (a plugin's is known by the run that declared it)."""
        if self.held is not None or (cmp := _CORE.get(kind)) is None:
            return self.held
        return cmp.figure(self.value, self.previous)


_STATE_KEYS = frozenset(("text", "value", "previous", "state", "source", "against"))
_CORE = {c.name: c for c in CORE_COMPARISONS}

def is_latency(metric: str) -> bool:
    """Whether a metric's label (model.Metric.label: p90(tx), avg, max ...) names a latency."""
    head = metric.split("(", 1)[0]
    return head in ("avg", "max", "min") or re.fullmatch(r"p[0-9.]+", head) is not None
