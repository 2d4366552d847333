"""Real runs against a real server (the session's throwaway server, or BENCH_DSN)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
import subprocess
import time
from importlib import resources
from pathlib import Path

import jsonschema
import pytest

from bench_dsl.engine.plan import plan
from bench_dsl.engine.scenario_file import load
from bench_dsl.server.embedded import EmbeddedServer

from ..conftest import BENCH, ROOT, default_signals, loaded_by, primary_and_replica, run_bench, run_measured
from ..exporter import node_exporter

pytestmark = pytest.mark.slow

SCHEMA = json.loads(resources.files("bench_dsl.results.schema").joinpath("result-v1.json").read_text())
SHIPPED = sorted([*ROOT.glob("examples/*.bench"), *ROOT.glob("scenarios/*.bench")])
# Shipped scenarios use the data sizes of the studies they reproduce; the tests shrink them.
SMALL = {"table_size": "2000", "tables": "2", "users": "8", "warehouses": "1", "rows": "2000"}


# run as whole studies in tests/e2e/test_study.py, and the storage brief in tests/e2e/test_storage_brief.py
STUDIED = {"io-capacity-sweep.bench", "disks.bench", "storage-brief.bench"}
CLUSTERED = {"cluster.bench"}  # workers ray: run on a Ray cluster in tests/e2e/test_ray.py


def _result(path: Path) -> dict:
    doc = json.loads(path.read_text())
    jsonschema.validate(doc, SCHEMA)
    return doc


def _defines(path: Path) -> list[str]:
    text = path.read_text()
    return [a for k, v in SMALL.items() if f"let {k} " in text or f"let {k}=" in text for a in ("-D", f"{k}={v}")]


@pytest.mark.parametrize("path", [p for p in SHIPPED if p.name not in STUDIED | CLUSTERED], ids=lambda p: str(p.relative_to(ROOT)))
def test_every_shipped_file_runs(path: Path, dsn_url: str, tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    study: list[str] = []
    sc = load(path, env={**os.environ, "BENCH_SSD_DIR": str(tmp_path), "BENCH_HDD_DIR": "/var/tmp"})
    if sc.study is not None:  # here: a study's first configuration, once
        study = ["--repeat", "1", *(a for k, v in sc.study.configurations[0].values for a in ("--only", f"{k}={v}"))]
    # the studies' own durations (5-minute holds) shrunk to some 4 s a file (what the test proves: every
    # phase runs and measures, not how much); every phase lasts 1 s at least
    scale = min(0.05, 4.0 / plan(sc, 1.0, 2).seconds)
    with contextlib.ExitStack() as stack:
        # a monitor is a real node_exporter on this machine: one that never answers is refused at the start
        # when a condition needs it (tests/engine/test_hostwatch.py)
        monitor = stack.enter_context(node_exporter())[1] if sc.monitor is not None else ""
        # a replica is a real one, of a primary of its own (a server is refused as its own replica)
        servers = {}
        if sc.replica_dsns:
            primary, replica = stack.enter_context(primary_and_replica())
            servers = {"BENCH_DSN": primary.url(), "BENCH_REPLICA_DSN": replica.url()}
        r = run_bench("run", str(path), "--headless", "--json", str(out), "--time-scale", f"{scale:.4f}",
                      "--max-steps", "2", *_defines(path), *study,
                      env={"BENCH_SSD_DIR": str(tmp_path), "BENCH_HDD_DIR": "/var/tmp",
                           "BENCH_MONITOR": monitor, **servers})
    assert r.returncode in (0, 3), r.stderr
    if sc.study is not None:
        (out,) = (tmp_path / "r").glob("c1-*/repeat-1.json")
    doc = _result(out)
    assert doc["status"] == "completed"
    assert doc["summary"]["count"] > 0
    assert doc["steps"] and all(s["count"] > 0 for s in doc["steps"])
    assert r.stdout == ""  # headless: stdout is data only, and no data was asked for


def test_quickstart_measures_like_sysbench(dsn_url: str, tmp_path: Path) -> None:
    out, lines = tmp_path / "q.json", tmp_path / "q.jsonl"
    r, _ = run_measured("run", "examples/quickstart.bench", "--json", str(out), "--jsonl", str(lines),
                        "--time-scale", "0.25", out=out)
    assert r.returncode == 0, r.stderr
    doc = _result(out)
    tx = doc["summary"]["transactions"]["oltp_read_write"]
    # sysbench oltp_read_write: 18 statements + BEGIN/COMMIT per transaction
    assert tx["qps"] == pytest.approx(tx["tps"] * 20, rel=0.01)
    for row in doc["steps"] + doc["intervals"]:  # sysbench's r/w/o: 14 reads, 4 writes, BEGIN and COMMIT
        st = row["statements"]
        assert st["reads_per_s"] == pytest.approx(row["tps"] * 14, abs=0.1)
        assert st["writes_per_s"] == pytest.approx(row["tps"] * 4, abs=0.1)
        assert st["reads_per_s"] + st["writes_per_s"] + st["other_per_s"] == pytest.approx(row["qps"], rel=0.001)
    lat = tx["latency_ms"]
    assert 0 < lat["min"] <= lat["p50"] <= lat["p90"] <= lat["p95"] <= lat["p99"] <= lat["max"]
    assert doc["server"]["variables"]["innodb_buffer_pool_size"]
    assert doc["scenario"]["text"].startswith("# examples/quickstart.bench")
    assert doc["saturation"]["users"] == 8 and doc["saturation"]["saturated"] is False
    events = [json.loads(x) for x in lines.read_text().splitlines()]
    kinds = [e["type"] for e in events]
    assert kinds[0] == "begin" and "started" in kinds and kinds[-1] == "finished" and "interval" in kinds
    intervals = [e for e in events if e["type"] == "interval"]
    assert [i["t"] for i in intervals] == sorted(i["t"] for i in intervals)
    assert sum(i["count"] for i in intervals if i["measured"]) == doc["summary"]["count"]


SERIAL = """
scenario "serialized" {{
  workload custom {{
    # one named lock for everyone: throughput cannot grow with users, latency grows with them. Taken,
    # held and released in one statement, so that no round trip to the client falls inside the lock:
    # a client slowed by a busy machine in one step only (a fresh-clone CI) cannot move its throughput
    transaction serial {{
      query "SELECT GET_LOCK('bench-dsl-serial', 10), SLEEP(0.02), RELEASE_LOCK('bench-dsl-serial')"
    }}
  }}
  ramp step {{ start 1 users  step x4  settle 1s  hold 3s  max 16 users }}
  stop when {{ {stop} }}
  report every 1s
}}
"""


@pytest.mark.parametrize(("stop", "kind"), [("tps plateau 20%", "plateau"), ("p90(serial) kink 2x", "kink")])
def test_tight_condition_finds_the_saturation_point(stop: str, kind: str, dsn_url: str, tmp_path: Path) -> None:
    f = tmp_path / "serial.bench"
    # from 4 users: one user alone pays its round trip outside the lock, which a queue of them hides
    f.write_text(SERIAL.format(stop=stop).replace("start 1 users", "start 4 users"))
    # a step the machine froze in (3 s holds: a second of stalls is a quarter) is no clean measurement,
    # and only a stall condition is judged on it: no plateau or kink fired (seen once in a fresh-clone CI)
    out = tmp_path / "s.json"
    r, _ = run_measured("run", str(f), "--json", str(out), out=out)
    assert r.returncode == 0, r.stderr
    doc = _result(out)
    assert doc["stop"] is not None, r.stderr
    assert doc["stop"]["reason"] == "stop_condition" and doc["stop"]["condition"] == stop
    sat = dict(doc["saturation"])
    what_ran_out = sat.pop("bottleneck")  # the step that ended the climb's (tests/e2e/test_bottleneck.py)
    assert sat == {"users": 4, "step": 1, "saturated": True, "condition": stop, "reason": f"stopped by: {stop}",
                   "steps_completed": 2, "limited_by": None, "axis": "users"}
    step1, step2 = doc["steps"]
    assert what_ran_out == step2["bottleneck"]
    assert (step1["users"], step2["users"]) == (4, 16)
    fired = step2["conditions"][0]
    assert fired["fired"] and fired["kind"] == kind and fired["previous"] is not None
    assert "saturation point: 4 users" in r.stderr


def test_sustained_condition_ends_the_run_mid_step(dsn_url: str, tmp_path: Path) -> None:
    f = tmp_path / "live.bench"
    f.write_text(SERIAL.format(stop="p50(serial) > 40ms for 2s").replace("hold 3s", "hold 8s"))
    out = tmp_path / "l.json"
    r, _ = run_measured("run", str(f), "--json", str(out), out=out)
    assert r.returncode == 0, r.stderr
    doc = _result(out)
    assert doc["stop"]["condition"] == "p50(serial) > 40ms for 2s"
    assert doc["stop"]["step"] == 2 and doc["stop"]["value"] > 40
    assert doc["saturation"]["users"] == 1
    assert doc["steps"][-1]["complete"] is False  # the partial step is kept, marked as such: cut mid-hold


def test_expect_failure_sets_exit_status_3(dsn_url: str, tmp_path: Path) -> None:
    f = tmp_path / "e.bench"
    # beyond the ramp's 16 users: it fails whichever step the plateau ends (a stalled first step once
    # made the second look like growth, and the saturation point 4 users)
    f.write_text(SERIAL.format(stop="tps plateau 20%").replace("report every 1s", "report every 1s expect { saturation >= 32 users }"))
    out = tmp_path / "e.json"
    r = run_bench("run", str(f), "--json", str(out))
    assert r.returncode == 3, r.stderr
    doc = _result(out)
    (expect,) = doc["expect"]
    assert expect["value"] == doc["saturation"]["users"] < 32
    assert expect == {"expect": "saturation >= 32 users", "value": expect["value"], "limit": 32.0, "unit": "users",
                      "passed": False}
    assert doc["exit_code"] == 3


def _wait_for_intervals(path: Path, n: int, proc: subprocess.Popen[str], timeout: float = 120) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        if path.exists():
            doc = json.loads(path.read_text())  # atomic writes: never a torn file
            if len(doc["intervals"]) >= n:
                return doc
        time.sleep(0.2)
    raise AssertionError("no intervals written")


def test_ctrl_c_writes_everything_measured(dsn_url: str, tmp_path: Path) -> None:
    out, lines = tmp_path / "c.json", tmp_path / "c.jsonl"
    proc = subprocess.Popen([*BENCH, "run", "examples/quickstart.bench", "--json", str(out), "--jsonl", str(lines)],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=default_signals)
    _wait_for_intervals(out, 4, proc)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    doc = _result(out)
    assert doc["status"] == "interrupted" and doc["exit_code"] == 130
    assert doc["stop"] == {"reason": "interrupted", "signal": "SIGINT"}
    assert len(doc["intervals"]) >= 4
    assert json.loads(lines.read_text().splitlines()[-1])["type"] == "finished"
    assert "Traceback" not in err


def test_lost_server_exits_4_and_keeps_the_data(tmp_path: Path) -> None:


    srv = EmbeddedServer()
    asyncio.run(srv.start())
    try:
        out = tmp_path / "lost.json"
        proc = subprocess.Popen([*BENCH, "run", "examples/quickstart.bench", "--json", str(out), "--target",
                                 srv.url()],
                                cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        _wait_for_intervals(out, 4, proc)
        assert srv.process is not None
        srv.process.kill()  # the server dies under load
        _, err = proc.communicate(timeout=90)
        assert proc.returncode == 4, err
        doc = _result(out)
        assert doc["status"] == "target_failed" and doc["stop"]["reason"] == "target_failed"
        assert doc["summary"]["count"] > 0 and len(doc["intervals"]) >= 4
        assert any(e["code"] in (2013, 2006, 2003, 2002) for e in doc["errors"])
    finally:
        srv.stop()


def test_unreachable_target_exits_4(tmp_path: Path) -> None:
    r = run_bench("run", "examples/quickstart.bench", "--json", str(tmp_path / "u.json"),
                  "--target", "mysql://root:s3cret-pw@127.0.0.1:1/benchdsl")
    assert r.returncode == 4
    assert "cannot reach mysql://root:***@127.0.0.1:1/benchdsl" in r.stderr
    assert "s3cret-pw" not in r.stderr + r.stdout + (tmp_path / "u.json").read_text()


# the second written raw in the address, '@' and all, as people do: urlsplit reads it to the last '@'
@pytest.mark.parametrize(("user", "password"), [("pwuser", "Very-Secret-42"), ("pwuser2", "Very@Secret-42")])
def test_passwords_never_appear(server, dsn_url: str, tmp_path: Path, user: str, password: str) -> None:

    from bench_dsl.server.connect import connect

    dsn, _ = server

    async def make_user() -> None:
        conn = await connect(dsn, None)
        async with conn.cursor() as cur:
            await cur.execute(f"CREATE USER IF NOT EXISTS '{user}'@'%' IDENTIFIED BY '{password}'")
            await cur.execute(f"GRANT ALL ON *.* TO '{user}'@'%'")
        conn.close()

    asyncio.run(make_user())
    secret_dsn = f"mysql://{user}:{password}@{dsn.host}:{dsn.port}/benchdsl"
    f = tmp_path / "pw.bench"
    f.write_text(f'scenario "pw" {{ target "{secret_dsn}" '
                 'workload sysbench oltp_point_select { tables = 1 table_size = 1000 } users 2 duration 2s }')
    out = tmp_path / "pw.json"
    r = run_bench("run", str(f), "--json", str(out), "--jsonl", "-")
    assert r.returncode == 0, r.stderr
    everything = r.stdout + r.stderr + out.read_text()
    assert "Secret-42" not in everything and "Very" not in everything
    assert f"mysql://{user}:***@" in out.read_text()
    ck = run_bench("check", "--plan", str(f))
    assert "Secret-42" not in ck.stdout + ck.stderr


@pytest.mark.parametrize("hold", ["3s", "8s"])  # the refusal seen at the step's end; for 5 s mid-step
def test_users_the_server_refuses_end_the_climb_at_the_last_full_step(server, dsn_url: str, tmp_path: Path,
                                                                      hold: str) -> None:
    """A user allowed 4 connections, the run's own and 3 users (as max_connections caps every
    user): the step of 6 users never runs 6, so the run stops there and says why, and 2 users is
    the saturation point."""

    from bench_dsl.server.connect import connect

    dsn, _ = server

    async def make_user() -> None:
        conn = await connect(dsn, None)
        async with conn.cursor() as cur:
            await cur.execute("CREATE USER IF NOT EXISTS 'capped'@'%'")
            await cur.execute("ALTER USER 'capped'@'%' WITH MAX_USER_CONNECTIONS 4")
            await cur.execute("GRANT ALL ON *.* TO 'capped'@'%'")
        conn.close()

    asyncio.run(make_user())
    f = tmp_path / "capped.bench"
    f.write_text(f'scenario "capped" {{ target "mysql://capped@{dsn.host}:{dsn.port}/benchdsl"\n'
                 '  workload sysbench oltp_point_select { tables = 1 table_size = 1000 }\n'
                 '  warmup 1s  ramp step { start 2 users  step +4 users  settle 1s  hold ' + hold + '  max 6 users }\n'
                 '  stop when { error_rate > 1% }  report every 1s }\n')
    out = tmp_path / "c.json"
    r = run_bench("run", str(f), "--json", str(out), "--workers", "1")
    assert r.returncode == 0, r.stderr
    doc = _result(out)
    stop = doc["stop"]
    assert stop["reason"] == "connections_refused" and stop["code"] == 1226, stop  # ER_USER_LIMIT_REACHED
    assert (stop["users"], stop["connected"], stop["step"]) == (6, 3, 2)
    sat = doc["saturation"]
    assert (sat["users"], sat["saturated"], sat["condition"]) == (2, True, "connections refused")
    assert [s["complete"] for s in doc["steps"]] == [True, False]
    # the figures count the users that ran, not those asked for
    assert doc["summary"]["users"] == 3
    assert "the server refused connections: 3 of 6 users could not connect" in r.stderr
    # "at least 2 users" when the suite's load made bench-dsl's own processes wait for a core
    assert re.search(r"saturation point: (at least )?2 users", r.stderr), r.stderr


def test_prepare_is_skipped_when_data_is_there(dsn_url: str, tmp_path: Path) -> None:
    f = tmp_path / "p.bench"
    f.write_text('scenario "p" { target env("BENCH_DSN") workload sysbench oltp_point_select { tables = 1 table_size = 1234 } '
                 'users 1 duration 1s }')
    first = run_bench("prepare", str(f), "--force-prepare")
    assert first.returncode == 0 and "prepared 1234 rows" in first.stderr
    again = run_bench("prepare", str(f))
    assert again.returncode == 0 and "already prepared" in again.stderr


def test_bad_file_exits_2_without_traceback(tmp_path: Path) -> None:
    r = run_bench("run", "tests/golden/unknown-names.bench")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "did you mean p90(oltp_read_write)?" in r.stderr


def test_help_is_complete() -> None:
    for args in (["--help"], ["run", "--help"], ["check", "--help"], ["prepare", "--help"]):
        r = run_bench(*args)
        assert r.returncode == 0 and "usage: bench" in r.stdout
    run_help = run_bench("run", "--help").stdout
    for opt in ("--headless", "--json", "--jsonl", "-D", "--keep-server", "--force-prepare", "--target"):
        assert opt in run_help


@pytest.mark.slow
def test_a_headless_run_loads_no_screen(tmp_path: Path, dsn_url: str) -> None:
    import os

    scenario = tmp_path / "s.bench"
    scenario.write_text('scenario "s" {\n  target env("BENCH_DSN")\n'
                        '  workload custom { transaction t { query "SELECT 1" } }\n  users 2\n  duration 1s\n}\n')
    loaded, code = loaded_by(["run", str(scenario), "--headless", "--json", str(tmp_path / "r.json")],
                             cwd=tmp_path, env={**os.environ, "BENCH_DSN": dsn_url})
    assert code == 0
    assert "asyncmy" in loaded and "textual" not in loaded and "altair" not in loaded
