"""The server's own counters: SHOW GLOBAL STATUS read by the coordinator on its own connection,
recorded per interval and step, and judged by status(NAME) and status(NAME)/s conditions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench_dsl.engine.scenario_file import load

from ..conftest import run_bench, run_measured

pytestmark = pytest.mark.slow

SLEEPERS = """
scenario "sleepers" {{
  target env("BENCH_DSN")
  workload custom {{
    transaction nap {{ query "SELECT SLEEP(0.2)" }}
  }}
  ramp step {{ start 2 users  step x4  settle 1s  hold 3s  max 8 users }}
  report every 1s
  stop when {{ {stop} }}
}}
"""


# 2 users sleeping 0.2 s run at most 10 selects a second, 8 users at most 40: the bound 18 lies between
# them with room for a client a busy machine makes late (8 users fall to 18 only at 0.44 s a transaction)
@pytest.mark.parametrize("stop", ["status(Threads_running) > 5 for 2s", "status(Com_select)/s > 18"])
def test_a_status_condition_fires_on_the_load_that_crosses_it(stop: str, dsn_url: str, tmp_path: Path) -> None:
    f = tmp_path / "s.bench"
    f.write_text(SLEEPERS.format(stop=stop))
    out = tmp_path / "s.json"
    r, doc = run_measured("run", str(f), "--headless", "--json", str(out), out=out)
    assert r.returncode == 0, r.stderr
    # 2 users sleeping 0.2 s: 2 running, 10 selects/s; 8 users: 8 running, 40/s
    assert doc["stop"]["condition"] == stop and doc["stop"]["step"] == 2
    assert doc["saturation"]["users"] == 2
    first = doc["steps"][0]
    rate = first["server_status"]["com_select"]["per_s"]
    # the server counted the selects the users sent: their own rate, whatever the machine let it be
    assert rate <= 11 and rate == pytest.approx(first["count"] / first["seconds"], rel=0.15), (rate, first["count"])


@pytest.mark.alone  # the two windows' edges within 0.1 s: a busy machine delays the coordinator's readings
def test_status_counters_agree_with_the_clients_count(dsn_url: str, tmp_path: Path) -> None:
    f = tmp_path / "p.bench"
    f.write_text("""scenario "points" {
  target env("BENCH_DSN")
  workload sysbench oltp_point_select { tables = 1  table_size = 1000 }
  ramp step { start 2 users  step x2  settle 1s  hold 3s  max 4 users }
}""")
    out = tmp_path / "p.json"
    r = run_bench("run", str(f), "--headless", "--json", str(out))
    assert r.returncode == 0, r.stderr
    doc = json.loads(out.read_text())
    for step in doc["steps"]:
        status = step["server_status"]
        # one SELECT a transaction: the same rate (the two windows' edges differ by up to 0.1 s, which
        # at 90k a second is 3% of a 3 s step's count, so counts are compared as rates)
        assert status["seconds"] == pytest.approx(step["seconds"], abs=0.1)
        assert status["com_select"]["grew"] / status["seconds"] == pytest.approx(step["count"] / step["seconds"],
                                                                                  rel=0.02)
        assert status["buffer_pool_hit_ratio_pct"] > 90
        for name in ("threads_running", "threads_connected", "questions", "innodb_data_fsyncs", "com_commit"):
            assert name in status
        assert "innodb_rows_read" in status or "rows_read" in status  # MySQL, MariaDB
    assert all("server_status" in i for i in doc["intervals"][1:])


def test_an_unknown_status_variable_is_refused_at_start_with_the_closest_names(dsn_url: str, tmp_path: Path) -> None:
    f = tmp_path / "u.bench"
    f.write_text("""scenario "unknown" {
  target env("BENCH_DSN")
  workload sysbench oltp_point_select { tables = 1  table_size = 1000 }
  users 2
  duration 2s
  stop when { status(Threads_runing) > 32 }
}""")
    load(f)  # the file is valid: which variables exist is the server's to say
    out = tmp_path / "u.json"
    r = run_bench("run", str(f), "--headless", "--json", str(out))
    assert r.returncode == 2, r.stderr
    assert "status(Threads_runing): the server has no such status variable; did you mean Threads_running" in r.stderr
    doc = json.loads(out.read_text())
    assert doc["status"] == "scenario_error" and doc["prepare"] is None


def test_a_counter_mariadb_removed_is_named_with_what_counts_the_same(dsn_url: str, tmp_path: Path) -> None:
    f = tmp_path / "removed.bench"
    f.write_text("""scenario "removed" {
  target env("BENCH_DSN")
  workload sysbench oltp_write_only { tables = 1  table_size = 1000 }
  users 2
  duration 2s
  stop when { status(Innodb_rows_inserted)/s > 100000  status(Innodb_system_rows_read)/s > 100000 }
}""")
    r = run_bench("run", str(f), "--headless", "--json", str(tmp_path / "r.json"))
    assert r.returncode == 2, r.stderr
    # the tests' server is a MariaDB (10.11 here), which has none of them
    assert "MariaDB removed the Innodb_rows_* and Innodb_system_rows_* counters MySQL still has" in r.stderr
    assert "status(Innodb_rows_inserted): the server has no such status variable; MariaDB removed" in r.stderr
    assert "status(Handler_write) counts the rows inserted by every engine" in r.stderr
    assert "status(Rows_read) counts the rows read by every engine" in r.stderr
    assert "did you mean" not in r.stderr
