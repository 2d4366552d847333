"""The server host's CPU and disks: a real Prometheus node_exporter started here on a loopback port,
and the kernel's counters for the disk of a server on this machine."""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench_dsl.server.hostwatch import NotCounters, device_of, difference, parse_node_exporter

from ..conftest import BENCH, ROOT, run_bench
from ..exporter import free_port, node_exporter

PAGE = """# HELP node_cpu_seconds_total Seconds the CPUs spent in each mode.
# TYPE node_cpu_seconds_total counter
node_cpu_seconds_total{cpu="0",mode="idle"} %(idle)s
node_cpu_seconds_total{cpu="0",mode="iowait"} 10
node_cpu_seconds_total{cpu="0",mode="user"} %(user)s
node_cpu_seconds_total{cpu="0",mode="system"} 20
# TYPE node_disk_io_time_seconds_total counter
node_disk_io_time_seconds_total{device="sda"} %(io)s
node_disk_io_time_seconds_total{device="sdb"} 5
# TYPE node_disk_reads_completed_total counter
node_disk_reads_completed_total{device="sda"} %(reads)s
node_disk_reads_completed_total{device="sdb"} 7
# TYPE node_disk_writes_completed_total counter
node_disk_writes_completed_total{device="sda"} 100
node_disk_writes_completed_total{device="sdb"} 7
# TYPE node_disk_read_time_seconds_total counter
node_disk_read_time_seconds_total{device="sda"} %(rtime)s
node_disk_read_time_seconds_total{device="sdb"} 1
# TYPE node_disk_write_time_seconds_total counter
node_disk_write_time_seconds_total{device="sda"} 1
node_disk_write_time_seconds_total{device="sdb"} 1
"""


def test_figures_from_two_node_exporter_pages() -> None:
    a = parse_node_exporter(PAGE % {"idle": 100, "user": 50, "io": 10, "reads": 1000, "rtime": 2}, at=0.0)
    b = parse_node_exporter(PAGE % {"idle": 101, "user": 53, "io": 11.5, "reads": 1400, "rtime": 3}, at=2.0)
    s = difference(a, b)
    assert s is not None and s.seconds == 2.0
    assert s.cpu_pct == 75.0  # 3 s busy of 4 s: iowait counts as idle
    assert s.disks["sda"] == {"util_pct": 75.0, "iops": 200.0, "await_ms": 2.5}
    assert s.disks["sdb"]["util_pct"] == 0.0
    assert s.busiest() == ("sda", s.disks["sda"])


def test_the_disk_of_a_directory() -> None:
    assert device_of("/dev/shm") is None  # tmpfs: no disk of its own
    assert device_of("/definitely/not/there") is None


@pytest.fixture
def exporter() -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    with node_exporter() as running:
        yield running


WRITES = """
scenario "monitored" {
  target env("BENCH_DSN")
  monitor env("BENCH_MONITOR")
  workload custom {
    transaction write { query "INSERT INTO hw (v) VALUES (1)" }
  }
  setup { sql "CREATE TABLE IF NOT EXISTS hw (id BIGINT AUTO_INCREMENT PRIMARY KEY, v INT)" }
  users 4
  duration 12s
  report every 2s
  stop when { cpu(server) > 100% for 8s  disk_util(server) > 100% }
}
"""


@pytest.mark.slow
def test_node_exporter_gives_the_hosts_cpu_and_disks_and_a_lost_one_leaves_a_gap(
        exporter: tuple[subprocess.Popen[bytes], str], dsn_url: str, tmp_path: Path) -> None:
    proc, url = exporter
    f = tmp_path / "m.bench"
    f.write_text(WRITES.replace("cpu(server) > 100% for 8s  ", ""))
    out = tmp_path / "m.json"
    env = {**os.environ, "BENCH_MONITOR": url}
    run = subprocess.Popen([*BENCH, "run", str(f), "--headless", "--json", str(out), "--jsonl", "-"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT)
    assert run.stdout is not None
    intervals = 0
    for line in run.stdout:
        event = json.loads(line)
        if event["type"] == "interval" and event["measured"]:
            intervals += 1
            if intervals == 3:
                proc.terminate()  # the exporter goes away mid-run
                proc.wait(timeout=10)
    assert run.wait(timeout=120) == 0
    stderr = run.stderr.read() if run.stderr else ""
    doc = json.loads(out.read_text())
    assert doc["server"]["cpu_source"] == "node_exporter" and doc["server"]["monitor"] == url
    rows = [i for i in doc["intervals"] if i["measured"]]
    early, late = rows[:3], rows[4:]
    # the same machine: the exporter's host CPU is psutil's, within a few points. Its readings come
    # once a second on their own clock, so the first interval (the load starting) is left out, and
    # the two are held together over two intervals: each reading's second is up to one apart from
    # psutil's, which on a machine whose other work comes and goes (a suite beside it) made one
    # interval's 8 points apart
    exporter_cpu, psutil_cpu = (sum(i["cpu"][k] for i in rows[1:3]) / 2 for k in ("server", "host"))
    assert exporter_cpu == pytest.approx(psutil_cpu, abs=8)
    for i in early:
        assert i["disk"]["iops"] > 10 and i["disk"]["busiest"] in i["disk"]["devices"]
    assert any(i["disk"]["util_pct"] > 0 for i in early)  # each commit writes and syncs the redo log
    assert all("disk" not in i and i["cpu"]["server"] is None for i in late)  # a gap, not a stale figure
    assert f"could not read {url}" in stderr
    assert doc["status"] == "completed" and doc["summary"]["count"] > 0


@pytest.mark.slow
def test_a_disk_condition_that_cannot_be_read_is_refused_before_the_data_loads(tmp_path: Path) -> None:
    f = tmp_path / "d.bench"
    f.write_text("""scenario "tmpfs" {
  server { dir = "/dev/shm" }
  workload sysbench oltp_point_select { tables = 1  table_size = 100 }
  users 1
  duration 2s
  stop when { disk_util(server) > 90% }
}""")
    out = tmp_path / "d.json"
    r = run_bench("run", str(f), "--headless", "--json", str(out))
    assert r.returncode == 2, r.stderr
    assert "disk_util(server) > 90%: the server's disks cannot be read" in r.stderr
    doc = json.loads(out.read_text())
    assert doc["prepare"] is None and doc["status"] == "scenario_error"


class _Proxy:
    """A TCP proxy on 127.0.0.2 in a thread of its own: the session's server seen as one on another
    machine (bench-dsl finds no local process behind the address)."""

    def __init__(self, host: str, port: int) -> None:
        import asyncio
        import threading

        self.upstream = (host, port)
        self.loop = asyncio.new_event_loop()
        ready = threading.Event()

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            try:
                while data := await src.read(65536):
                    dst.write(data)
                    await dst.drain()
            except OSError:
                pass
            finally:
                dst.close()

        async def client(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            up_reader, up_writer = await asyncio.open_connection(*self.upstream)
            asyncio.ensure_future(pipe(reader, up_writer))
            asyncio.ensure_future(pipe(up_reader, writer))

        async def serve() -> None:
            self.server = await asyncio.start_server(client, "127.0.0.2", 0)
            self.port = self.server.sockets[0].getsockname()[1]
            ready.set()

        self.thread = threading.Thread(target=lambda: (self.loop.run_until_complete(serve()), self.loop.run_forever()),
                                       daemon=True)
        self.thread.start()
        ready.wait(10)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


@pytest.mark.slow
def test_cpu_of_a_server_on_another_machine_without_a_monitor_is_refused_at_start(dsn_url: str, tmp_path: Path) -> None:
    from bench_dsl.core.dsn import parse_dsn

    d = parse_dsn(dsn_url)
    proxy = _Proxy(d.host, d.port)
    try:
        remote = dsn_url.replace(f"@{d.host}:{d.port}/", f"@127.0.0.2:{proxy.port}/")
        f = tmp_path / "c.bench"
        f.write_text("""scenario "remote cpu" {
  target env("BENCH_REMOTE")
  workload sysbench oltp_point_select { tables = 1  table_size = 100 }
  users 1
  duration 2s
  stop when { cpu(server) > 80% }
}""")
        out = tmp_path / "c.json"
        r = run_bench("run", str(f), "--headless", "--json", str(out), env={"BENCH_REMOTE": remote})
        assert r.returncode == 2, r.stderr
        assert "cpu(server) > 80%: the server's CPU cannot be read" in r.stderr and "monitor" in r.stderr
        assert json.loads(out.read_text())["prepare"] is None
    finally:
        proxy.close()


NOBODY = """scenario "unwatched" {
  target env("BENCH_DSN")
  monitor env("BENCH_MONITOR")
  workload custom { transaction one { query "SELECT 1" } }
  users 1
  duration 2s
  %s
}"""


@pytest.mark.slow
def test_a_monitor_that_never_answers_is_refused_at_start_when_a_condition_needs_it(dsn_url: str,
                                                                                     tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}/metrics"  # nothing listens there
    f = tmp_path / "n.bench"
    f.write_text(NOBODY % "stop when { cpu(server) > 80% }")
    out = tmp_path / "n.json"
    r = run_bench("run", str(f), "--headless", "--json", str(out), env={"BENCH_MONITOR": url})
    assert r.returncode == 2, r.stderr
    assert f"cpu(server) > 80%: monitor {url} did not answer in 3 tries" in r.stderr
    assert "Connection refused" in r.stderr and "node_exporter" in r.stderr
    doc = json.loads(out.read_text())
    assert doc["status"] == "scenario_error" and doc["prepare"] is None and not doc["intervals"]
    assert f"monitor {url} did not answer" in doc["stop"]["message"]

    # without a condition on its figures, the same monitor is a warning: the run goes on with gaps
    f.write_text(NOBODY % "")
    r = run_bench("run", str(f), "--headless", "--json", str(out), env={"BENCH_MONITOR": url})
    assert r.returncode == 0, r.stderr
    assert f"monitor {url} did not answer ((111) Connection refused)" in r.stderr
    doc = json.loads(out.read_text())
    assert doc["status"] == "completed" and all(i["cpu"]["server"] is None for i in doc["intervals"])


@pytest.mark.parametrize("bad", ["NaN", "+Inf", "-Inf", "-3.0"])
def test_figures_no_counter_can_have_are_a_failed_scrape(bad: str) -> None:
    page = PAGE % {"idle": 100, "user": bad, "io": 10, "reads": 1000, "rtime": 2}
    with pytest.raises(NotCounters, match=re.escape(f'node_cpu_seconds_total{{cpu="0",mode="user"}} is {bad}')):
        parse_node_exporter(page, at=0.0)
    with pytest.raises(NotCounters, match='node_disk_io_time_seconds_total{device="sda"}'):
        parse_node_exporter(PAGE % {"idle": 100, "user": 5, "io": bad, "reads": 1000, "rtime": 2}, at=0.0)


class _Pages:
    """A crafted node_exporter page on a loopback port (node_exporter itself never serves NaN):
    `pages[i]` answers the i-th scrape, the last one every scrape after."""

    def __init__(self, pages: list[str]) -> None:
        import http.server
        import threading

        self.pages, self.served = pages, 0
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                body = outer.pages[min(outer.served, len(outer.pages) - 1)].encode()
                outer.served += 1
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/metrics"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(10)


GOOD = PAGE % {"idle": 100, "user": 50, "io": 10, "reads": 1000, "rtime": 2}
NAN_CPU_INF_DISK = PAGE % {"idle": 100, "user": "NaN", "io": "+Inf", "reads": 1000, "rtime": 2}


@pytest.mark.slow
def test_a_monitor_answering_nan_is_refused_at_start_and_a_stop_it_blinds_is_said(dsn_url: str,
                                                                                  tmp_path: Path) -> None:
    f = tmp_path / "nan.bench"
    out = tmp_path / "nan.json"
    f.write_text(NOBODY % "stop when { cpu(server) > 99%  disk_util(server) > 90% }")
    pages = _Pages([NAN_CPU_INF_DISK])  # NaN from the first scrape: the conditions could never be judged
    try:
        r = run_bench("run", str(f), "--headless", "--json", str(out), env={"BENCH_MONITOR": pages.url})
    finally:
        pages.close()
    assert r.returncode == 2, r.stderr
    assert (f"cpu(server) > 99%: monitor {pages.url} answered with figures that are not counters in 3 tries "
            '(node_cpu_seconds_total{cpu="0",mode="user"} is NaN: a counter is a finite number, never negative)'
            ) in r.stderr
    assert json.loads(out.read_text())["prepare"] is None

    # counters at the start, NaN and an infinite disk after: every scrape of the run fails, said once,
    # and each step says which stops it could not judge, instead of a clean step and "disk 100%"
    pages = _Pages([GOOD, NAN_CPU_INF_DISK])
    try:
        r = run_bench("run", str(f), "--headless", "--json", str(out), env={"BENCH_MONITOR": pages.url})
    finally:
        pages.close()
    assert r.returncode == 0, r.stderr
    assert f"could not read {pages.url}: node_cpu_seconds_total" in r.stderr and "is NaN" in r.stderr
    assert "s1: cpu(server) > 99%; disk_util(server) > 90%: not judged, no figure in this step" in r.stderr
    doc = json.loads(out.read_text())
    assert doc["status"] == "completed" and doc["stop"] is None
    assert all("disk" not in i and i["cpu"]["server"] is None for i in doc["intervals"])
    assert "Error" not in r.stderr  # no Python class name in what a person reads


@pytest.mark.slow
def test_a_monitor_without_the_figure_a_condition_needs_is_refused_at_start(dsn_url: str, tmp_path: Path) -> None:
    f = tmp_path / "nocpu.bench"
    f.write_text(NOBODY % "stop when { cpu(server) > 99% }")
    pages = _Pages([GOOD.split("# TYPE node_disk_io_time_seconds_total")[0].replace("node_cpu", "node_cpuX")])
    try:
        r = run_bench("run", str(f), "--headless", "--json", str(tmp_path / "n.json"), env={"BENCH_MONITOR": pages.url})
    finally:
        pages.close()
    assert r.returncode == 2, r.stderr
    assert f"cpu(server) > 99%: monitor {pages.url} has no node_cpu_seconds_total on its page" in r.stderr
