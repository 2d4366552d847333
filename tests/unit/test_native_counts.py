"""The C executor's Counts (bench_dsl/native/_native.c) without a server: a take never waits for the
users' threads (one held inside the writers' critical section, as a user preempted there is, does
not hold up a report), and writers recording at once while takes run lose and double nothing."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections import Counter

import pytest

from bench_dsl import native

pytestmark = pytest.mark.skipif(native.compiled is None, reason="built without the C executor")

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
assert first == [({10: 1}, 1), ({}, 0)], first
assert quiet[4] is None, quiet
assert second == [({}, 0), ({250: 1}, 3)], second
print("ok")
"""


def test_a_take_does_not_wait_for_a_writer_inside_its_critical_section() -> None:
    """A writer held inside (its completion written, not yet published): take() and quiet() return
    without it, and the next take counts the completion once released."""
    try:
        r = subprocess.run([sys.executable, "-c", _HELD], capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail("take() waited for the writer held inside its critical section")
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr


def test_writers_at_once_count_each_completion_once() -> None:
    """16 threads without the GIL record 50,000 completions each while this one takes as fast as it
    can: the takes add up to exactly what was recorded, latencies and statements alike."""
    assert native.compiled is not None
    counts = native.compiled.Counts(3)
    threads, each = 16, 50_000
    got: list[Counter[int]] = [Counter() for _ in range(3)]
    statements = [0, 0, 0]
    failed: list[BaseException] = []

    def fold() -> None:
        for i, (lat, q) in enumerate(counts.take()):
            got[i].update(lat)
            statements[i] += q

    def hammer() -> None:
        try:
            counts._hammer(threads, each)
        except BaseException as e:  # reported by the test's thread
            failed.append(e)

    writer = threading.Thread(target=hammer)
    writer.start()
    takes = 0
    while writer.is_alive():
        fold()
        takes += 1
    writer.join()
    fold()
    assert not failed, failed
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
s = _native.Schedule(1)
s._hold_user()
first = s.take()
s._release_user()
second = s.take()
third = s.take()
assert (first["offered"], first["started"], first["busy"], first["busy_max"], first["lag"]) == (0, 0, 0, 0, {}), first
assert (second["offered"], second["started"], second["busy"], second["busy_max"], second["lag"]) == \\
    (1, 1, 1, 1, {5: 1}), second
assert (third["offered"], third["started"], third["busy"], third["busy_max"], third["lag"]) == (0, 0, 1, 1, {}), third
print("ok")
"""


def test_a_schedule_take_does_not_wait_for_a_user_inside_its_mutex() -> None:
    """A user held inside the schedule's mutex, an arrival started: take() returns the schedule as
    it was before (nothing of a half-done section), and the next take counts the arrival once."""
    try:
        r = subprocess.run([sys.executable, "-c", _HELD_USER], capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail("Schedule.take() waited for the user held inside the schedule's mutex")
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr


def test_users_at_once_count_each_arrival_once() -> None:
    """16 threads start and finish 20,000 arrivals each while this one takes as fast as it can: the
    takes add up to every arrival, lag and service sample, and no user is left busy."""
    assert native.compiled is not None
    schedule = native.compiled.Schedule(1)
    threads, each = 16, 20_000
    sums: Counter[str] = Counter()
    lag: Counter[int] = Counter()
    service: Counter[int] = Counter()
    failed: list[BaseException] = []
    last: dict[str, object] = {}

    def fold() -> None:
        d = schedule.take()
        sums.update({k: d[k] for k in ("offered", "started", "dropped")})
        lag.update(d["lag"])
        service.update(d["service"])
        assert d["queue_wait"] == {} and 0 <= d["busy"] <= d["busy_max"] <= threads
        last.update(d)

    def hammer() -> None:
        try:
            schedule._hammer(threads, each)
        except BaseException as e:  # reported by the test's thread
            failed.append(e)

    users = threading.Thread(target=hammer)
    users.start()
    while users.is_alive():
        fold()
    users.join()
    fold()
    assert not failed, failed
    n = threads * each
    assert sums == Counter(offered=n, started=n) and last["busy"] == 0
    assert lag == Counter({us: k * threads for us, k in Counter(j % 1000 for j in range(each)).items()})
    assert service == Counter({1000 + r: k * threads for r, k in Counter(j % 7 for j in range(each)).items()})
