"""The figures derived from the server's status (MetricDecl.derive: a plugin's figure of the server,
say), computed over any window, a tick, an interval, a step or the run, in this one place."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

from bench_dsl.language.metric_decls import Energy, MetricDecl, Table


class StatusOf:
    """A window's server status as a derived metric reads it (metric_decls.StatusWindow): the
    counters' growth and the variables' values, by lowercase name, over `seconds`, and the
    transactions completed in those seconds (the window's count scaled to them: the status is read
    on its own clock, and a tick's readings may span more or less than the tick); with the energy
    the server's machine drew in it, when a power source read it, and its declared throughputs."""

    __slots__ = ("_energy", "_grew", "_seconds", "_throughput", "_values", "transactions")

    def __init__(self, grew: Mapping[str, float], values: Mapping[str, float], seconds: float,
                 transactions: float, energy: Energy | None = None,
                 throughput: Callable[[str], float | None] = lambda name: None) -> None:
        self._grew, self._values, self._seconds, self.transactions = grew, values, seconds, transactions
        self._energy, self._throughput = energy, throughput

    def energy(self) -> Energy | None:
        return self._energy

    def throughput(self, name: str) -> float | None:
        return self._throughput(name)

    def grew(self, name: str) -> float | None:
        return self._grew.get(name.lower())

    def value(self, name: str) -> float | None:
        return self._values.get(name.lower())

    def per_second(self, name: str) -> float | None:
        g = self.grew(name)
        return g / self._seconds if g is not None and self._seconds > 0 else None


def derived(d: MetricDecl, window: StatusOf | None) -> float | None:
    """`d` over the window; None where its status was not read, or it gives no number (0 transactions)."""
    if d.derive is None or window is None:
        return None
    v = d.derive(window)
    return None if v is None or not math.isfinite(v) else float(v)


def derived_figures(metrics: Table, window: StatusOf | None) -> dict[str, float]:
    """Each derived metric of the table over the window, by its figure's name, where it has a value."""
    return {d.figure_name: round(v, 3) for d in metrics if d.derive is not None
            if (v := derived(d, window)) is not None}
