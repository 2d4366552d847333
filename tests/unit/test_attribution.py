"""What breaks first (bench_dsl.attribution), on constructed step rows shaped as a result records
them: for each class a case where it must win, with its confidence, and one where it must be ruled
out with its figure; the unexplained case; the baseline; the time profile's arithmetic; the JSON.
Recorded runs, rows of any shape and the package's shape: test_attribution_recorded.py."""

from __future__ import annotations

import json
from typing import Any

import pytest

from bench_dsl.attribution import Context, Diagnosis, attribute
from bench_dsl.attribution.model import Finding, NoSignal, RuledOut
from bench_dsl.attribution.profile import profile_of
from bench_dsl.attribution.registry import RULES
from bench_dsl.attribution.window import Step, baseline

TWO = Context(cores=2, shared_machine=False, max_connections=151, client_probed=True)


def st(per_s: float | None = None, value: float | None = None, **more: Any) -> dict[str, Any]:
    """One server_status variable as the result records it."""
    return {"value": value if value is not None else 0.0, "grew": per_s, "per_s": per_s, **more}


def row(step: int = 6, users: int = 32, tps: float = 1000.0, latency_avg: float = 20.0, running: float | None = None,
        cpu: tuple[float | None, float | None, float | None] = (20.0, 40.0, 10.0),
        status: dict[str, Any] | None = None, disk: dict[str, Any] | None = None,
        **extra: Any) -> dict[str, Any]:
    """A step row: `running` is Threads_running's mean; the server idle by default (no row locks,
    no misses, a quiet disk)."""
    server_status: dict[str, Any] = {
        "seconds": 10.0,
        "innodb_row_lock_time": st(0.0), "innodb_row_lock_waits": st(0.0),
        "innodb_buffer_pool_reads": st(0.0), "innodb_buffer_pool_read_requests": st(50_000.0),
        "innodb_data_fsyncs": st(0.0), "com_commit": st(tps),
        "threads_connected": st(None, users + 1.0), "buffer_pool_hit_ratio_pct": 100.0,
    }
    if running is not None:
        server_status["threads_running"] = st(None, 1.0, mean=running)
    server_status.update(status or {})
    return {"type": "step", "step": step, "users": users, "complete": True, "seconds": 10.0, "tps": tps,
            "qps": tps, "latency_ms": {"avg": latency_avg, "p99": 4 * latency_avg}, "errors_by_code": {},
            "cpu": dict(zip(("server", "host", "client"), cpu)), "server_status": server_status,
            "disk": disk if disk is not None else {"busiest": "vda", "util_pct": 12.0, "iops": 80.0, "await_ms": 1.0},
            "client_lag_ms": {"loop": {"p90": 0.8}, "thread": {"p90": 0.6}}, **extra}


def earlier(tps: float = 400.0, **kw: Any) -> list[dict[str, Any]]:
    """A climb's first steps, the last at half S's throughput or less: the baseline."""
    return [row(step=1, users=2, tps=tps / 4, running=2.0, **kw), row(step=2, users=8, tps=tps, running=4.0, **kw)]


def outcome(v: Diagnosis, cls: str) -> Finding | RuledOut | NoSignal:
    every: list[Finding | RuledOut | NoSignal] = [*v.findings, *v.ruled_out, *v.no_signal]
    for o in every:
        if o.cls == cls:
            return o
    raise AssertionError(f"{cls} neither found, ruled out nor without signal")


# --- the time profile --------------------------------------------------------------------------

def test_the_profile_splits_the_sessions_time_by_littles_law() -> None:
    """N = 40 users; A = 21 - 1 = 20; cpu = 50% x 2 cores = 1 s/s; row locks 8000 ms/s = 8 sessions;
    other = 20 - 1 - 8 = 11. Shares of N: outside 0.5, cpu 0.025, row locks 0.2, other 0.275."""
    p = profile_of(Step(row(users=40, running=21.0, cpu=(50.0, 60.0, 5.0),
                            status={"innodb_row_lock_time": st(8000.0)})), TWO)
    assert (p.sessions_in_flight, p.active_in_server, p.active_from) == (40.0, 20.0, "mean")
    assert (p.cpu_s_per_s, p.row_lock_s_per_s) == (1.0, 8.0)
    assert (p.outside_share, p.cpu_share, p.row_lock_share, p.other_share) == (0.5, 0.025, 0.2, 0.275)
    assert sum(x or 0.0 for x in (p.outside_share, p.cpu_share, p.row_lock_share, p.other_share)) == pytest.approx(1)
    assert p.of_active(p.row_lock_share) == 0.4  # "40% of running sessions waiting"


def test_an_open_loop_counts_its_busy_users_or_rate_times_service_time() -> None:
    busy = row(users=100, running=11.0, rate_tps=500.0, offered_tps=500.0, busy=20.0)
    assert profile_of(Step(busy), TWO).sessions_in_flight == 20.0
    rate = row(users=100, tps=500.0, running=11.0, offered_tps=500.0, service_ms={"avg": 30.0})
    rate["latency_ms"]["avg"] = 90.0  # from when each was due: the queue's wait is no session in flight
    p = profile_of(Step(rate), TWO)
    assert p.sessions_in_flight == 15.0 and p.outside_share == pytest.approx(1 - 10 / 15, abs=1e-3)


def test_threads_running_from_readings_one_reading_or_none() -> None:
    readings = row(users=10, status={"threads_running": st(None, 9.0, readings=[3.0, 5.0, 7.0])})
    assert (profile_of(Step(readings), TWO).active_in_server, profile_of(Step(readings), TWO).active_from) == (
        4.0, "readings")
    one = profile_of(Step(row(users=10, status={"threads_running": st(None, 6.0)})), TWO)
    assert (one.active_in_server, one.active_from, one.threads_running) == (5.0, "one reading", 6.0)
    none = profile_of(Step(row(users=10, cpu=(25.0, 30.0, 5.0))), TWO)
    assert (none.active_in_server, none.outside_share, none.other_share) == (None, None, None)
    assert none.cpu_share == 0.05  # 0.5 s/s of CPU against 10 sessions in flight: still known


def test_a_point_sample_below_the_cpu_is_raised_to_it() -> None:
    """Threads_running read once as 1 (the sampler alone) while mysqld used 1.5 cores: at least 1.5
    sessions were in the server, not 0."""
    p = profile_of(Step(row(users=20, cpu=(75.0, 90.0, 10.0), status={"threads_running": st(None, 1.0)})), TWO)
    assert (p.active_in_server, p.threads_running, p.cpu_share, p.other_share) == (1.5, 1.0, 0.075, 0.0)


def test_a_mean_below_the_cpu_keeps_the_mean_and_scales_the_parts_into_it() -> None:
    """A measured A of 1 beside 1.5 s/s of mysqld's CPU: the excess is its background threads, not
    sessions; the shares still add up to 1."""
    p = profile_of(Step(row(users=4, running=2.0, cpu=(75.0, 90.0, 10.0))), TWO)
    assert (p.active_in_server, p.outside_share, p.cpu_share, p.other_share) == (1.0, 0.75, 0.25, 0.0)


# --- the baseline ------------------------------------------------------------------------------

def test_the_baseline_is_the_latest_step_at_half_the_throughput_or_less() -> None:
    steps = [row(step=i, tps=t) for i, t in enumerate((100.0, 300.0, 450.0, 700.0), start=1)]
    assert baseline(row(step=5, tps=1000.0), steps)["step"] == 3  # type: ignore[index]
    assert baseline(row(step=3, tps=1000.0), [row(step=1, tps=600.0), row(step=2, tps=800.0)])["step"] == 1  # type: ignore[index]
    assert baseline(row(step=1), []) is None
    cut = [row(step=1, tps=100.0), {**row(step=2, tps=400.0), "complete": False}]
    assert baseline(row(step=3, tps=1000.0), cut)["step"] == 1  # type: ignore[index]
    assert attribute(row(step=5, tps=1000.0, running=5.0), steps, TWO).baseline_step == 3


# --- each class wins where it must -------------------------------------------------------------

def test_row_locks_win_on_a_hot_row_rising_with_users() -> None:
    s = row(users=48, running=41.0, cpu=(35.0, 50.0, 8.0),
            status={"innodb_row_lock_time": st(30_000.0)}, lock_waits={"table": "acct", "index": "PRIMARY",
                                                                       "share": 0.9, "samples": 10})
    b = earlier(status={"innodb_row_lock_time": st(600.0)})
    v = attribute(s, b, TWO)
    assert (v.cls, v.confidence, v.share) == ("row_locks", "high", 0.625)
    assert v.words.startswith("limited by row locks on acct (75% of running sessions waiting); not server CPU "
                              "(35% of its 2 cores), not disk (util 12%, await 1.0 ms)")
    assert {e.figure for e in v.evidence if e.corroborates} == {"row_lock_of_active", "row_lock_rising"}
    rising = next(e for e in v.evidence if e.figure == "row_lock_rising")
    assert (rising.value, rising.baseline) == (0.75, 0.2)


def test_row_locks_are_ruled_out_with_their_share_of_running_sessions() -> None:
    v = attribute(row(running=31.0, status={"innodb_row_lock_time": st(600.0)}), earlier(), TWO)
    r = outcome(v, "row_locks")
    assert isinstance(r, RuledOut) and (r.figure, r.value, r.limit) == ("row_lock_of_active", 0.02, 0.3)
    assert r.why == "not row locks: 2% of running sessions waited for a row lock"


def test_server_cpu_wins_against_the_cores_it_may_use_not_the_hosts() -> None:
    """The trap: a mysqld held to one core of two shows 48% of the host, and is at its limit."""
    ctx = Context(cores=2, allowed_cores=1, shared_machine=True)
    s = row(users=16, running=15.0, cpu=(48.0, 62.0, 12.0), pressure={"cpu": {"some": 40.0}})
    v = attribute(s, earlier(cpu=(20.0, 30.0, 5.0)), ctx)
    assert (v.cls, v.confidence) == ("server_cpu", "high")
    assert v.words.startswith("limited by server CPU (96% of the 1 core it may use)")
    assert v.share == 0.875  # on a CPU or queued for one: all of the time inside, A = 14 of N = 16
    busy = v.evidence[0]
    assert (busy.figure, busy.value, busy.unit, busy.limit, busy.baseline) == ("cpu.server", 0.96, "cores", 0.9, 0.4)
    assert isinstance(outcome(v, "machine_cpu"), RuledOut)


def test_server_cpu_without_a_saturation_sign_is_medium() -> None:
    v = attribute(row(users=16, running=15.0, cpu=(48.0, 62.0, 12.0)), earlier(),
                  Context(cores=2, allowed_cores=1, shared_machine=True))
    assert (v.cls, v.confidence) == ("server_cpu", "medium")
    assert "one signal only" in v.notes[0]


def test_server_cpu_is_ruled_out_as_a_share_of_its_cores() -> None:
    v = attribute(row(running=5.0, cpu=(35.0, 45.0, 10.0)), earlier(), TWO)
    r = outcome(v, "server_cpu")
    assert isinstance(r, RuledOut)
    assert (r.figure, r.value, r.unit, r.limit) == ("cpu.server", 0.7, "cores", 1.8)
    assert r.why == "not server CPU: the server used 35% of the 2 cores it may use"


def test_the_shared_machines_cpu_wins_when_both_sides_are_short_of_their_own() -> None:
    ctx = Context(cores=2, shared_machine=True)
    s = row(users=64, running=20.0, cpu=(55.0, 98.0, 40.0), client_cpu_by_process={"worker 1": 45.0, "worker 2": 35.0},
            client_lag_ms={"loop": {"p90": 25.0}, "thread": {"p90": 18.0}})
    v = attribute(s, earlier(cpu=(20.0, 40.0, 15.0)), ctx)
    assert (v.cls, v.confidence) == ("machine_cpu", "high")
    assert v.words.startswith("limited by the machine's CPU, shared by client and server (98% busy")
    assert isinstance(outcome(v, "server_cpu"), RuledOut)  # 55% of its 2 cores


def test_the_shared_machines_cpu_is_ruled_out_by_the_hosts_figure() -> None:
    v = attribute(row(running=5.0, cpu=(30.0, 62.0, 20.0)), earlier(), Context(cores=2, shared_machine=True))
    r = outcome(v, "machine_cpu")
    assert isinstance(r, RuledOut) and (r.figure, r.value, r.limit) == ("cpu.host", 62.0, 90.0)
    client_own = row(running=5.0, cpu=(30.0, 95.0, 50.0), client_cpu_by_process={"worker 1": 97.0})
    r = outcome(attribute(client_own, earlier(), Context(cores=2, shared_machine=True)), "machine_cpu")
    assert isinstance(r, RuledOut) and "worker 1 process used 97% of a core" in r.why


def test_a_host_busy_with_other_work_is_the_limit_only_when_a_side_waits_for_a_core() -> None:
    busy = row(running=31.0, cpu=(5.0, 96.0, 8.0))
    r = outcome(attribute(busy, earlier(), Context(cores=2, shared_machine=True)), "machine_cpu")
    assert isinstance(r, RuledOut) and "mostly with other work" in r.why
    waiting = row(running=31.0, cpu=(5.0, 96.0, 8.0), client_lag_ms={"loop": {"p90": 40.0}, "thread": {"p90": 30.0}})
    f = outcome(attribute(waiting, earlier(), Context(cores=2, shared_machine=True)), "machine_cpu")
    assert isinstance(f, Finding) and f.words.startswith("the machine's CPU, busy with other work (96% busy")


def test_the_client_wins_when_its_probe_said_so_and_sessions_wait_outside() -> None:
    why = ("bench-dsl itself was the limit: its worker 1 process used 98% of a core, "
           "so the server carries at least 40 users")
    v = attribute(row(users=40, running=5.0, cpu=(15.0, 70.0, 50.0)), earlier(),
                  Context(cores=2, client_limit=why, client_probed=True))
    assert (v.cls, v.confidence, v.share) == ("client", "high", 0.9)
    assert v.evidence[0].note == why
    assert isinstance(outcome(v, "network"), RuledOut)  # the time outside is the client's own


def test_the_client_is_ruled_out_by_its_probe_with_its_cpu() -> None:
    r = outcome(attribute(row(running=20.0), earlier(), TWO), "client")
    assert isinstance(r, RuledOut) and (r.figure, r.value) == ("cpu.client", 10.0)
    assert r.why == ("not the client: its probe found it short of nothing "
                     "(CPU 10% of the machine, scheduling lag p90 0.8 ms)")


def test_the_client_has_no_signal_unless_the_probe_ran() -> None:
    n = outcome(attribute(row(running=20.0), earlier(), Context(cores=2)), "client")
    assert isinstance(n, NoSignal) and "client probe" in n.why


def test_the_disk_wins_busy_and_slower_than_the_baseline() -> None:
    s = row(running=31.0, disk={"busiest": "vda", "util_pct": 97.0, "iops": 900.0, "await_ms": 12.0})
    v = attribute(s, earlier(disk={"busiest": "vda", "util_pct": 30.0, "iops": 300.0, "await_ms": 2.0}), TWO)
    assert (v.cls, v.confidence) == ("disk", "high")
    assert v.share == pytest.approx((30 - 0.4) / 32, abs=1e-3)
    wait = next(e for e in v.evidence if e.figure == "disk.await_ms")
    assert (wait.value, wait.limit, wait.baseline, wait.corroborates) == (12.0, 6.0, 2.0, True)


def test_the_disk_busy_on_util_alone_is_medium_a_parallel_device_may_have_room() -> None:
    s = row(running=31.0, disk={"busiest": "nvme0n1", "util_pct": 99.0, "iops": 900.0, "await_ms": 0.3})
    v = attribute(s, earlier(disk={"busiest": "nvme0n1", "util_pct": 60.0, "iops": 400.0, "await_ms": 0.3}), TWO)
    assert (v.cls, v.confidence) == ("disk", "medium")


def test_the_disk_is_ruled_out_by_its_util() -> None:
    r = outcome(attribute(row(running=31.0), earlier(), TWO), "disk")
    assert isinstance(r, RuledOut) and (r.figure, r.value, r.short) == ("disk.util_pct", 12.0,
                                                                          "disk (util 12%, await 1.0 ms)")


def test_the_buffer_pool_wins_and_the_busy_disk_is_its_symptom() -> None:
    """An 8M pool under random reads: 3 reads from disk a transaction, the disk busy with them."""
    s = row(running=31.0, disk={"busiest": "vda", "util_pct": 96.0, "iops": 3000.0, "await_ms": 9.0},
            status={"innodb_buffer_pool_reads": st(3000.0), "innodb_buffer_pool_read_ahead": st(0.0),
                    "innodb_buffer_pool_wait_free": st(0.0), "buffer_pool_hit_ratio_pct": 94.0})
    b = earlier(disk={"busiest": "vda", "util_pct": 40.0, "iops": 1200.0, "await_ms": 2.0},
                status={"innodb_buffer_pool_reads": st(1200.0)})
    v = attribute(s, b, TWO)
    assert (v.cls, v.confidence) == ("buffer_pool", "high")
    assert v.words.startswith("limited by the buffer pool (3 reads from disk per transaction, hit ratio 94.0%)")
    disk = outcome(v, "disk")
    assert isinstance(disk, Finding) and disk.symptom_of == "buffer_pool"


def test_the_buffer_pool_is_ruled_out_by_its_reads_per_transaction() -> None:
    r = outcome(attribute(row(running=31.0, status={"innodb_buffer_pool_reads": st(10.0)}), earlier(), TWO),
                "buffer_pool")
    assert isinstance(r, RuledOut) and (r.figure, r.value) == ("buffer_pool_reads_per_tx", 0.01)


def test_the_commit_flush_wins_on_a_slow_busy_flush() -> None:
    s = row(running=31.0, status={"innodb_data_fsyncs": st(900.0)},
            disk={"busiest": "vda", "util_pct": 60.0, "iops": 1000.0, "await_ms": 1.0, "flush_ms": 0.95,
                  "flush_busy_pct": 85.0})
    b = earlier(status={"innodb_data_fsyncs": st(400.0)},
                disk={"busiest": "vda", "util_pct": 20.0, "iops": 400.0, "await_ms": 1.0, "flush_ms": 0.2})
    v = attribute(s, b, TWO)
    assert (v.cls, v.confidence) == ("commit_flush", "high")
    assert v.words.startswith("limited by the commit flush (flush busy 85% of the time, 0.9 ms a flush, 900 fsyncs/s, "
                              "1.1 commits each)")


def test_the_commit_flush_under_a_cgroups_write_limit_shows_in_io_pressure_and_commits_per_fsync() -> None:
    """A provoked run (innodb_flush_log_at_trx_commit = 1, the server's writes throttled by a blkio
    cgroup): the device's own flush time says nothing (the limit waits above it); I/O pressure does,
    and at most one commit per session to an fsync says the commits waited for them. Without a
    flush a commit (trx_commit = 2), far more commits an fsync: not the commit flush."""
    s = row(users=8, tps=139.0, running=9.0, cpu=(1.0, 94.0, 0.7), status={"innodb_data_fsyncs": st(35.5)},
            pressure={"io": {"some": 52.0}})
    v = attribute(s, earlier(tps=78.0, status={"innodb_data_fsyncs": st(40.8)}), TWO)
    assert (v.cls, v.confidence) == ("commit_flush", "high"), v.words
    assert [f.cls for f in v.findings if f.symptom_of == "commit_flush"] == ["disk"]
    lazy = row(users=8, tps=3000.0, running=9.0, cpu=(20.0, 94.0, 3.0), status={"innodb_data_fsyncs": st(20.0)},
               pressure={"io": {"some": 52.0}})
    r = outcome(attribute(lazy, earlier(), TWO), "commit_flush")
    assert isinstance(r, RuledOut) and "150 commits an fsync" in r.why


def test_the_commit_flush_is_ruled_out_without_fsyncs_and_silent_without_flush_times() -> None:
    v = attribute(row(running=31.0), earlier(), TWO)
    r = outcome(v, "commit_flush")
    assert isinstance(r, RuledOut) and (r.figure, r.value) == ("innodb_data_fsyncs", 0.0)
    n = outcome(attribute(row(running=31.0, status={"innodb_data_fsyncs": st(500.0)}), earlier(), TWO), "commit_flush")
    assert isinstance(n, NoSignal) and "flush latency" in n.why


def test_the_redo_log_wins_near_its_maximum_with_a_stall() -> None:
    s = row(running=31.0, stall_s=1.8, stall_total_s=1.8,
            status={"innodb_checkpoint_age": st(None, 90.0, readings=[80.0, 91.0, 95.0, 101.0, 92.0]),
                    "innodb_checkpoint_max_age": st(None, 100.0)})
    v = attribute(s, earlier(), TWO)
    assert (v.cls, v.confidence) == ("redo_log", "high")
    assert v.words.startswith("limited by the redo log (checkpoint age past 7/8 of its maximum in 80% of readings)")


def test_the_redo_log_is_ruled_out_by_its_checkpoint_age() -> None:
    s = row(running=31.0, status={"innodb_checkpoint_age": st(None, 40.0),
                                  "innodb_checkpoint_max_age": st(None, 100.0)})
    r = outcome(attribute(s, earlier(), TWO), "redo_log")
    assert isinstance(r, RuledOut) and (r.figure, r.value) == ("checkpoint_age_ratio", 0.4)
    assert r.why == "not the redo log: checkpoint age at most 40% of its maximum"


def test_table_locks_win_on_sessions_waiting_for_a_metadata_lock() -> None:
    s = row(users=24, running=21.0,
            processlist={"samples": 10, "active_mean": 20.0, "states": {"Waiting for table metadata lock": 18.0,
                                                                        "Sending data": 2.0}})
    v = attribute(s, earlier(), TWO)
    assert (v.cls, v.share) == ("table_locks", 0.75)
    # two signals: the processlist's states, and the time profile's sessions in the server off CPU
    assert v.confidence == "high"
    assert [e.figure for e in v.evidence if e.corroborates] == ["lock_waiting_of_sampled", "other_of_active"]
    assert "Waiting for table metadata lock" in v.words
    # the states alone, the sessions in the server mostly on CPU: medium
    busy = row(users=24, running=3.0, cpu=(80.0, 90.0, 10.0), processlist=s["processlist"])
    assert attribute(busy, earlier(), TWO).confidence != "high"


def test_named_locks_win_on_sessions_waiting_in_get_lock() -> None:
    """Users that serialize on GET_LOCK: the server counts no row lock and no table lock for them,
    and once said "unexplained: 100% in other waits"; the processlist names them "User lock"."""
    s = row(users=16, running=16.0, cpu=(2.0, 10.0, 2.0),
            processlist={"samples": 8, "active_mean": 15.0, "states": {"User lock": 14.0, "Sending data": 1.0}})
    v = attribute(s, earlier(), TWO)
    assert (v.cls, v.share, v.confidence) == ("user_locks", 0.875, "high"), v.words
    assert [e.figure for e in v.evidence if e.corroborates] == ["lock_waiting_of_sampled", "other_of_active"]
    assert v.words.startswith("limited by GET_LOCK's named locks (93% of sessions 'User lock')"), v.words
    # their waiters are no disk's and no table lock's
    assert isinstance(outcome(v, "table_locks"), RuledOut)
    disk = outcome(v, "disk")
    assert not isinstance(disk, Finding) or (disk.share or 0) < 0.5


def test_named_locks_are_ruled_out_by_the_sampled_states_and_silent_without_them() -> None:
    s = row(running=21.0, processlist={"samples": 10, "active_mean": 20.0, "states": {"Sending data": 20.0}})
    r = outcome(attribute(s, earlier(), TWO), "user_locks")
    assert isinstance(r, RuledOut) and (r.figure, r.value) == ("lock_waiting_of_sampled", 0.0)
    assert r.why == "not GET_LOCK's named locks: 0% of sampled sessions waited for one"
    assert isinstance(outcome(attribute(row(running=21.0), earlier(), TWO), "user_locks"), NoSignal)


def test_sessions_waiting_for_a_table_lock_are_no_disks_even_under_io_pressure() -> None:
    """A provoked run (LOCK TABLES held by a side session) on a machine whose other work put I/O
    pressure at 30%: half the sampled sessions waited for the metadata lock and the rest of the
    time in the server was short. The lock's waiters are taken out of the disk's share: table
    locks, not the disk."""
    s = row(users=4, running=5.0, cpu=(3.0, 90.0, 2.0), pressure={"io": {"some": 30.0}},
            processlist={"samples": 2, "active_mean": 3.5, "states": {"Waiting for table metadata lock": 2.0,
                                                                      "Writing to net": 1.0, "Preparing": 0.5}})
    v = attribute(s, earlier(), TWO)
    assert v.cls == "table_locks", v.words
    disk = outcome(v, "disk")
    assert not isinstance(disk, Finding) or (disk.share or 0) < 0.5


def test_an_await_risen_on_an_idle_disk_is_no_sign() -> None:
    s = row(running=21.0, disk={"busiest": "vda", "util_pct": 2.0, "iops": 3.0, "await_ms": 0.35})
    v = attribute(s, earlier(disk={"busiest": "vda", "util_pct": 1.0, "iops": 3.0, "await_ms": 0.1}), TWO)
    assert isinstance(outcome(v, "disk"), RuledOut)


def test_table_locks_are_ruled_out_by_the_sampled_states() -> None:
    s = row(running=21.0, processlist={"samples": 10, "active_mean": 20.0, "states": {"Sending data": 20.0}})
    r = outcome(attribute(s, earlier(), TWO), "table_locks")
    assert isinstance(r, RuledOut) and (r.figure, r.value) == ("lock_waiting_of_sampled", 0.0)


def test_a_refused_connection_is_a_limit_whatever_the_shares() -> None:
    s = row(users=20, running=6.0, errors_by_code={"1040": 12}, status={"threads_connected": st(None, 21.0)})
    v = attribute(s, earlier(), Context(cores=2, shared_machine=False, max_connections=21))
    assert (v.cls, v.confidence) == ("connections", "high")
    assert v.words.startswith("limited by connections (12 users refused, max_connections 21)")


def test_connections_are_ruled_out_when_none_was_refused() -> None:
    r = outcome(attribute(row(running=21.0), earlier(), TWO), "connections")
    assert isinstance(r, RuledOut) and (r.figure, r.value) == ("refused", 0.0)
    assert r.why == "not connections: none refused, 33 connected of max_connections 151"


def test_the_network_wins_on_round_trips_while_the_client_is_idle() -> None:
    s = row(users=40, running=5.0, tps=1000.0, latency_avg=12.0, network={"rtt_ms": 2.0})
    s["qps"] = 5000.0  # five statements a transaction: 10 ms of round trips in 12
    v = attribute(s, earlier(), TWO)
    assert (v.cls, v.confidence, v.share) == ("network", "high", 0.9)


def test_a_loopback_round_trip_is_no_wire_however_short_the_transaction() -> None:
    """Point selects on this machine: 0.15 ms round trips in 0.25 ms transactions are the two
    sides' CPU, not a network (the CPU rules weigh them)."""
    s = row(users=16, running=3.0, tps=60_000.0, latency_avg=0.25, network={"rtt_ms": 0.15})
    r = outcome(attribute(s, earlier(), TWO), "network")
    assert isinstance(r, RuledOut) and (r.figure, r.value) == ("rtt_of_latency", 0.6)


def test_a_round_trip_that_waited_for_a_busy_servers_cpu_is_no_wire() -> None:
    """The server at its one core's limit: the ping waited for a core like every statement (2.3 ms,
    its threads 5 waiting for one); the round trip is the CPU's queue, not the network's."""
    s = row(users=8, running=2.0, tps=1500.0, latency_avg=5.3, network={"rtt_ms": 2.3},
            server_sched={"run_delay_s_per_s": 5.3})
    r = outcome(attribute(s, earlier(), TWO), "network")
    assert isinstance(r, RuledOut) and r.figure == "rtt_of_latency"
    idle = row(users=8, running=2.0, tps=1500.0, latency_avg=5.3, network={"rtt_ms": 5.3},
               server_sched={"run_delay_s_per_s": 0.6})
    assert attribute(idle, earlier(), TWO).cls == "network"


def test_the_network_is_ruled_out_when_sessions_are_in_the_server() -> None:
    r = outcome(attribute(row(running=31.0), earlier(), TWO), "network")
    assert isinstance(r, RuledOut) and (r.figure, r.value) == ("active_share", 0.938)


# --- no signal, unexplained, confidence --------------------------------------------------------

def test_a_rule_without_its_figures_says_no_signal() -> None:
    v = attribute(row(running=31.0, status={"innodb_data_fsyncs": st(500.0)}), earlier(), TWO)
    silent = {n.cls for n in v.no_signal}
    assert {"commit_flush", "redo_log", "table_locks"} <= silent
    bare = attribute({"step": 1, "users": 4}, [], Context())
    assert bare.cls == "unexplained" and len(bare.no_signal) + len(bare.ruled_out) == len(RULES)


def test_unexplained_when_no_signal_supports_a_class() -> None:
    """Sessions in the server, off CPU, no row locks, a quiet disk, no misses: a metadata lock, say,
    which only a sampled processlist would show. Say so rather than guess."""
    v = attribute(row(running=31.0, status={"innodb_data_fsyncs": st(500.0)}), earlier(), TWO)
    assert (v.cls, v.confidence, v.findings) == ("unexplained", "low", ())
    assert v.would_tell is not None and "performance_schema" in v.would_tell and "table_locks" in v.would_tell
    assert v.words.startswith("unexplained: no resource passed its limit (the sessions' time: 6% outside the server, "
                              "1% on CPU, 0% on row locks, 92% in other waits); performance_schema's wait classes "
                              "would tell; not server CPU (20% of its 2 cores)")
    assert {r.cls for r in v.ruled_out} >= {"server_cpu", "disk", "buffer_pool", "row_locks", "client"}


def test_one_reading_of_threads_running_holds_the_confidence_to_medium() -> None:
    s = row(users=48, status={"innodb_row_lock_time": st(30_000.0), "threads_running": st(None, 41.0)})
    v = attribute(s, earlier(status={"innodb_row_lock_time": st(600.0)}), TWO)
    assert (v.cls, v.confidence) == ("row_locks", "medium")
    assert "one reading of Threads_running" in v.notes[-1]


def test_a_close_second_holds_the_confidence_to_medium() -> None:
    """Row locks and the disk each explain about half the time in the server."""
    s = row(users=40, running=41.0, status={"innodb_row_lock_time": st(19_000.0)},
            disk={"busiest": "vda", "util_pct": 97.0, "iops": 900.0, "await_ms": 12.0})
    v = attribute(s, earlier(status={"innodb_row_lock_time": st(100.0)},
                             disk={"busiest": "vda", "util_pct": 20.0, "iops": 100.0, "await_ms": 2.0}), TWO)
    assert (v.cls, v.confidence, v.share) == ("disk", "medium", 0.515)
    assert [(f.cls, f.share) for f in v.findings] == [("disk", 0.515), ("row_locks", 0.475)]
    assert v.notes == ("row_locks comes close (48% of the sessions' time)",)
    assert v.words.startswith("likely limited by disk vda (util 97%, await 12.0 ms)")


def test_a_small_share_is_low_and_says_what_is_left_unexplained() -> None:
    """Row locks hold 38% of the few sessions in the server, but the sessions spend 90% of their
    time outside it, and nothing says why: low, with the top two and the off-CPU share."""
    s = row(users=40, running=5.0, status={"innodb_row_lock_time": st(1500.0)})
    v = attribute(s, earlier(status={"innodb_row_lock_time": st(10.0)}), TWO)
    assert (v.cls, v.confidence, v.share) == ("row_locks", "low", 0.037)
    assert v.words.startswith("perhaps limited by row locks (38% of running sessions waiting), "
                              "53% of running sessions off CPU and off row locks; not server CPU")


# --- the JSON ----------------------------------------------------------------------------------

CASES = {
    "row_locks": (row(users=48, running=41.0, status={"innodb_row_lock_time": st(30_000.0)}),
                  earlier(status={"innodb_row_lock_time": st(600.0)}), TWO),
    "buffer_pool": (row(running=31.0, disk={"busiest": "vda", "util_pct": 96.0, "iops": 3.0, "await_ms": 9.0},
                        status={"innodb_buffer_pool_reads": st(3000.0)}), earlier(), TWO),
    "unexplained": (row(running=31.0), earlier(), TWO),
    "bare": ({"step": 1, "users": 4}, [], Context()),
}


@pytest.mark.parametrize("case", CASES)
def test_a_verdict_survives_json(case: str) -> None:
    v = attribute(*CASES[case])
    text = json.dumps(v.to_json())
    assert Diagnosis.from_json(json.loads(text)) == v


def test_the_json_names_its_fields_for_a_reader() -> None:
    d = attribute(*CASES["row_locks"]).to_json()
    assert {"class", "confidence", "share", "evidence", "ruled_out", "profile", "words", "findings", "no_signal",
            "baseline_step", "would_tell"} <= d.keys()
    assert (d["class"], d["confidence"]) == ("row_locks", "high")
    assert {"figure", "value", "unit", "limit", "baseline"} <= d["evidence"][0].keys()
    assert {"class", "why", "figure", "value"} <= d["ruled_out"][0].keys()
    assert {"sessions_in_flight", "active_in_server", "outside_share", "cpu_share", "row_lock_share",
            "other_share"} <= d["profile"].keys()
