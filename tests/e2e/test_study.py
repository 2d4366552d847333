"""Studies: `vary` and `repeat` run every configuration on real throwaway servers (or set them on
a server of our own and restore them), interleaved, one result per run, then summary.json."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import time
from importlib import resources
from pathlib import Path

import asyncmy
import jsonschema
import pytest

from bench_dsl.core.dsn import ServerIdentity, parse_dsn
from bench_dsl.core.errors import ScenarioError, UsageError
from bench_dsl.engine.scenario_file import load
from bench_dsl.server.connect import connect
from bench_dsl.study.plan import scenario_for, select

from ..conftest import ROOT, run_bench, run_sql, small_disk

SCHEMA = json.loads(resources.files("bench_dsl.results.schema").joinpath("result-v1.json").read_text())

MiB = 1 << 20


def _flat(text: str) -> str:
    """Text without its white space: the console folds a long path anywhere, even inside a word."""
    return "".join(text.split())


def _results(directory: Path) -> list[dict]:
    docs = []
    for p in directory.glob("c*/repeat-*.json"):
        doc = json.loads(p.read_text())
        jsonschema.validate(doc, SCHEMA)
        docs.append(doc)
    return sorted(docs, key=lambda d: d["started_at"] + str(d["elapsed_s"]))


def test_crossed_lines_make_every_combination_in_interleaved_order() -> None:
    sc = load(ROOT / "examples/io-capacity-sweep.bench", env={})
    study = sc.study
    assert study is not None and study.repeat == 3 and not study.zip
    assert study.keys == ("innodb_io_capacity", "innodb_buffer_pool_size")
    labels = [c.label for c in study.configurations]
    assert len(labels) == 6 and len(set(labels)) == 6
    assert labels[0] == "innodb_io_capacity=200 innodb_buffer_pool_size=64M"
    order = [(c.id, r) for c, r in study.order()]
    assert order[:7] == [("c1", 1), ("c2", 1), ("c3", 1), ("c4", 1), ("c5", 1), ("c6", 1), ("c1", 2)]
    c6 = study.configurations[5]
    assert [(s.name, s.value) for s in c6.settings] == [("innodb_io_capacity", 20000), ("innodb_buffer_pool_size", 512 * MiB)]
    conf_sc = scenario_for(sc, c6, {})
    assert [s.name for s in conf_sc.server_settings] == ["innodb_flush_log_at_trx_commit", "innodb_io_capacity",
                                                          "innodb_buffer_pool_size"]
    assert conf_sc.study is None
    r = run_bench("check", "--plan", "examples/io-capacity-sweep.bench")
    assert r.returncode == 0, r.stderr
    assert "study: 6 configurations" in r.stdout and "3 times each: 18 runs" in r.stdout
    assert "c1#1 c2#1 c3#1 c4#1 c5#1 c6#1 c1#2" in r.stdout and "total: at most 0:22:48" in r.stdout


def test_zip_pairs_and_lets_vary_the_data() -> None:
    text = """let rows = 1000
scenario "z" {
  workload sysbench oltp_point_select { tables = 1  table_size = $rows }
  vary { $rows = [10K, 20000]  innodb_io_capacity = [100, 200] } zip
  users 1
  duration 1s
}"""
    sc = load("z.bench", text=text, env={})
    assert sc.study is not None
    assert [c.label for c in sc.study.configurations] == ["$rows=10K innodb_io_capacity=100",
                                                          "$rows=20000 innodb_io_capacity=200"]
    sizes = [scenario_for(sc, c, {}).workload.table_size for c in sc.study.configurations]  # type: ignore[attr-defined]
    assert sizes == [10000, 20000]
    assert scenario_for(sc, sc.study.configurations[0], {}).parameters["rows"] == "10K"
    # --only keeps configurations by value, as written or equal as a number
    assert [c.id for c in select(sc.study, ["rows=10000"])] == ["c1"]
    assert [c.id for c in select(sc.study, ["innodb_io_capacity=200"])] == ["c2"]
    with pytest.raises(UsageError, match="one of 100, 200"):
        select(sc.study, ["innodb_io_capacity=300"])
    with pytest.raises(UsageError, match="does not vary"):
        select(sc.study, ["sync_binlog=1"])


def test_a_configuration_that_breaks_the_file_is_found_by_check() -> None:
    text = """let rows = 1000
scenario "z" {
  workload sysbench oltp_point_select { tables = 1  table_size = $rows }
  vary { $rows = [10, -5] }
  users 1
  duration 1s
}"""
    with pytest.raises(ScenarioError) as err:
        load("z.bench", text=text, env={})
    (d,) = err.value.diagnostics
    assert d.message == "with $rows=-5: table_size must be at least 1"
    assert (d.span.line, d.span.col) == (3, 66)  # the $rows it is given through


@pytest.mark.slow
def test_io_capacity_sweep_runs_every_configuration_on_its_own_server(tmp_path: Path) -> None:
    out = tmp_path / "sweep"
    r = run_bench("run", "examples/io-capacity-sweep.bench", "--headless", "--json", str(out),
                  "--time-scale", "0.02", "--max-steps", "1", "--repeat", "1",  # the file's: 3
                  "-D", "rows=2000", timeout=600)  # each configuration loads its own server: 22 s, against 28 s at 20,000 rows
    assert r.returncode in (0, 3), r.stderr
    docs = _results(out)
    assert len(docs) == 6  # every combination, in the order of the values
    assert [d["configuration"]["id"] for d in docs] == [f"c{i}" for i in range(1, 7)]
    for d in docs:
        values = d["configuration"]["values"]
        variables = d["server"]["variables"]
        assert variables["innodb_io_capacity"] == values["innodb_io_capacity"]
        assert int(variables["innodb_buffer_pool_size"]) == int(values["innodb_buffer_pool_size"][:-1]) * MiB
        assert variables["innodb_flush_log_at_trx_commit"] == "1"
        assert d["server"]["embedded"] and d["status"] == "completed"
    assert len({d["server"]["directory"] for d in docs}) == 6  # a fresh server for each run
    summary = json.loads((out / "summary.json").read_text())
    jsonschema.validate(summary, json.loads(resources.files("bench_dsl.results.schema").joinpath("summary-v1.json").read_text()))
    assert (out / "report.html").stat().st_size > 0
    assert "6 configurations x 1 = 6 runs" in r.stderr


@pytest.mark.slow
def test_disks_example_runs_each_configuration_in_its_directory(tmp_path: Path) -> None:
    out = tmp_path / "disks"
    r = run_bench("run", "examples/disks.bench", "--headless", "--json", str(out), "--time-scale", "0.05",
                  "-D", "rows=2000", "--repeat", "2")
    assert r.returncode == 0, r.stderr
    docs = _results(out)
    # interleaved: each directory once before either runs a second time
    assert [d["configuration"]["values"]["server.dir"] for d in docs] == ["/var/tmp", "/dev/shm"] * 2
    assert [d["configuration"]["repeat"] for d in docs] == [1, 1, 2, 2]
    dirs = [Path(d["server"]["directory"]) for d in docs]
    assert [p.parent for p in dirs] == [Path("/var/tmp"), Path("/dev/shm")] * 2 and len(set(dirs)) == 4
    assert not any(p.exists() for p in dirs)  # each throwaway server removed its files
    assert all(d["summary"]["count"] > 0 for d in docs)


async def _variable(url: str, name: str) -> str:
    conn = await connect(parse_dsn(url))
    try:
        async with conn.cursor() as cur:
            await cur.execute(f"SELECT @@GLOBAL.{name}")
            return str((await cur.fetchone())[0])
    finally:
        conn.close()


def _state_file(url: str, original: dict[str, str], static: list[str]) -> Path:
    """The state file a killed study leaves for the server at `url`, written where a study looks."""
    from bench_dsl.server.connect import identify
    from bench_dsl.server.settings_state import STATE_FORMAT, state_path

    async def who() -> ServerIdentity:
        conn = await connect(parse_dsn(url))
        try:
            async with conn.cursor() as cur:
                return await identify(cur)
        finally:
            conn.close()

    identity = asyncio.run(who())
    state = state_path(identity)
    state.parent.mkdir(parents=True, exist_ok=True)
    state.write_text(json.dumps({"format": STATE_FORMAT, "study": "/old/study", "pid": 1 << 22, "static": static,
                                 "server": {"hostname": identity.hostname, "port": identity.port,
                                            "datadir": identity.datadir}, "original": original}))
    return state


@pytest.mark.slow
def test_a_study_on_a_server_of_our_own_sets_and_restores_its_settings(dsn_url: str, tmp_path: Path) -> None:
    before = asyncio.run(_variable(dsn_url, "innodb_io_capacity"))
    f = tmp_path / "flash.bench"
    f.write_text("""scenario "flash on our own" {
  target env("BENCH_DSN")
  workload sysbench oltp_read_write { tables = 1  table_size = 1000 }
  vary {
    innodb_io_capacity_max = [400, 2000, 4000, 8000, 16000]
    innodb_io_capacity     = [200, 1000, 2000, 4000, 8000]
  } zip
  repeat 3
  users 4
  duration 2s
}""")
    out = tmp_path / "flash"
    r = run_bench("run", str(f), "--headless", "--json", str(out), "--repeat", "1",
                  "--only", "innodb_io_capacity=1000,4000")
    assert r.returncode == 0, r.stderr
    docs = _results(out)
    assert [d["configuration"]["label"] for d in docs] == [
        "innodb_io_capacity_max=2000 innodb_io_capacity=1000", "innodb_io_capacity_max=8000 innodb_io_capacity=4000"]
    for d, want in zip(docs, ("1000", "4000")):
        applied = {s["name"]: s for s in d["server"]["settings"]}
        assert applied["innodb_io_capacity"]["after"] == want and applied["innodb_io_capacity"]["applied"]
        assert not d["server"]["embedded"]
    assert asyncio.run(_variable(dsn_url, "innodb_io_capacity")) == before
    assert "restored innodb_io_capacity" in r.stderr


@pytest.mark.slow
def test_a_static_setting_on_a_server_of_our_own_is_refused_before_anything_runs(dsn_url: str, tmp_path: Path) -> None:
    f = tmp_path / "static.bench"
    f.write_text("""scenario "static" {
  target env("BENCH_DSN")
  workload sysbench oltp_point_select { tables = 1  table_size = 100 }
  vary { innodb_log_buffer_size = [8M, 16M]  innodb_io_capacity = [300] }
  users 1
  duration 1s
}""")
    out = tmp_path / "static"
    r = run_bench("run", str(f), "--headless", "--json", str(out))
    assert r.returncode == 2, r.stderr
    assert "innodb_log_buffer_size: static" in r.stderr and "--restart-cmd" in r.stderr
    assert not list(out.glob("c*/*.json"))


RESTART = r'''
import os, signal, subprocess, sys, time
pidfile = sys.argv[1]
pid = int(open(pidfile).read())
with open(f"/proc/{pid}/cmdline", "rb") as f:
    args = [a.decode() for a in f.read().split(b"\0") if a]
args = [a for a in args if not a.startswith("--innodb-log-buffer-size=")]
os.kill(pid, signal.SIGTERM)
def gone():
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[1][0] == "Z"  # the test that started it reaps it later
    except OSError:
        return True
while not gone():
    time.sleep(0.05)
value = os.environ["BENCH_SETTING_INNODB_LOG_BUFFER_SIZE"]
subprocess.Popen(args + [f"--innodb-log-buffer-size={value}"], start_new_session=True,
                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
'''


@pytest.mark.slow
def test_restart_cmd_applies_a_static_setting_and_puts_it_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import os
    import signal
    import subprocess
    import sys

    from bench_dsl.server.embedded import EmbeddedServer

    srv = EmbeddedServer(max_connections=50)
    asyncio.run(srv.start())
    pidfile = srv.basedir / "mysqld.pid"  # type: ignore[operator]
    try:
        before = asyncio.run(_variable(srv.url(), "innodb_log_buffer_size"))
        script = tmp_path / "restart.py"
        script.write_text(RESTART)
        # an earlier study, killed, left the server running at 64M: its state file says what it was
        subprocess.run([sys.executable, str(script), str(pidfile)], check=True,
                       env={**os.environ, "BENCH_SETTING_INNODB_LOG_BUFFER_SIZE": "64M"})
        deadline = time.monotonic() + 60  # a bound on a hang: the server is back in seconds
        while True:
            try:
                if asyncio.run(_variable(srv.url(), "innodb_log_buffer_size")) == str(64 * MiB):
                    break
            except (OSError, asyncmy.errors.MySQLError):
                pass  # not listening yet
            assert time.monotonic() < deadline, "the server did not come back"
            time.sleep(0.2)
        state_home = tmp_path / "state"
        monkeypatch.setenv("XDG_STATE_HOME", str(state_home))
        state = _state_file(srv.url(), {"innodb_log_buffer_size": before}, ["innodb_log_buffer_size"])
        f = tmp_path / "static.bench"
        f.write_text("""scenario "static with a restart" {
  target env("BENCH_STATIC_DSN")
  workload sysbench oltp_point_select { tables = 1  table_size = 100 }
  vary { innodb_log_buffer_size = [8M, 32M] }
  users 1
  duration 1s
}""")
        out = tmp_path / "static"
        r = run_bench("run", str(f), "--headless", "--json", str(out),
                      "--restart-cmd", f"{sys.executable} {script} {pidfile}", env={"BENCH_STATIC_DSN": srv.url()})
        assert r.returncode == 0, r.stderr
        docs = _results(out)
        assert [int(d["server"]["variables"]["innodb_log_buffer_size"]) for d in docs] == [8 * MiB, 32 * MiB]
        # the earlier study's value first, then each configuration, then the value it had
        assert r.stderr.count("(--restart-cmd)") == 4
        assert f"restored innodb_log_buffer_size={before} (it was {64 * MiB})" in " ".join(r.stderr.split())
        assert asyncio.run(_variable(srv.url(), "innodb_log_buffer_size")) == before
        assert not state.exists()
    finally:
        try:
            os.kill(int(pidfile.read_text()), signal.SIGTERM)
        except (OSError, ValueError):
            pass
        deadline = time.monotonic() + 30
        while pidfile.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        srv.stop()


# ---- a killed study's settings: written down, set back by the next study ----------------------

KILLED = """scenario "killed" {
  target env("BENCH_OWN_DSN")
  workload sysbench oltp_point_select { tables = 1  table_size = 100 }
  vary { innodb_io_capacity = [300, 3000] }
  users 1
  duration %s
}"""


@pytest.mark.slow
def test_a_killed_study_leaves_the_originals_written_down_and_the_next_study_sets_them_back(tmp_path: Path) -> None:
    import os
    import signal
    import stat as st
    import subprocess

    from bench_dsl.server.embedded import EmbeddedServer

    from ..conftest import BENCH

    srv = EmbeddedServer(max_connections=50)
    asyncio.run(srv.start())
    try:
        url = srv.url()
        asyncio.run(run_sql(parse_dsn(url), None, "SET GLOBAL innodb_io_capacity = 250"))  # the server's own value, not a default
        env = {**os.environ, "BENCH_OWN_DSN": url, "XDG_STATE_HOME": str(tmp_path / "state")}
        f = tmp_path / "killed.bench"
        f.write_text(KILLED % "6s")  # the first configuration's 6 s waited for; the second's, ample to be seen
        first = tmp_path / "first"
        proc = subprocess.Popen([*BENCH, "run", str(f), "--headless", "-q", "--json", str(first)], cwd=ROOT, env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.monotonic() + 120  # a bound on a hang, not a timing: it is met in seconds
            while asyncio.run(_variable(url, "innodb_io_capacity")) != "3000":
                assert proc.poll() is None and time.monotonic() < deadline, "the second configuration never ran"
                time.sleep(0.2)
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
        assert asyncio.run(_variable(url, "innodb_io_capacity")) == "3000"  # unavoidable: the kill left it
        [state] = (tmp_path / "state" / "bench-dsl" / "servers").glob("*.json")
        written = json.loads(state.read_text())
        assert written["original"] == {"innodb_io_capacity": "250"} and written["study"] == str(first)
        assert st.S_IMODE(state.stat().st_mode) == 0o600
        dsn = parse_dsn(url)
        assert written["server"]["port"] == dsn.port and written["addresses"] == [f"{dsn.host}:{dsn.port}"]
        assert dsn.password not in state.read_text() and f"{dsn.user}@" not in state.read_text()  # no secrets
        assert json.loads((first / "server-settings.json").read_text())["original"] == {"innodb_io_capacity": "250"}

        # the next study: it sets the real value back first, and again at its end, not 3000
        f.write_text(KILLED % "1s")
        r = run_bench("run", str(f), "--headless", "-q", "--json", str(tmp_path / "second"),
                      env={"BENCH_OWN_DSN": url, "XDG_STATE_HOME": str(tmp_path / "state")})
        assert r.returncode == 0, r.stderr
        said = " ".join(r.stderr.split())
        assert f"an earlier study ({first}) ended before it set the server's settings back" in said, r.stderr
        assert "restored innodb_io_capacity=250 (it was 3000)" in said, r.stderr
        assert asyncio.run(_variable(url, "innodb_io_capacity")) == "250"
        assert not state.exists()  # set back: nothing left to remember
    finally:
        srv.stop()


@pytest.mark.slow
def test_what_an_earlier_study_left_changed_and_cannot_be_set_back_is_named(
        dsn_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A static setting an earlier study changed with --restart-cmd, and this one has none: it says
    what the setting was and keeps it written down for a study that can set it back."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))  # for this test and the bench it runs
    now = asyncio.run(_variable(dsn_url, "innodb_log_buffer_size"))
    was = str(int(now) * 2)
    state = _state_file(dsn_url, {"innodb_log_buffer_size": was}, ["innodb_log_buffer_size"])
    f = tmp_path / "s.bench"
    f.write_text(KILLED.replace("BENCH_OWN_DSN", "BENCH_DSN").replace("[300, 3000]", "[300]") % "1s")
    r = run_bench("run", str(f), "--headless", "-q", "--json", str(tmp_path / "s"))
    assert r.returncode == 0, r.stderr
    said = " ".join(r.stderr.split())
    assert (f"an earlier study left the server changed: innodb_log_buffer_size is {now}, it was {was} before "
            "that study") in said, r.stderr
    assert json.loads(state.read_text())["original"] == {"innodb_log_buffer_size": was}  # still to be set back


def test_a_second_study_against_a_server_another_is_changing_is_refused(
        dsn_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A study still running (this very process stands in for it, its claim held): a second study
    would take the first one's values as the server's own. Refused before it changes anything."""
    import os

    from bench_dsl.server.remote_settings import RemoteSettings

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    first = RemoteSettings(parse_dsn(dsn_url), ["innodb_io_capacity"], None, lambda _: None,
                           study=Path("/first/study"))
    asyncio.run(first.check())
    try:
        first.record(tmp_path / "first")
        written = first.state.read_text()
        f = tmp_path / "s.bench"
        f.write_text(KILLED.replace("BENCH_OWN_DSN", "BENCH_DSN") % "1s")
        r = run_bench("run", str(f), "--headless", "-q", "--json", str(tmp_path / "s"))
        assert r.returncode == 2, r.stderr
        dsn = parse_dsn(dsn_url)
        assert _flat(f"another study (process {os.getpid()}, through {dsn.host}:{dsn.port}, writing /first/study)") \
            in _flat(r.stderr), r.stderr
        assert first.state.read_text() == written  # left as it was
    finally:
        first.release()


# ---- one study per directory -------------------------------------------------------------------

TWO = """scenario "two into one" {
  target env("BENCH_DSN")
  workload sysbench oltp_point_select { tables = 1  table_size = 100 }
  vary { innodb_io_capacity = %s }
  users 1
  duration 1s
}"""


@pytest.mark.slow
def test_a_study_refuses_a_directory_that_holds_another_studys_results(dsn_url: str, tmp_path: Path) -> None:
    f = tmp_path / "two.bench"
    out = tmp_path / "study"
    f.write_text(TWO % "[300]")
    r = run_bench("run", str(f), "--headless", "-q", "--json", str(out))
    assert r.returncode == 0, r.stderr
    first = sorted(out.rglob("repeat-*.json"))
    assert len(first) == 1
    (out / "my-notes.txt").write_text("mine")
    f.write_text(TWO % "[3000, 300]")  # its c1 is another configuration than the first study's c1
    r = run_bench("run", str(f), "--headless", "-q", "--json", str(out))
    assert r.returncode == 2 and _flat(f"{out} holds the results of an earlier study (1 result file") in _flat(r.stderr)
    assert "--replace" in r.stderr and sorted(out.rglob("repeat-*.json")) == first
    r = run_bench("run", str(f), "--headless", "-q", "--json", str(out), "--replace")
    assert r.returncode == 0, r.stderr
    docs = _results(out)
    assert [d["configuration"]["values"]["innodb_io_capacity"] for d in docs] == ["3000", "300"]
    assert len({d["configuration"]["study_id"] for d in docs}) == 1
    summary = json.loads((out / "summary.json").read_text())
    assert [c["values"] for c in summary["configurations"]] == [{"innodb_io_capacity": "3000"},
                                                                {"innodb_io_capacity": "300"}]
    assert (out / "my-notes.txt").read_text() == "mine"  # --replace removes results, nothing else


@pytest.mark.slow
def test_a_study_whose_report_meets_a_full_disk_says_so_and_exits_1(
        dsn_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    f = tmp_path / "full.bench"
    f.write_text(TWO % "[300]")
    # room for the result (about 17 KB, twice while it is rewritten) and summary.json (7 KB), not
    # for report.html (about 900 KB: the chart libraries are inside)
    with small_disk(tmp_path / "disk", "256k") as disk:
        r = run_bench("run", str(f), "--headless", "-q", "--json", str(disk / "study"))
        lines = r.stderr.strip().splitlines()
        assert r.returncode == 1, r.stderr
        assert lines[-1] == "status: completed, but an output is incomplete (exit 1)", r.stderr
        said = " ".join(r.stderr.split())
        assert f"bench: could not write {disk / 'study' / 'report.html'}: No space left on device" in said
        assert json.loads((disk / "study" / "summary.json").read_text())["format"] == "bench-dsl-summary"
        assert not [p for p in (disk / "study").iterdir() if p.name.startswith(".")]  # no temporary file left


@pytest.mark.slow
def test_a_configuration_whose_settings_were_not_applied_is_marked_and_fails_the_study(
        dsn_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """read_buffer_size is kept in blocks of 4 KiB: SET GLOBAL takes 10000 with a warning and the
    server has 8192. A valid size, so only the server can say it was not applied."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    f = tmp_path / "blocks.bench"
    f.write_text(TWO.replace("innodb_io_capacity =", "read_buffer_size =") % "[128K, 10000]")
    out = tmp_path / "blocks"
    r = run_bench("run", str(f), "--headless", "-q", "--json", str(out))
    assert r.returncode == 2, r.stderr
    assert r.stderr.strip().splitlines()[-1] == "status: completed, but the settings of c2 were not applied (exit 2)"
    said = " ".join(r.stderr.split())
    assert "settings not applied: read_buffer_size=10000 (the server has 8192" in said, r.stderr
    summary = json.loads((out / "summary.json").read_text())
    jsonschema.validate(summary, json.loads(resources.files("bench_dsl.results.schema").joinpath("summary-v1.json").read_text()))
    assert [[a["name"] for a in c["settings_not_applied"]] for c in summary["configurations"]] == [
        [], ["read_buffer_size"]]
    r = run_bench("compare", str(out), "--json", str(tmp_path / "cmp.json"), "--markdown", "-")
    table = json.loads((tmp_path / "cmp.json").read_text())
    assert [c["settings_applied"] for c in table["configurations"]] == [True, False]
    row = table["rows"][0]
    assert row["metric"] == "settings" and [c["value"] for c in row["cells"]] == ["applied", "not applied"]
    head, _, first = r.stdout.splitlines()[2:5]
    assert "read_buffer_size=10000 · 1 run · SETTINGS NOT APPLIED |" in head, r.stdout
    assert first == "| settings | applied | NOT APPLIED<br>read_buffer_size=10000: the server has 8192 |", r.stdout


# ---- outputs: only bench-dsl's own files are replaced, and names never climb out ---------------

def test_an_output_that_is_a_file_of_someone_else_is_never_replaced(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n")
    r = run_bench("run", "examples/quickstart.bench", "--json", str(notes))
    assert r.returncode == 2 and _flat(f"cannot write the results to {notes}: it is a file bench-dsl did not write") \
        in _flat(r.stderr), r.stderr
    assert notes.read_text() == "my notes\n"
    # a study's directory: its summary.json is not the study's to replace either
    study_dir = tmp_path / "study"
    study_dir.mkdir()
    (study_dir / "summary.json").write_text('{"mine": true}\n')
    f = tmp_path / "s.bench"
    f.write_text('scenario "s" { workload sysbench oltp_point_select { tables = 1  table_size = 100 }\n'
                 '  vary { innodb_io_capacity = [300, 3000] }  users 1  duration 1s }')
    r = run_bench("run", str(f), "--json", str(study_dir))
    assert r.returncode == 2 and _flat("summary.json: it is a file bench-dsl did not write") in _flat(r.stderr), r.stderr
    assert (study_dir / "summary.json").read_text() == '{"mine": true}\n'


def test_an_event_stream_never_replaces_a_file_of_someone_else(tmp_path: Path) -> None:
    from bench_dsl.results.sinks import check_stream

    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n")
    link = tmp_path / "link.jsonl"
    link.symlink_to(notes)
    for path in (notes, link):
        r = run_bench("run", "examples/quickstart.bench", "--json", str(tmp_path / "r.json"), "--jsonl", str(path))
        assert r.returncode == 2 and _flat(f"cannot write the event stream to {path}: it is a file bench-dsl did "
                                           "not write") in _flat(r.stderr), r.stderr
    assert notes.read_text() == "my notes\n"
    earlier = tmp_path / "earlier.jsonl"  # an earlier stream, an empty file, a pipe: written as asked
    earlier.write_text('{"type": "started", "scenario": "quickstart", "target": "embedded"}\n')
    (tmp_path / "empty.jsonl").write_text("")
    os.mkfifo(tmp_path / "pipe")
    for ok in (earlier, tmp_path / "empty.jsonl", tmp_path / "pipe", tmp_path / "new.jsonl"):
        check_stream(ok)


def test_an_output_folder_the_file_system_cannot_make_is_a_write_failure(tmp_path: Path) -> None:
    """exit 1 with the system's cause, as any write failure: not 2, which says the usage was wrong."""
    disk = tmp_path / "ro"
    disk.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k,ro", "tmpfs", str(disk)], check=True)
    try:
        out = disk / "results" / "r.json"
        r = run_bench("run", "examples/quickstart.bench", "--json", str(out))
    finally:
        subprocess.run(["umount", str(disk)], check=True)
    assert r.returncode == 1 and _flat(f"cannot write the results to {out}: Read-only file system") in _flat(r.stderr), \
        r.stderr


def test_bench_dsl_files_and_empty_ones_may_be_replaced(tmp_path: Path) -> None:
    from bench_dsl.results.sinks import check_regular

    empty = tmp_path / "empty.json"
    empty.write_text("")
    earlier = tmp_path / "earlier.json"
    earlier.write_text(json.dumps({"$schema": "x", "format": "bench-dsl-result", "format_version": 1}, indent=1))
    summary = tmp_path / "summary.json"
    summary.write_text(json.dumps({"$schema": "x", "format": "bench-dsl-summary"}))
    for p in (empty, earlier, summary, tmp_path / "new.json"):
        check_regular(p)


def test_a_scenario_named_dot_dot_stays_in_its_folder(tmp_path: Path) -> None:
    from bench_dsl.engine.outcome import expand_output, safe_name

    for name in ("..", ".", "", "...", "/", "../..", ".hidden"):
        assert safe_name(name) not in (".", "..", "") and not safe_name(name).startswith("."), name
    assert safe_name("v1.2 run") == "v1.2-run"
    f = tmp_path / "dots.bench"
    f.write_text('scenario ".." { output "results/{scenario}/r.json"\n'
                 '  workload sysbench oltp_point_select { tables = 1  table_size = 100 }  users 1  duration 1s }')
    sc = load(f, env={})
    out = Path(expand_output(sc.output or "", sc))
    assert out.parts[0] == "results" and ".." not in out.parts and "." not in out.parts, out
