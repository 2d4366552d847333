"""A starved worker is a measured client limit, not a failure (issue 39, 2): a report later than the
deadline from a worker that is alive is taken at the next collect, its wait recorded with the host's
runnable threads, and the client-limit verdict names it; a worker that is gone still fails the collect."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import socket
import sys
import time
from typing import Any

import pytest

from bench_dsl.engine import client_limit
from bench_dsl.fleet import coordinator
from bench_dsl.fleet.base import Health, WorkerFailed, WorkerReport
from bench_dsl.fleet.coordinator import WorkerFleet, WorkerHandle
from bench_dsl.fleet.process import ProcessFleet, _Proc
from bench_dsl.measure.schedlag import LagWindow
from bench_dsl.measure.stalls import Quiet


class _Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def monotonic(self) -> float:
        return self.now


class _Fleet(WorkerFleet):
    """Two workers; worker 2's reports are answered only when the test says (`answer`)."""

    def __init__(self, clock: _Clock, alive: bool) -> None:
        self.clock = clock
        self.alive = alive
        self.asked = {0: 0, 1: 0}
        self.held: asyncio.Future[dict[str, Any]] | None = None
        super().__init__(type("Sc", (), {"seed": 1})(), None, ("point",), 2,  # type: ignore[arg-type]
                         lambda text, level: self.logged.append(text))
        self.logged: list[str] = []
        self.procs = [WorkerHandle(0), WorkerHandle(1)]

    def _reply(self, p: WorkerHandle) -> dict[str, Any]:
        report = WorkerReport({}, Health(0, 0.0, None, {}, connected=750), 750, [Quiet((), None, self.clock.now)])
        wire = report.to_wire()
        wire["processes"] = {p.name: {"cpu_s": 1.0, "wall_s": 1.0, "lag": {}, "host": "h", "cores": 2,
                                      "runnable_threads": 1900}}
        return wire

    def _send(self, p: Any, msg: dict[str, Any]) -> asyncio.Future[dict[str, Any]]:
        fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        if msg["op"] == "report":
            self.asked[p.index] += 1
        if msg["op"] in ("report", "pace") and p.index == 1:
            self.held = fut  # answered by the test
        else:
            fut.set_result(self._reply(p))
        return fut

    async def _alive(self, p: Any) -> bool:
        return self.alive


async def test_a_late_report_of_a_live_worker_is_taken_at_the_next_collect_with_its_wait(
        monkeypatch: pytest.MonkeyPatch) -> None:
    clock = _Clock(100.0)
    monkeypatch.setattr(coordinator, "time", clock)
    monkeypatch.setattr(coordinator, "REPLY_TIMEOUT", 0.05)
    fleet = _Fleet(clock, alive=True)
    first = await fleet.collect()  # worker 2 silent past the deadline, alive: late, not lost
    assert first.active == 750 and first.processes["worker 2"].report_wait_s == 0.0
    assert any("worker process 1 has not answered 'report'" in text and "its report will come late" in text
               for text in fleet.logged)
    clock.now = 104.2
    assert fleet.held is not None
    fleet.held.set_result(fleet._reply(fleet.procs[1]))
    second = await fleet.collect()
    assert fleet.asked == {0: 2, 1: 1}  # the late answer was awaited, not asked for again
    assert second.active == 1500 and second.waits()["worker 2"] == (4.2, 1900)
    window = LagWindow()
    window.add_waits(first.waits())
    window.add_waits(second.waits())
    figures = window.to_json()
    assert figures == {"client_reports_late": {"worker 2": {"waited_s": 4.2, "runnable_threads": 1900}}}
    assert client_limit.why(figures, 100.0, 1500) == (
        "the client machine was the limit: its worker 2 reported 4.2 s late while 1,900 threads were runnable, "
        "so the server carries at least 1500 users")


async def test_a_worker_gone_silent_and_not_alive_still_fails_the_collect(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(coordinator, "REPLY_TIMEOUT", 0.05)
    fleet = _Fleet(_Clock(100.0), alive=False)
    with pytest.raises(WorkerFailed, match=re.escape("worker process 1 did not answer 'report' in 0.05s")) as lost:
        await fleet.collect()
    assert lost.value.partial is not None and lost.value.partial.active == 750


def test_a_report_waited_for_less_than_a_tick_is_not_late() -> None:
    window = LagWindow()
    window.add_waits({"worker 1": (0.4, 1900)})
    assert window.to_json() == {}
    assert client_limit.why(window.to_json(), 100.0, 10) is None


@pytest.mark.parametrize(("code", "stop", "state", "alive"), [
    ("while True: pass", False, "R", True),  # it runs or waits for a core: starved at worst
    ("while True: pass", True, "T", False),  # stopped: it will not answer
    ("import time; time.sleep(120)", False, "S", False),  # every thread asleep: stuck
])
async def test_a_worker_process_is_alive_when_one_of_its_threads_is_runnable(code: str, stop: bool, state: str,
                                                                             alive: bool) -> None:
    proc = await asyncio.create_subprocess_exec(sys.executable, "-c", f"print('ready', flush=True)\n{code}",
                                                stdout=asyncio.subprocess.PIPE)
    try:
        assert proc.stdout is not None and await proc.stdout.readline() == b"ready\n"
        if stop:
            proc.send_signal(signal.SIGSTOP)
        # past its print, the state it then keeps: the kernel's, which no event announces (60 s: a hung
        # test's, never a busy machine's)
        deadline = time.monotonic() + 60
        while _state(proc.pid) != state:
            assert time.monotonic() < deadline, f"the process never reached state {state}"
            await asyncio.sleep(0.01)
        assert await ProcessFleet.__new__(ProcessFleet)._alive(_Proc(0, proc)) is alive
    finally:
        proc.kill()
        await proc.wait()


def _state(pid: int) -> str:
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[0]


async def test_a_ray_actor_is_alive_while_ray_calls_its_node_alive() -> None:
    """Ray's own heartbeat (the GCS's view of the node) for an actor on another machine; on this one,
    its process's state as well."""
    from bench_dsl.fleet.ray import RayFleet, _Actor

    alive = {"n1": True, "n2": False}
    fleet = RayFleet.__new__(RayFleet)
    fleet.ray = type("Ray", (), {"nodes": staticmethod(lambda: [{"NodeID": k, "Alive": v} for k, v in alive.items()])})
    elsewhere, lost = _Actor(0, "n1", "node1.example"), _Actor(1, "n2", "node2.example")
    elsewhere.pid = lost.pid = 1
    assert await fleet._alive(elsewhere) and not await fleet._alive(lost)
    elsewhere.dead = True
    assert not await fleet._alive(elsewhere)
    here = _Actor(2, "n1", socket.gethostname())
    here.pid = os.getpid()  # this process: its thread runs this test
    assert await fleet._alive(here)


@pytest.mark.parametrize("alive", [True, False])
async def test_a_new_rate_waits_for_no_live_worker_that_is_late(monkeypatch: pytest.MonkeyPatch, alive: bool) -> None:
    """A starved worker takes a rate when it reads it; one that is gone fails the change, as before."""
    monkeypatch.setattr(coordinator, "REPLY_TIMEOUT", 0.05)
    fleet = _Fleet(_Clock(100.0), alive=alive)
    fleet._users = 1500
    if alive:
        await fleet.pace(1000.0, False, 0)
        assert [p.rate for p in fleet.procs] == [500.0, 500.0]
    else:
        with pytest.raises(WorkerFailed, match="did not take a new rate"):
            await fleet.pace(1000.0, False, 0)
