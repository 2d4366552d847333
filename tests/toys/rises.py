"""A toy condition of its own: `METRIC rises N%` fires at the end of a step whose figure is more than
N% above the step before's (a figure that should stay flat as load grows: rows read per
transaction, which rising says the plan changed). Declared once here; the language reads it, the
judge fires on it, the live screen, the result and the replay word it, by this declaration alone.
Its registry line is COMPARISONS."""

from __future__ import annotations

from bench_dsl.language.comparisons import Comparison, plateau_gain

COMPARISONS = (Comparison(
    "rises", ("gauge",), "%", plateau_gain, False, "rise", "rows_read_per_tx rises 50%",
    "a figure that rose more than the limit over the step before"),)
