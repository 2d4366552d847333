"""The coordinator's merge of encoded histograms (bench_dsl.measure.hdrwire, WorkerReport.merge_wire)
gives exactly what decoding each report and merging them gives."""

from __future__ import annotations

from typing import Any

from hdrh.histogram import HdrHistogram
from hypothesis import given, settings
from hypothesis import strategies as st

from bench_dsl.fleet.base import Health, WorkerReport
from bench_dsl.measure.txstats import HIGHEST_US, PERCENTILES, TxStats

NAMES = ("read", "write", "idle")

latency = st.one_of(st.integers(1, 2_000), st.integers(1, HIGHEST_US))
tx_stats = st.tuples(st.lists(latency, max_size=40), st.integers(0, 3), st.integers(0, 2),
                     st.booleans())  # values, deadlocks, retries, from an encoder of a narrower range


def _stats(values: list[int], deadlocks: int, retries: int, narrow: bool) -> TxStats:
    s = TxStats()
    if narrow:  # a worker of another build: its histogram's range is not the coordinator's
        s.hist = HdrHistogram(1, 60_000_000, 2)
        values = [min(v, 60_000_000) for v in values]
    for v in values:
        s.hist.record_value(v)
    s.count, s.queries, s.total_us, s.retries = len(values), 2 * len(values), sum(values), retries
    s.rollbacks = len(values) // 3
    if deadlocks:
        s.errors[1213] = deadlocks
    return s


def _wire(txs: dict[str, tuple[list[int], int, int, bool]]) -> dict[str, Any]:
    report = WorkerReport({n: _stats(*t) for n, t in txs.items()}, Health(0, 0.0, None, {}), 1)
    return report.to_wire()


def _same(a: TxStats, b: TxStats) -> None:
    assert (a.count, a.queries, a.retries, a.errors, a.rollbacks, a.total_us) == (
        b.count, b.queries, b.retries, b.errors, b.rollbacks, b.total_us)
    ha, hb = a.hist, b.hist
    assert list(ha.counts) == list(hb.counts)
    assert (ha.get_total_count(), ha.get_min_value(), ha.get_max_value()) == (
        hb.get_total_count(), hb.get_min_value(), hb.get_max_value())
    assert ha.get_percentile_to_value_dict(list(PERCENTILES)) == hb.get_percentile_to_value_dict(list(PERCENTILES))
    assert ha.encode() == hb.encode()


@settings(max_examples=60, deadline=None)
@given(st.lists(st.dictionaries(st.sampled_from(NAMES[:2]), tx_stats), max_size=6))
def test_summed_wires_equal_the_reports_decoded_and_merged(workers: list[dict[str, Any]]) -> None:
    replies = [_wire(txs) for txs in workers]
    mine = WorkerReport({}, Health(0, float("inf"), None, {}), 0)
    slow = WorkerReport.merge([mine, *(WorkerReport.from_wire(r) for r in replies)], NAMES)
    fast = WorkerReport.merge_wire(replies, NAMES, mine)
    assert set(fast.tx) == set(slow.tx) == set(NAMES)
    for name in NAMES:
        _same(fast.tx[name], slow.tx[name])
    assert fast.active == slow.active and fast.health == slow.health


def test_a_sum_is_the_same_whatever_the_order_of_the_workers() -> None:
    replies = [_wire({"read": ([5, 900, 40_000], 0, 0, False)}), _wire({"read": ([1, 7, 3_000_000_000], 1, 2, True)}),
               _wire({"read": ([], 2, 0, False), "write": ([12], 0, 0, False)})]
    ahead = WorkerReport.merge_wire(replies, NAMES)
    behind = WorkerReport.merge_wire(replies[::-1], NAMES)
    for name in NAMES:
        _same(ahead.tx[name], behind.tx[name])
    assert ahead.tx["read"].count == 6 and ahead.tx["read"].errors[1213] == 3 and ahead.tx["idle"].count == 0
