"""Stop conditions and expectations judged against aggregates. Pure: no clock, no I/O."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from bench_dsl.metrics import Aggregate, Tick
from bench_dsl.model import Condition


@dataclass(frozen=True, slots=True)
class Verdict:
    condition: Condition
    value: float | None
    fired: bool
    reference: float | None = None  # plateau / kink: the previous step's figure

    def to_json(self) -> dict[str, object]:
        c = self.condition
        return {
            "condition": c.text, "resolved": c.resolved, "kind": c.kind, "metric": c.metric.label(), "fired": self.fired,
            "value": show(self.value, c), "limit": show_limit(c), "unit": c.unit,
            "previous": show(self.reference, c) if self.reference is not None else None,
            "window_s": c.window,
        }


def show(value: float | None, c: Condition) -> float | None:
    """A value in the unit the file used for its limit (latency in ms)."""
    if value is None:
        return None
    if c.kind == "threshold" and c.metric.name == "latency":
        return round(value * 1000, 3)
    if c.kind == "kink" and c.metric.name == "latency":
        return round(value * 1000, 3)
    return round(value, 3)


def show_limit(c: Condition) -> float:
    return round(c.limit * 1000, 3) if c.kind == "threshold" and c.metric.name == "latency" else c.limit


def judge(c: Condition, agg: Aggregate, previous: Aggregate | None = None) -> Verdict:
    """Does `c` fire over `agg`? plateau and kink compare with the step before."""
    value = agg.value(c.metric)
    if c.kind == "threshold":
        return Verdict(c, value, value is not None and c.holds(value))
    if previous is None or value is None:
        return Verdict(c, value, False)
    before = previous.value(c.metric)
    if before is None or before <= 0:
        return Verdict(c, value, False, before)
    if c.kind == "plateau":
        gain = 100.0 * (value - before) / before
        return Verdict(c, value, gain < c.limit, before)
    return Verdict(c, value, value > c.limit * before, before)  # kink


class WindowedConditions:
    """`for D` thresholds: judged every tick over the last D seconds of the current step."""

    def __init__(self, conditions: tuple[Condition, ...], names: tuple[str, ...]) -> None:
        self.conditions = tuple(c for c in conditions if c.window)
        self.names = names
        longest = max((c.window or 0 for c in self.conditions), default=0)
        self.ticks: deque[Tick] = deque(maxlen=int(longest) + 2)

    def reset(self) -> None:
        self.ticks.clear()

    def add(self, tick: Tick) -> list[Verdict]:
        if not self.conditions:
            return []
        self.ticks.append(tick)
        out = []
        for c in self.conditions:
            agg = Aggregate(self.names)
            for t in reversed(self.ticks):
                if agg.seconds >= (c.window or 0) - 1e-6:
                    break
                agg.add(t)
            if agg.seconds >= (c.window or 0) - 1e-6:
                out.append(judge(c, agg))
        return out
