"""The C executor's Counts (bench_dsl/native/src/counts.c) without a server: a take never waits for the
users' threads (one held inside the writers' critical section, as a user preempted there is, does
not hold up a report), and writers recording at once while takes run lose and double nothing."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Callable

import pytest

from bench_dsl import native

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
assert first == [({10: 1}, 1), ({}, 0)], first
assert quiet[4] is None, quiet
assert second == [({}, 0), ({250: 1}, 3)], second
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


def test_writers_at_once_count_each_completion_once() -> None:
    """16 threads without the GIL record 50,000 completions each while this one takes as fast as it
    can: the takes add up to exactly what was recorded, latencies and statements alike."""
    assert native.compiled is not None
    counts = native.compiled.Counts(3)
    threads, each = 16, 50_000
    got: list[Counter[int]] = [Counter() for _ in range(3)]
    statements = [0, 0, 0]

    def fold() -> None:
        for i, (lat, q) in enumerate(counts.take()):
            got[i].update(lat)
            statements[i] += q

    takes = _taking(lambda: counts._hammer(threads, each), fold)
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
        lag.update(d["lag"])
        service.update(d["service"])
        assert d["queue_wait"] == {} and 0 <= d["busy"] <= d["busy_max"] <= threads
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
