"""The control path first (issue 39, 1): a process's threads that answer the coordinator rank above
its users' threads, whether it may lower a niceness (root: control below, users as they were) or not
(users above). Each case runs in a process of its own: niceness set here would stay with the suite's."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from bench_dsl.core import priority

# In a fresh process: the worker's start (priority.control_first, as Worker.handle does), then a
# user's thread of the C executor (NativeUser._serve, its core left out) and the lag probe's thread:
# the niceness of each, as the kernel has it.
CHILD = """
import asyncio, json, os, queue, sys, threading, time
from bench_dsl.core import priority
from bench_dsl.measure.schedlag import LagProbe
from bench_dsl.native.executor import NativeUser

if sys.argv[1] == "refused":  # as a user without CAP_SYS_NICE: a niceness may go up, never down
    real = os.setpriority
    def setpriority(which, who, value):
        if value < priority.nice_of(who):
            raise PermissionError("not permitted")
        real(which, who, value)
    os.setpriority = setpriority

async def main():
    probe = LagProbe(period=0.01)
    probe.start()  # as the worker does, before its start message
    users = priority.control_first()
    user = NativeUser.__new__(NativeUser)
    user._lock, user._busy, user._closing = threading.Lock(), False, False
    user._calls, user._thread = queue.SimpleQueue(), None
    on_user = await user._on_thread(lambda: priority.nice_of(threading.get_native_id()))
    user._calls.put(None)
    while priority.nice_of(probe._thread.native_id) != users:  # it sets its own at its next wakeup
        await asyncio.sleep(0.01)
    probe.stop()
    print(json.dumps({"control": priority.nice_of(threading.get_native_id()), "user": on_user, "users": users}))

asyncio.run(main())
"""


def _child(mode: str) -> dict[str, int]:
    out = subprocess.run([sys.executable, "-c", CHILD, mode], capture_output=True, text=True, timeout=60, check=True)
    return json.loads(out.stdout)


def test_where_it_may_lower_a_niceness_the_control_thread_goes_below_the_users() -> None:
    if os.geteuid() != 0:  # the suite runs as root (CI, this machine); the other case is the next test's
        got = _child("refused")
        assert got["control"] == 0 and got["user"] == got["users"] == priority.CONTROL_GAIN
        return
    got = _child("may")
    assert got == {"control": -priority.CONTROL_GAIN, "user": 0, "users": 0}


def test_where_it_may_not_the_users_threads_go_above_the_control_thread() -> None:
    got = _child("refused")
    assert got == {"control": 0, "user": priority.CONTROL_GAIN, "users": priority.CONTROL_GAIN}


def test_a_ray_actor_at_nice_15_puts_its_users_at_0_or_as_far_above_its_control_as_it_may(
        monkeypatch: pytest.MonkeyPatch) -> None:
    nice: dict[int, int] = {}
    monkeypatch.setattr(priority, "_users_nice", None)  # put back after the test: this process runs no users
    monkeypatch.setattr(os, "getpriority", lambda which, who: 15)
    monkeypatch.setattr(os, "listdir", lambda path: ["1", "2"])

    def refused(which: int, who: int, value: int) -> None:
        if value < 15:
            raise PermissionError("not root")
        nice[who] = value

    monkeypatch.setattr(os, "setpriority", refused)
    assert priority.control_first(0) == priority.NICEST  # not root: the coordinator warns of nice 19
    assert nice == {1: 15, 2: 15}

    monkeypatch.setattr(os, "setpriority", lambda which, who, value: nice.__setitem__(who, value))
    assert priority.control_first(0) == 0 and nice == {1: -priority.CONTROL_GAIN, 2: -priority.CONTROL_GAIN}


def test_users_on_the_control_threads_loop_rank_as_it_does(monkeypatch: pytest.MonkeyPatch) -> None:
    """asyncmy's users are coroutines of the loop that answers the coordinator: one niceness for both,
    the users' (a Ray actor's 0 where it may be set, as before)."""
    nice: dict[int, int] = {}
    monkeypatch.setattr(priority, "_users_nice", None)
    monkeypatch.setattr(os, "getpriority", lambda which, who: 15)
    monkeypatch.setattr(os, "listdir", lambda path: ["1", "2"])
    monkeypatch.setattr(os, "setpriority", lambda which, who, value: nice.__setitem__(who, value))
    assert priority.control_first(0, apart=False) == 0 and nice == {1: 0, 2: 0}

    def refused(which: int, who: int, value: int) -> None:
        if value < 15:
            raise PermissionError("not root")
        nice[who] = value

    monkeypatch.setattr(os, "setpriority", refused)
    assert priority.control_first(0, apart=False) == 15 and nice == {1: 15, 2: 15}


def test_a_coordinator_that_goes_on_is_back_at_its_niceness_once_its_fleet_stopped(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The next run of a study starts its server from this process: not at the control niceness."""
    nice = {1: 0, 2: 0}
    monkeypatch.setattr(priority, "_users_nice", None)
    monkeypatch.setattr(priority, "_before", None)
    monkeypatch.setattr(os, "getpriority", lambda which, who: nice[1])
    monkeypatch.setattr(os, "listdir", lambda path: ["1", "2"])
    monkeypatch.setattr(os, "setpriority", lambda which, who, value: nice.__setitem__(who, value))
    priority.control_first()
    assert nice == {1: -priority.CONTROL_GAIN, 2: -priority.CONTROL_GAIN}
    priority.control_first()  # a second start before a stop ranks as the first
    assert nice == {1: -priority.CONTROL_GAIN, 2: -priority.CONTROL_GAIN}
    priority.restore()
    assert nice == {1: 0, 2: 0} and priority.users_nice() is None
