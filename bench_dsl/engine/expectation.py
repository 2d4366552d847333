"""An `expect` judged against the whole run (bench_dsl.engine.judge.expectations): the condition as
written, the figure it was judged on and its limit (latency in ms, as the file wrote it), whether it
passed, and why not where the figure alone does not say (a saturation point that was the client's
own limit). The `Finished` event carries them; the result's "expect" is their JSON."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Expectation:
    expect: str  # the condition as written
    value: float | None  # None: nothing measured to judge it on
    limit: float
    unit: str
    passed: bool
    reason: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"expect": self.expect, "value": self.value, "limit": self.limit, "unit": self.unit,
                "passed": self.passed, **({"reason": self.reason} if self.reason else {})}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Expectation:
        value = d.get("value")
        return cls(str(d.get("expect", "")), float(value) if isinstance(value, int | float) else None,
                   float(d.get("limit") or 0.0), str(d.get("unit") or ""), bool(d.get("passed")), d.get("reason"))
