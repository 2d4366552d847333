"""What the server's machine drew over a span, as its power source read it (bench_dsl.server.power):
the language's Energy (metric_decls), which the power figures are derived from, merged across
ticks into intervals, steps and the run."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class PowerSample:
    seconds: float  # the span the readings cover
    joules: float
    max_w: float  # the highest power read in it (a counter's reading: its mean over its span)


def merge(a: PowerSample | None, b: PowerSample | None) -> PowerSample | None:
    """Two spans as one: a gap (None) adds nothing, and is never 0 W."""
    if a is None or b is None:
        return a or b
    return PowerSample(a.seconds + b.seconds, a.joules + b.joules, max(a.max_w, b.max_w))
