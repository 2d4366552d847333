"""Numbers as a person reads them: the one way messages, plans and labels write a float."""

from __future__ import annotations

import decimal
import math


def num(x: float) -> str:
    """A number as a person writes it, in messages and plans alike: 2, not 2.0; 0.000005, not 1e-06
    or 4.9999999999999996e-06 (ten significant digits: x1.0000001 stays itself, not x1); an exponent
    only past what digits read (10^20 and beyond, or below 10^-9)."""
    if not math.isfinite(x):
        return str(x)
    if float(x).is_integer() and abs(x) < 1e20:
        return str(int(x))
    short = f"{x:.10g}"
    if "e" in short and 1e-9 <= abs(x) < 1e20:
        return format(decimal.Decimal(short), "f")
    return short


def fmt_num(v: float) -> str:
    """A figure in a sentence or a table: 4,980, 12.5, 0.25 (grouped, to the digits it needs)."""
    if v == int(v):
        return f"{int(v):,}"
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    if abs(v) >= 100:
        return f"{v:.0f}"
    if abs(v) >= 10:
        return f"{v:.1f}"
    return f"{v:.2f}".rstrip("0").rstrip(".")
