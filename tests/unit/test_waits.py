"""bench_dsl.measure.cpu.Waits: the queues for the CPU and the disks a step's row holds apart from
its CPU % ("pressure", "server_sched"), as bench_dsl.attribution reads them."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from bench_dsl.measure.cpu import RunDelay, Waits
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


class _Proc:
    """A /proc of one process whose threads' run delay grows at a rate each (s/s), on a clock the
    test moves: what RunDelay reads, and how many schedstat files each of its samples opened."""

    def __init__(self, root: Path, rates: dict[int, float], monkeypatch: pytest.MonkeyPatch) -> None:
        self.task = root / "7" / "task"
        self.rates = dict(rates)
        self.ns = dict.fromkeys(rates, 1000)
        self.opened: list[str] = []
        self._write()
        real_open = os.open

        def counting_open(path: Any, *args: Any, **kwargs: Any) -> int:
            if str(path).endswith("/schedstat"):
                self.opened.append(str(path))
            return real_open(path, *args, **kwargs)
        monkeypatch.setattr(os, "open", counting_open)

    def _write(self) -> None:
        for tid, ns in self.ns.items():
            (self.task / str(tid)).mkdir(parents=True, exist_ok=True)
            (self.task / str(tid) / "schedstat").write_text(f"123456 {ns} 42\n")

    def advance(self, seconds: float) -> None:
        for tid, rate in self.rates.items():
            self.ns[tid] += round(rate * seconds * 1e9)
        self._write()

    def end(self, tid: int) -> None:
        shutil.rmtree(self.task / str(tid))
        del self.rates[tid], self.ns[tid]

    def start(self, tid: int, rate: float) -> None:
        self.rates[tid], self.ns[tid] = rate, 0
        self._write()

    def take(self, delay: RunDelay, now: float) -> float | None:
        self.opened.clear()
        return delay.take(now)


def test_run_delay_reads_every_thread_each_sample_up_to_its_bound(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    proc = _Proc(tmp_path, {7: 0.25, 8: 0.5, 9: 0.0, 30: 1.25}, monkeypatch)
    delay = RunDelay(7, root=tmp_path, cap=4)
    assert proc.take(delay, 100.0) is None  # no thread read twice yet
    assert len(proc.opened) == 4
    proc.advance(2.0)
    assert proc.take(delay, 102.0) == pytest.approx(2.0)  # the threads' sum, per second
    assert len(proc.opened) == 4
    proc.end(30)  # a thread gone takes its delay with it; a new one counts from its second read
    proc.start(31, 3.0)
    proc.advance(1.0)
    assert proc.take(delay, 103.0) == pytest.approx(0.75)
    proc.advance(0.5)
    assert proc.take(delay, 103.5) == pytest.approx(3.75)


def test_run_delay_reads_at_most_its_bound_a_sample_and_comes_round_to_every_thread(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A server with 1,200 threads (one per connection) and a bound of 500 files a sample: every
    sample opens 500, every thread is read every third sample, and once each was read twice the
    figure is the threads' whole run delay, not the part read last."""
    rates = {tid: (tid % 7) / 100 for tid in range(100, 1300)}
    proc = _Proc(tmp_path, rates, monkeypatch)
    delay = RunDelay(7, root=tmp_path, cap=500)
    read: dict[str, int] = {}
    got = None
    for second in range(6):
        got = proc.take(delay, 50.0 + second)
        assert len(proc.opened) == 500
        for path in proc.opened:
            read[path] = read.get(path, 0) + 1
        proc.advance(1.0)
    assert len(read) == 1200 and set(read.values()) == {2, 3}  # 3000 reads, round the 1,200
    assert got == pytest.approx(sum(rates.values()))



class _Conn:
    """What ServerCounters' reading asks of its connection, written down."""

    def __init__(self) -> None:
        self.sent: list[str] = []

    async def ping(self, reconnect: bool = False) -> None:
        self.sent.append("COM_PING")

    def thread_id(self) -> int:
        return 9

    def cursor(self) -> Any:
        conn = self

        class Cursor:
            async def __aenter__(self) -> Cursor:
                return self

            async def __aexit__(self, *exc: object) -> None:
                return None

            async def execute(self, sql: str, args: object = None) -> None:
                conn.sent.append(sql.split(" WHERE")[0])

            async def fetchall(self) -> list[tuple[object, ...]]:
                return [("Threads_running", "3")] if conn.sent[-1] == "SHOW GLOBAL STATUS" else []
        return Cursor()


@pytest.mark.parametrize("env", ["1", "0"])
def test_the_harness_alone_leaves_out_the_ping_and_the_processlist(env: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """BENCH_SAMPLE_SESSIONS=0 (bench/sampling.py's runs without them): the status is read as ever."""
    import asyncio

    from bench_dsl.server.counters import SAMPLE_SESSIONS, ServerCounters

    async def reading() -> list[str]:
        monkeypatch.setenv(SAMPLE_SESSIONS, env)
        c = ServerCounters(lambda _: asyncio.sleep(0, {}), lambda _: None)
        c.status_names, conn = ("threads_running",), _Conn()
        await c._select_1(conn)  # type: ignore[arg-type]
        assert c._status is not None and c._status[1] == {"threads_running": 3.0}
        return conn.sent
    sent = asyncio.run(reading())
    assert sent == (["COM_PING", "SHOW GLOBAL STATUS", "SHOW PROCESSLIST"] if env == "1" else ["SHOW GLOBAL STATUS"])
