"""Server settings before any server sees them: the binary log on the throwaway server (in its own
directory, never a path of the user's), and values checked as the server would take them."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from bench_dsl.core.errors import ScenarioError, TargetError
from bench_dsl.engine.scenario_file import load
from bench_dsl.language import model as m
from bench_dsl.server.connect import connect
from bench_dsl.server.embedded import EmbeddedServer
from bench_dsl.server.facts import apply_settings

from ..conftest import ROOT, run_bench

W = "workload sysbench oltp_write_only { tables = 1  table_size = 1000 }"


def _settings(server: str, target: str = "", vary: str = "") -> tuple[m.ServerSetting, ...]:
    sc = load("t.bench", text=f'scenario "t" {{ {target} server {{ {server} }} {W} {vary} users 2 duration 5s }}\n',
              env={})
    return sc.server_settings


def _problems(server: str, vary: str = "", target: str = "") -> str:
    with pytest.raises(ScenarioError) as e:
        _settings(server, target, vary)
    return e.value.render()


@pytest.mark.parametrize(("written", "value"), [
    ("ON", "ON"), ("on", "ON"), ("OFF", "OFF"), ("1", 1), ("0", 0), ("binlog_a", "binlog_a"), ('"mysql-bin"', "mysql-bin")])
def test_log_bin_is_a_switch_or_a_base_name_on_the_throwaway_server(written: str, value: object) -> None:
    (s,) = _settings(f"log_bin = {written}")
    assert (s.name, s.value) == ("log_bin", value)


@pytest.mark.parametrize("path", ['"/var/log/mysql/bin"', '"../bin"', '"."', '".."', '"logs/bin"'])
def test_log_bin_naming_a_path_is_refused_with_the_reason(path: str) -> None:
    said = _problems(f"log_bin = {path}")
    assert f"t.bench:1:36: error: the throwaway server does not take log_bin = {path}: its binary logs go in its " \
           "own directory, and this names a path" in said
    assert 'hint: log_bin = ON, or a base name without "/": log_bin = "mysql-bin"' in said
    # and varied: the same rule, the same reason
    said = _problems("", vary=f"vary {{ log_bin = [ON, {path}] }}")
    assert "its binary logs go in its own directory, and this names a path" in said


def test_data_files_are_named_without_a_path() -> None:
    (s,) = _settings('innodb_data_file_path = "ibdata1:12M:autoextend"')
    assert s.value == "ibdata1:12M:autoextend"
    said = _problems('innodb_data_file_path = "/etc/ibdata1:12M"')
    assert "does not take innodb_data_file_path = \"/etc/ibdata1:12M\": its files stay in its own directory" in said


def test_a_server_of_your_own_keeps_its_own_log_bin() -> None:
    (s,) = _settings('log_bin = "/var/log/mysql/bin"', target='target "mysql://u@db1/b"')
    assert s.value == "/var/log/mysql/bin"  # verified and reported at the start: it is not ours to refuse


@pytest.mark.parametrize("name", ["log_bin_index", "log_bin_basename", "relay_log", "innodb_log_group_home_dir"])
def test_settings_that_name_a_file_say_the_server_keeps_its_files_in_its_directory(name: str) -> None:
    said = _problems(f'{name} = "x"')
    assert f"the throwaway server does not take {name}: it keeps its files in its own directory" in said


def test_replicas_need_the_primarys_binary_log() -> None:
    said = _problems("replicas = 1  log_bin = OFF")
    assert "log_bin = OFF: replicas read the primary's binary log" in said


def test_the_binlog_durability_example_is_the_scenario_of_the_issue() -> None:
    sc = load(ROOT / "examples" / "binlog-durability.bench", env={})
    assert [(s.name, s.value) for s in sc.server_settings] == [("log_bin", "ON"), ("binlog_format", "ROW")]
    assert sc.study is not None and sc.study.zip and sc.study.repeat == 2
    assert [c.values for c in sc.study.configurations] == [
        (("innodb_flush_log_at_trx_commit", "1"), ("sync_binlog", "1")),
        (("innodb_flush_log_at_trx_commit", "2"), ("sync_binlog", "0"))]
    assert isinstance(sc.ramp, m.ConstantRamp) and (sc.ramp.users, sc.ramp.duration, sc.warmup) == (8, 10.0, 3.0)


def test_the_binary_log_goes_in_the_throwaway_servers_own_directory() -> None:
    async def logs(srv: EmbeddedServer) -> tuple[str, str, list[str], list[bool]]:
        assert srv.dsn is not None
        conn = await connect(srv.dsn)
        try:
            async with conn.cursor() as cur:
                await cur.execute("SELECT @@log_bin, @@log_bin_basename")
                on, base = await cur.fetchone()
                await cur.execute("SHOW BINARY LOGS")
                files = [str(r[0]) for r in await cur.fetchall()]
        finally:
            conn.close()
        return str(on), str(base), files, [a.applied for a in await apply_settings(srv.dsn, srv.settings, True)]

    for written, value, base in (("ON", "ON", "binlog"), ("1", 1, "binlog"), ("mysql-bin", "mysql-bin", "mysql-bin")):
        srv = EmbeddedServer((m.ServerSetting("log_bin", value, written), m.ServerSetting("sync_binlog", 1, "1")))
        try:
            asyncio.run(srv.start())
            on, basename, files, applied = asyncio.run(logs(srv))
            assert srv.basedir is not None
            assert (on, basename) == ("1", str(srv.basedir / base))
            assert files == [f"{base}.000001"] and (srv.basedir / files[0]).is_file()
            assert applied == [True, True]  # log_bin = 1 and = mysql-bin read ON: both took
            assert srv.basedir.stat().st_mode & 0o777 == 0o700
        finally:
            srv.stop()
    srv = EmbeddedServer((m.ServerSetting("log_bin", "/tmp/elsewhere", "/tmp/elsewhere"),))
    with pytest.raises(TargetError, match="log_bin: its binary logs go in its own directory"):
        asyncio.run(srv.start())
    assert srv.process is None  # nothing was started


@pytest.mark.slow
def test_a_run_with_the_binary_log_on_records_it_and_its_users_see_the_logs(tmp_path: Path) -> None:
    f = tmp_path / "binlog.bench"
    f.write_text("""scenario "binary log on" {
  server { log_bin = ON  sync_binlog = 1 }
  setup { sql "CREATE TABLE IF NOT EXISTS t (id INT AUTO_INCREMENT PRIMARY KEY, v INT)" }
  workload custom {
    transaction write weight 50 { query "INSERT INTO t (v) VALUES (1)" }
    transaction logs weight 50 { query "SHOW BINARY LOGS" }
  }
  users 2
  duration 2s
  expect { status(Binlog_bytes_written)/s > 0 }
}""")
    out = tmp_path / "r.json"
    r = run_bench("run", str(f), "--headless", "--json", str(out))
    assert r.returncode == 0, r.stderr
    doc = json.loads(out.read_text())
    assert doc["server"]["variables"]["log_bin"] == "ON" and doc["server"]["variables"]["sync_binlog"] == "1"
    assert all(s["applied"] for s in doc["server"]["settings"])
    # SHOW BINARY LOGS, run by the users during the run: "You are not using binary logging" were it off
    logs = doc["summary"]["transactions"]["logs"]
    assert logs["count"] > 0 and logs["errors"] == 0
    assert doc["expect"][0]["passed"]  # the server wrote binary log events while the users ran


@pytest.mark.parametrize("server", [
    "innodb_log_buffer_size = 16M", "innodb_log_buffer_size = 16777216", "innodb_log_buffer_size = 1.5M",
    "innodb_io_capacity = 2000", "thread_cache_size = 8", "innodb_flush_method = o_direct",
    'innodb_flush_method = "O_DIRECT_NO_FSYNC"', "binlog_format = mixed", "innodb_flush_log_at_trx_commit = 2",
    "innodb_doublewrite = OFF", "innodb_doublewrite = 0", 'transaction_isolation = "READ-COMMITTED"',
    "long_query_time = 500ms", "innodb_max_dirty_pages_pct = 90%", "performance_schema = on",
    'sql_mode = "STRICT_TRANS_TABLES,NO_ZERO_DATE"', 'optimizer_switch = "index_merge=off"',
    'init_connect = "SET NAMES utf8mb4"', "performance_schema_digests_size = -1", 'time_zone = "+00:00"',
])
def test_values_the_server_takes_pass(server: str) -> None:
    target = 'target "mysql://u@db1/b"' if "init_connect" in server else ""  # the throwaway server refuses it
    assert len(_settings(server, target)) == 1


@pytest.mark.parametrize(("server", "says"), [
    ('innodb_log_buffer_size = "16M; touch x"', "the server takes a whole number here (a size may end in K, M, G or T)"),
    ("innodb_log_buffer_size = 10s", "the server takes a whole number here"),
    ('innodb_log_buffer_size = "16M"', "the server takes a whole number here, not text"),
    ("innodb_io_capacity = 1.5", "the server takes a whole number here"),
    ("innodb_flush_method = O_DIRCT", "the server takes one of fsync, O_DSYNC"),
    ("binlog_format = rows", "the server takes one of ROW, STATEMENT, MIXED"),
    ("innodb_flush_log_at_trx_commit = 4", "the server takes one of 0, 1, 2, 3"),
    ("performance_schema = 2", "the server takes one of ON, OFF"),
    ("long_query_time = fast", "the server takes a number here"),
    ('character_set_server = "utf8mb4; DROP"', "no server value holds ';'"),
    ('collation_server = "a b"', "no server value holds ' '"),
    ("sql_mode = \"'\"", "no server value holds \"'\""),
    ('init_connect = "SET\\nNAMES"', "no server value holds '\\n'"),
])
def test_values_the_server_would_refuse_are_said_by_check(server: str, says: str, tmp_path: Path) -> None:
    f = tmp_path / "v.bench"
    f.write_text(f'scenario "v" {{\n  target "mysql://u@db1/b"\n  server {{ {server} }}\n  {W}\n  users 2\n'
                 f'  duration 5s\n}}\n')
    r = run_bench("check", str(f))
    assert r.returncode == 2, r.stderr
    assert f"{f}:3:" in r.stderr and says in r.stderr and "hint: " in r.stderr, r.stderr


def test_the_issues_garbage_size_is_refused_by_check_and_varied_values_too(tmp_path: Path) -> None:
    f = tmp_path / "g.bench"
    f.write_text(f'scenario "g" {{\n  {W}\n  vary {{ innodb_log_buffer_size = [8M, "16M; touch x"] }}\n'
                 "  users 2\n  duration 5s\n}\n")
    r = run_bench("check", str(f))
    assert r.returncode == 2
    assert r.stderr.startswith(f'{f}:3:40: error: innodb_log_buffer_size = "16M; touch x": the server takes a whole '
                               "number here (a size may end in K, M, G or T)"), r.stderr
    assert "hint: innodb_log_buffer_size = 16M" in r.stderr


def test_values_check_accepts_are_values_the_server_takes() -> None:
    settings = _settings("binlog_format = mixed  innodb_doublewrite = 0  long_query_time = 500ms  "
                         "innodb_log_buffer_size = 8M  innodb_flush_log_at_trx_commit = 2  thread_cache_size = 8  "
                         'innodb_adaptive_hash_index = off  sql_mode = "STRICT_TRANS_TABLES,NO_ZERO_DATE"')
    srv = EmbeddedServer(settings)
    try:
        dsn = asyncio.run(srv.start())  # the server starts with every one of them
        applied = asyncio.run(apply_settings(dsn, settings, True))
    finally:
        srv.stop()
    assert [(a.name, a.after, a.note) for a in applied if not a.applied] == []
    assert {a.name: a.after for a in applied}["innodb_log_buffer_size"] == str(8 * 1024 * 1024)
