"""The saturation point, typed: the judge's (bench_dsl.engine.judge.Judge.saturation), carried by the
Saturation and Finished events, and read back from a result (a replay). Its JSON is the result's
"saturation" object, as the schema has it. The point itself is the load's: under its axis' key,
beside the figures that axis says of it (`load`), read by the axis (core.axis.LoadAxis.at), so that
this module needs no load profile (a replay loads none)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from bench_dsl.attribution.model import Diagnosis
from bench_dsl.engine.rows import diagnosis_of

# beside the point's own figures (LoadAxis.point_figures): how many stop conditions judged it, where
# a point that none judged says nothing (a rate's)
JUDGED_BY = "stop_condition_count"

_OWN = ("users", "step", "saturated", "condition", "reason", "steps_completed", "limited_by", "bottleneck", "axis")


@dataclass(frozen=True, slots=True)
class SaturationPoint:
    axis: str | None  # the load axis' name (core.axis.LoadAxis.name); None in a result written before it was said
    users: int | None  # the users of the step it stands at (a rate's: the pool's most)
    step: int | None
    saturated: bool  # a condition fired, the server refused users: the climb ended there
    condition: str | None  # the condition that fired
    reason: str  # why it stands where it does, in words
    steps_completed: int
    limited_by: str | None = None  # "client": bench-dsl itself was the limit
    bottleneck: Diagnosis | None = None  # what ran out at the step that ended the climb
    # the point under its axis' key (the users axis': "users", the same as above), the axis' figures of
    # its step (LoadAxis.point_figures) and JUDGED_BY where the axis counts them
    load: Mapping[str, Any] = field(default_factory=dict)
    # read from a result or stream written before a field was (limited_by, bottleneck, axis): written
    # back without it while it holds nothing, as it was
    absent: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        out = {"users": self.users, "step": self.step, "saturated": self.saturated, "condition": self.condition,
               "reason": self.reason, "steps_completed": self.steps_completed, "limited_by": self.limited_by,
               "bottleneck": self.bottleneck.to_json() if self.bottleneck is not None else None,
               **({"axis": self.axis} if self.axis is not None else {}), **self.load}
        return {k: v for k, v in out.items() if v is not None or k not in self.absent}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> SaturationPoint:
        """A result's saturation, as it was written."""
        axis = d.get("axis")
        return cls(axis if isinstance(axis, str) else None, d.get("users"), d.get("step"), bool(d.get("saturated")),
                   d.get("condition"),
                   str(d.get("reason") or ""), int(d.get("steps_completed") or 0), d.get("limited_by"),
                   diagnosis_of(d.get("bottleneck")), {k: v for k, v in d.items() if k not in _OWN},
                   tuple(k for k in _OWN if k not in d))
