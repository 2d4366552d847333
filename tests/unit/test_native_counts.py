"""The C executor's Counts (bench_dsl/native/src/counts.c) without a server: a take never waits for the
users' threads (one held inside the writers' critical section, as a user preempted there is, does
not hold up a report), writers recording at once while takes run lose and double nothing, in their
own lanes or through the queue, and the histograms recorded in C are hdrh's, byte for byte."""

from __future__ import annotations

import random
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable

import pytest

from bench_dsl import native
from bench_dsl.measure.txstats import HIGHEST_US, decoded, new_histogram

# the C executor is part of the set-up (scripts/setup.sh builds it): a build without it is a broken
# set-up, said by a failure, never a skipped test
assert native.compiled is not None, f"the C executor is not built ({native.problem}): run make setup"

# In a process of its own: a take that waited for the held writer would wait with the GIL held, and
# nothing in the test's own process could then notice; the child's timeout does.
_HELD = """
from bench_dsl.native import _native
c = _native.Counts(2)
c.ok(0, 10, 1)
c.enter(5)
c._hold_writer(1, 250, 3)
first = c.take()
quiet = c.quiet()
c._release_writer()
second = c.take()
assert first[0][1:] == (1, 1, 10, 0) and first[1] == (None, 0, 0, 0, 0), first
assert quiet[4] is None, quiet
assert second[0] == (None, 0, 0, 0, 0) and second[1][1:] == (1, 3, 250, 0), second
print("ok")
"""


def test_a_take_does_not_wait_for_a_writer_inside_its_critical_section() -> None:
    """A writer held inside (its completion written, not yet published): take() and quiet() return
    without it, and the next take counts the completion once released."""
    _returns(_HELD, "take() waited for the writer held inside its critical section")


def _returns(code: str, waited: str) -> None:
    """`code` run in a process of its own, which prints ok: one that waits forever on a lock another
    thread holds, with the GIL held, would hang this test's process with it; a minute is a hang's."""
    try:
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail(waited)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr


@pytest.mark.parametrize("lanes", [True, False], ids=["each its lane", "the queue"])
def test_writers_at_once_count_each_completion_once(lanes: bool) -> None:
    """16 threads without the GIL record 50,000 completions each while this one takes as fast as it
    can: the takes add up to exactly what was recorded, latencies and statements alike."""
    assert native.compiled is not None
    counts = native.compiled.Counts(3)
    threads, each = 16, 50_000
    got: list[Counter[int]] = [Counter() for _ in range(3)]
    statements = [0, 0, 0]

    def fold() -> None:
        for i, (hist, n, q, total, _) in enumerate(counts.take()):
            if hist is not None:  # under 2,048 us a value is its own counter: each is exact
                lat = Counter({us: c for us, c in enumerate(decoded(hist).counts[:1000]) if c})
                assert sum(lat.values()) == n and sum(us * c for us, c in lat.items()) == total
                got[i].update(lat)
            statements[i] += q

    takes = _taking(lambda: counts._hammer(threads, each, lanes), fold)
    want: list[Counter[int]] = [Counter() for _ in range(3)]
    want_q = [0, 0, 0]
    for w in range(threads):
        for j in range(each):
            want[(w + j) % 3][j % 1000] += 1
            want_q[(w + j) % 3] += 1 + j % 3
    assert got == want and statements == want_q, takes
    assert sum(sum(c.values()) for c in got) == threads * each
    assert counts.quiet()[4] is not None  # every writer left: idle since its last leave


_HELD_USER = """
from bench_dsl.native import _native
from bench_dsl.measure.txstats import encoded_counts
s = _native.Schedule(1)
s._hold_user()
first = s.take()
s._release_user()
second = s.take()
third = s.take()
assert (first["offered"], first["started"], first["busy"], first["busy_max"], first["lag"]) == (0, 0, 0, 0, None), first
assert (second["offered"], second["started"], second["busy"], second["busy_max"], second["lag"], second["lag_us"]) == \\
    (1, 1, 1, 1, encoded_counts({5: 1}), 5), second
assert (third["offered"], third["started"], third["busy"], third["busy_max"], third["lag"]) == (0, 0, 1, 1, None), third
print("ok")
"""


def test_a_schedule_take_does_not_wait_for_a_user_inside_its_mutex() -> None:
    """A user held inside the schedule's mutex, an arrival started: take() returns the schedule as
    it was before (nothing of a half-done section), and the next take counts the arrival once."""
    _returns(_HELD_USER, "Schedule.take() waited for the user held inside the schedule's mutex")


def test_users_at_once_count_each_arrival_once() -> None:
    """16 threads start and finish 20,000 arrivals each while this one takes as fast as it can: the
    takes add up to every arrival, lag and service sample, and no user is left busy."""
    assert native.compiled is not None
    schedule = native.compiled.Schedule(1)
    threads, each = 16, 20_000
    sums: Counter[str] = Counter()
    lag: Counter[int] = Counter()
    service: Counter[int] = Counter()
    last: dict[str, object] = {}

    def fold() -> None:
        d = schedule.take()
        sums.update({k: d[k] for k in ("offered", "started", "dropped")})
        for name, into in (("lag", lag), ("service", service)):
            if d[name] is not None:  # under 2,048 us a value is its own counter: each is exact
                got = Counter({us: c for us, c in enumerate(decoded(d[name]).counts[:2048]) if c})
                assert sum(us * c for us, c in got.items()) == d[name + "_us"]
                into.update(got)
        assert d["queue_wait"] is None and 0 <= d["busy"] <= d["busy_max"] <= threads
        last.update(d)

    _taking(lambda: schedule._hammer(threads, each), fold)
    n = threads * each
    assert sums == Counter(offered=n, started=n) and last["busy"] == 0
    assert lag == Counter({us: k * threads for us, k in Counter(j % 1000 for j in range(each)).items()})
    assert service == Counter({1000 + r: k * threads for r, k in Counter(j % 7 for j in range(each)).items()})


def _taking(hammer: Callable[[], None], take: Callable[[], None]) -> int:
    """`hammer` (its threads, without the GIL) in a thread of its own, while this one runs `take` as
    fast as it can, and once more after: how many takes ran. An error of the hammer's is raised here."""
    failed: list[BaseException] = []

    def run() -> None:
        try:
            hammer()
        except BaseException as e:  # reported by the test's thread
            failed.append(e)

    writers = threading.Thread(target=run)
    writers.start()
    takes = 0
    while writers.is_alive():
        take()
        takes += 1
    writers.join()
    take()
    assert not failed, failed
    return takes + 1


def test_the_histograms_recorded_in_c_are_hdrhs_byte_for_byte() -> None:
    """What Python recorded value by value (hdrh's record_value, as the Python path did before the
    histograms were recorded in C) and what Counts recorded are the same encoding: every percentile,
    the minimum and the maximum are the same. Values on the edges of the sub-buckets, zero, the hour
    and beyond it (clipped to it, as Python clips), and many spread over the whole range."""
    assert native.compiled is not None
    rng = random.Random(7)
    edges = [0, 1, 2, 1023, 1024, 2047, 2048, 2049, 4095, 4096, 10**6, HIGHEST_US - 1, HIGHEST_US, HIGHEST_US + 1]
    for size in (1, 2, 3, 50, 5_000):
        counts, ref = native.compiled.Counts(2), new_histogram()
        values = [rng.choice(edges) if rng.random() < 0.2 else int(10 ** rng.uniform(0, 10)) for _ in range(size)]
        for us in values:
            counts.ok(1, us, 1)
            ref.record_value(min(us, HIGHEST_US))
        (none, *zero), (hist, n, q, total, _) = counts.take()
        assert none is None and zero == [0, 0, 0, 0]
        assert hist == ref.encode().decode("ascii") and (n, q, total) == (size, size, sum(values))
        mine = decoded(hist)
        for p in (0.0, 50.0, 90.0, 99.0, 99.9, 100.0):
            assert mine.get_value_at_percentile(p) == ref.get_value_at_percentile(p)


def test_a_gap_between_two_completions_is_a_quiet_span() -> None:
    """The writer that ends a gap of 50 ms or more records it (its start, the completion before; its
    end, its own); shorter ones are none. The sleep only lengthens the gap: no bound on time."""
    assert native.compiled is not None
    counts = native.compiled.Counts(1)
    counts.ok(0, 5, 1)
    counts.ok(0, 5, 1)  # under a resolution's gap: no span
    time.sleep(0.06)
    counts.ok(0, 5, 1)
    counts.take()
    spans, last, at, *_ = counts.quiet()
    assert len(spans) == 1 and spans[0][1] - spans[0][0] >= 60_000_000 and spans[0][1] == last <= at
    counts.take()
    assert counts.quiet()[0] == []  # taken once
