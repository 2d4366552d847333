"""The client's scheduling lag probe (bench_dsl.measure.schedlag): real timers and a real thread, no mocks
(what it measures is the machine's real lateness: no fake clock stands in for that). So the tests
count samples rather than time them, bound a count by the time that surely passed (a busy machine
makes a probe later and its samples fewer, never more), and bound lateness from below only."""

from __future__ import annotations

import asyncio
import time

from bench_dsl.measure.schedlag import PROBES, LagProbe, LagWindow, figures, percentile

HUNG_S = 60.0  # a wait for samples longer than this is a hung probe, never a slow machine


def _count(probe: LagProbe, name: str) -> int:
    with probe._lock:
        return len(probe._samples[name])


async def test_both_probes_sample_a_few_times_a_second_and_take_starts_afresh() -> None:
    probe = LagProbe(period=0.05)
    start = time.monotonic()
    probe.start()
    try:
        deadline = start + HUNG_S
        while min(_count(probe, p) for p in PROBES) < 3:  # a few wakeups of each, however long they take
            assert time.monotonic() < deadline, "the probes took no 3 samples each"
            await asyncio.sleep(0.05)
        got = probe.take()
        took = time.monotonic() - start
        assert set(got) == set(PROBES)
        for values in got.values():
            # each sample is a wait of a period at least: no more than the time that passed allows
            assert 3 <= len(values) <= took / 0.05 + 1 and all(v >= 0 for v in values)
        since = time.monotonic()
        again = probe.take()
        between = time.monotonic() - since
        # only what came since the first take (one each, and what the time between allows)
        assert all(len(v) <= between / 0.05 + 2 for v in again.values())
    finally:
        probe.stop()


async def test_a_blocked_event_loop_is_seen_late_by_the_loop_probe_only() -> None:
    probe = LagProbe(period=0.05)
    probe.start()
    try:
        await asyncio.sleep(0.2)
        probe.take()
        # the loop is held, 0.4 s at least: its timer cannot fire; the probe's thread samples on
        # (held until it has, however long a busy machine keeps it from it)
        held = time.monotonic()
        while time.monotonic() - held < 0.4 or _count(probe, "thread") < 3:
            assert time.monotonic() - held < HUNG_S, "the probe's thread took no 3 samples"
            time.sleep(0.01)  # noqa: ASYNC251  the loop is held on purpose
        while not _count(probe, "loop"):  # the timer's late firing, once the loop runs again
            assert time.monotonic() - held < HUNG_S, "the loop's timer never fired"
            await asyncio.sleep(0.01)
        got = probe.take()
        assert max(got["loop"]) >= 300  # due 50 ms into the 400 ms or more the loop was held
        assert len(got["thread"]) >= 3  # the thread kept sampling meanwhile
    finally:
        probe.stop()


async def test_stop_ends_the_thread_and_the_timer() -> None:
    probe = LagProbe(period=0.05)
    probe.start()
    await asyncio.sleep(0.1)
    probe.stop()
    assert probe._thread is not None
    probe._thread.join(HUNG_S)  # it wakes at once on stop: only a hung thread takes this long
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
