"""The conditions that hold a step's figure against the step before's, declared once: `tps plateau 5%`
(throughput that stopped growing) and `p90 kink 3x` (a sharp rise of latency), and any a plugin
declares (bench_dsl.core.plugins: COMPARISONS). A condition is written `METRIC WORD LIMIT`; each
declaration says which metrics it applies to, what its limit is (a percentage or a factor), the
figure it works out from the two steps (a gain, a ratio) and which side of the limit fires.

The validation reads them (language/conditions.py), the judge works the figure out and fires on it
(engine/judge.py), a condition's state carries it under its `key` (engine/events.py) and the
displays show it with the condition's unit and the words its spec carries (`held`): none of them
names a comparison."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from bench_dsl.language.metric_decls import Measures

# "near", the judge's for every condition: the value has gone 80% of the way to its limit (or, for
# limits crossed from above, is within 25% of it). A warning a person can act on before the condition
# fires, not a guess about the future.
NEAR = 0.8


def plateau_gain(value: float | None, before: float | None) -> float | None:
    """How much `value` grew over `before`, the figure of the step it is compared with, in %."""
    return None if value is None or before is None or before <= 0 else 100.0 * (value - before) / before


def kink_ratio(value: float | None, before: float | None) -> float | None:
    """`value` as a multiple of `before`, the figure of the step it is compared with."""
    return None if value is None or before is None or before <= 0 else value / before


@dataclass(frozen=True, slots=True)
class Comparison:
    name: str  # the word after the metric: "plateau"
    applies_to: tuple[Measures, ...]  # the measures of the metrics it takes (MetricDecl.measures)
    unit: Literal["%", "x"]  # its limit's, and its figure's: a percentage, or a factor (`3x` or `3`)
    figure: Callable[[float | None, float | None], float | None]  # (this step's, the step before's) -> figure
    fires_below: bool  # fires when the figure is below the limit (plateau), else above it (kink)
    key: str  # the figure's name, in a condition's state and its words: "gain", "ratio"
    example: str  # a condition on a metric it takes, in its words: "tps plateau 5%"
    description: str  # what fires it, for messages: "throughput that stopped growing"
    above: float | None = None  # a limit must be larger than this (a kink factor of 1 fires on any rise)

    def fires(self, figure: float | None, limit: float) -> bool:
        return figure is not None and (figure < limit if self.fires_below else figure > limit)

    def near(self, figure: float, limit: float) -> bool:
        """Not fired, but within NEAR of its limit."""
        return figure < limit / NEAR if self.fires_below else figure >= NEAR * limit

    @property
    def op(self) -> str:
        """The side of the limit that fires, as a comparison writes it."""
        return "<" if self.fires_below else ">"


PLATEAU = Comparison("plateau", ("throughput",), "%", plateau_gain, True, "gain", "tps plateau 5%",
                     "throughput that grew less than the limit over the step before")
KINK = Comparison("kink", ("latency",), "x", kink_ratio, False, "ratio", "p90 kink 3x",
                  "a latency more than the limit times the step before's", above=1.0)
CORE_COMPARISONS: tuple[Comparison, ...] = (PLATEAU, KINK)
