"""bench_dsl.measure.cpu.Waits: the queues for the CPU and the disks a step's row holds apart from
its CPU % ("pressure", "server_sched"), as bench_dsl.attribution reads them."""

from __future__ import annotations

import os

from bench_dsl.measure.cpu import Waits
from bench_dsl.measure.metrics import PRESSURE_KEY, SCHED_KEY, WAIT_KEYS


def test_a_process_on_this_machine_gets_its_run_delay_and_the_machines_pressure() -> None:
    w = Waits(os.getpid())
    sum(i * i for i in range(200_000))  # some time between the two samples
    got = w.sample()
    assert got[SCHED_KEY + "run_delay_s_per_s"] is not None and got[SCHED_KEY + "run_delay_s_per_s"] >= 0
    if os.path.exists("/proc/pressure/cpu"):
        assert 0 <= (got[PRESSURE_KEY + "cpu"] or 0) <= 100 * os.cpu_count()  # type: ignore[operator]
    # only under a CPU quota (a CI's container): a process without one is never throttled
    assert got.get(SCHED_KEY + "throttled_s_per_s", 0.0) >= 0  # type: ignore[operator]
    assert all(k.startswith(WAIT_KEYS) for k in got)


def test_without_a_server_process_only_the_machines_pressure() -> None:
    assert all(k.startswith(PRESSURE_KEY) for k in Waits(None).sample())
