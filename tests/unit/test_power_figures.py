"""The power figures by their declarations (metric_decls: power, power_max, energy, tx_per_joule;
TPC-C's nopm_per_watt), over ticks merged into a window: exact from the energy the ticks carry, a
tick with no reading a gap (never 0 W), and absent where nothing was read."""

from __future__ import annotations

import pytest

from bench_dsl.language.model import Metric
from bench_dsl.measure.energy import PowerSample
from bench_dsl.measure.metrics import Aggregate, TickStats
from bench_dsl.measure.txstats import TxStats
from bench_dsl.workloads.registry import METRICS

NAMES = ("new_order", "payment")


def _done(n: int) -> TxStats:
    st = TxStats(count=n, total_us=1000 * n)
    st.hist.record_value(1000, n)  # each in 1 ms
    return st


def _tick(t: float, new_orders: int, payments: int, power: PowerSample | None) -> TickStats:
    return TickStats(t, 1.0, "hold", 1, 4, {"new_order": _done(new_orders), "payment": _done(payments)},
                     {"server": None, "host": None, "client": None}, power=power)


def test_the_power_figures_of_a_window_come_from_its_energy_and_its_throughputs() -> None:
    agg = Aggregate(NAMES, METRICS)
    agg.add(_tick(1.0, 100, 100, PowerSample(1.0, 200.0, 210.0)))
    agg.add(_tick(2.0, 100, 100, None))  # a reading that failed: a gap in the power, not 0 W
    agg.add(_tick(3.0, 100, 100, PowerSample(1.0, 300.0, 320.0)))
    s = agg.summary()
    assert (s["power_w"], s["power_max_w"], s["energy_j"]) == (250.0, 320.0, 500.0)
    assert s["tps"] == 200.0 and s["tx_per_joule"] == pytest.approx(200.0 / 250.0, abs=1e-3)
    assert s["nopm"] == 6000.0 and s["nopm_per_watt"] == pytest.approx(6000.0 / 250.0, abs=1e-3)
    # a condition reads the same declaration: power(server) over the window
    assert agg.value(Metric("power", source="server", declared=METRICS.get("power"))) == 250.0
    # each tick's, for the live screen
    assert _tick(1.0, 100, 100, PowerSample(2.0, 200.0, 110.0)).figures(METRICS).declared["power_w"] == 100.0


def test_a_window_with_no_reading_has_no_power_figure_at_all() -> None:
    agg = Aggregate(NAMES, METRICS)
    agg.add(_tick(1.0, 100, 100, None))
    s = agg.summary()
    assert not {"power_w", "power_max_w", "energy_j", "tx_per_joule", "nopm_per_watt"} & set(s)
    assert "power_w" not in _tick(1.0, 100, 100, None).figures(METRICS).declared
