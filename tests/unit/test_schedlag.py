"""The client's scheduling lag probe (bench_dsl.measure.schedlag): real timers and a real thread, no mocks.
Lower bounds only where the machine's load could add to them: a busy machine makes a probe later,
never earlier."""

from __future__ import annotations

import asyncio
import time

from bench_dsl.measure.schedlag import PROBES, LagProbe, LagWindow, figures, percentile


async def test_both_probes_sample_a_few_times_a_second_and_take_starts_afresh() -> None:
    probe = LagProbe(period=0.05)
    probe.start()
    try:
        await asyncio.sleep(0.6)
        got = probe.take()
        assert set(got) == set(PROBES)
        for values in got.values():
            # some 12 wakeups; a loaded machine wakes them late, so fewer, never none
            assert 3 <= len(values) <= 13 and all(v >= 0 for v in values)
        again = probe.take()
        assert all(len(v) <= 2 for v in again.values())  # only what came since the first take
    finally:
        probe.stop()


async def test_a_blocked_event_loop_is_seen_late_by_the_loop_probe_only() -> None:
    probe = LagProbe(period=0.05)
    probe.start()
    try:
        await asyncio.sleep(0.2)
        probe.take()
        time.sleep(0.4)  # the loop is held: its timer cannot fire; the probe's thread runs on
        await asyncio.sleep(0.1)
        got = probe.take()
        assert max(got["loop"]) >= 300  # due 50 ms into the 400 ms the loop was held
        assert len(got["thread"]) >= 3  # the thread kept sampling meanwhile
    finally:
        probe.stop()


async def test_stop_ends_the_thread_and_the_timer() -> None:
    probe = LagProbe(period=0.05)
    probe.start()
    await asyncio.sleep(0.1)
    probe.stop()
    assert probe._thread is not None
    probe._thread.join(2)
    assert not probe._thread.is_alive()
    probe.take()
    await asyncio.sleep(0.2)
    assert probe.take() == {"loop": [], "thread": []}


def test_percentiles_are_nearest_rank() -> None:
    values = [float(v) for v in range(1, 101)]
    assert percentile(values, 50) == 50 and percentile(values, 90) == 90 and percentile(values, 99) == 99
    assert percentile([7.0], 99) == 7.0
    assert percentile([3.0, 1.0, 2.0], 90) == 3.0
    assert figures([]) is None
    assert figures([1.0, 5.0]) == {"p50": 1.0, "p90": 5.0, "p99": 5.0, "max": 5.0, "samples": 2}


def test_a_window_merges_processes_and_says_each() -> None:
    w = LagWindow()
    assert w.to_json() == {}  # nothing measured: nothing said (a fake fleet)
    w.add({"worker 1": {"loop": [1.0, 2.0], "thread": [0.5]}, "worker 2": {"loop": [30.0], "thread": []}})
    w.add({"worker 1": {"loop": [3.0], "thread": [0.7]}})
    out = w.to_json()
    assert out["client_lag_ms"] == {"loop": figures([1.0, 2.0, 3.0, 30.0]), "thread": figures([0.5, 0.7])}
    by = out["client_lag_ms_by_process"]
    assert by["worker 1"]["loop"] == figures([1.0, 2.0, 3.0]) and by["worker 2"]["thread"] is None
    assert by["worker 2"]["loop"]["max"] == 30.0


def test_a_windows_worst_p90_is_the_worst_of_its_recorded_figures_tick_after_tick() -> None:
    """worst_p90 (each tick, for the live screen) keeps the samples sorted in place: the same as
    worst_lag of the window's figures, whatever order the samples came in."""
    import random

    from bench_dsl.measure.schedlag import worst_lag

    rng = random.Random(5)
    w = LagWindow()
    assert w.worst_p90() is None
    for _ in range(30):
        w.add({f"worker {i}": {"loop": [rng.expovariate(1.0) for _ in range(rng.randint(0, 4))],
                               "thread": [rng.uniform(0, 3) for _ in range(rng.randint(0, 4))]} for i in range(5)})
        worst = worst_lag(w.to_json().get("client_lag_ms_by_process"))  # type: ignore[arg-type]
        assert w.worst_p90() == (worst[0] if worst else None)
