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


def test_the_processlists_samples_make_a_windows_mean_sessions_by_state_and_its_least_round_trip() -> None:
    from bench_dsl.measure.processlist import States, states_of

    st = States()
    def rows(*states: tuple[int, str, str | None]) -> list[tuple[object, ...]]:
        return [(i, "u", "h", "db", command, 0, state, None, 0.0) for i, command, state in states]

    lock = "Waiting for table metadata lock"
    # the idle sessions and the sampler itself (id 9) are left out
    st.add(states_of(rows((1, "Query", lock), (2, "Query", lock), (3, "Query", lock), (4, "Query", None),
                          (5, "Sleep", ""), (9, "Query", "starting")), own_id=9), 4.2)
    st.add(states_of(rows((1, "Query", lock), (2, "Execute", "Sending data"), (6, "Daemon", "InnoDB purge"))), 3.9)
    st.add(None, 5.0)  # a reading whose processlist could not be read: its round trip still counts
    assert st.to_json() == {"samples": 2, "active_mean": 3.0,
                            "states": {"Sending data": 0.5, "Waiting for table metadata lock": 2.0}}
    assert st.network() == {"rtt_ms": 3.9}
    assert States().to_json() is None and States().network() is None
