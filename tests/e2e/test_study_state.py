"""What a study writes down about a server of your own before it changes its settings (issue 38):
filed under the server's identity, not under the address that reached it; claimed by one study at
a time; read only from a place no one else could have written; every setting a study changes
recorded and set back, its fixed `server { }` ones too."""

from __future__ import annotations

import asyncio
import json
import os
import pwd
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from bench_dsl.core.dsn import Dsn, parse_dsn
from bench_dsl.core.errors import UsageError
from bench_dsl.server.embedded import EmbeddedServer
from bench_dsl.server.remote_settings import RemoteSettings

from ..conftest import BENCH, ROOT, run_bench, run_sql

NOBODY = pwd.getpwnam("nobody")


@pytest.fixture(scope="module")
def own() -> Iterator[EmbeddedServer]:
    """A server of our own for this file's studies: they change its settings, and two of them
    reach it both by TCP and by its socket."""
    srv = EmbeddedServer(max_connections=50)
    asyncio.run(srv.start())
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "state"
    monkeypatch.setenv("XDG_STATE_HOME", str(home))
    return home


def _tcp(srv: EmbeddedServer) -> Dsn:
    return parse_dsn(srv.url())


def _socket(srv: EmbeddedServer, path: str | None = None) -> Dsn:
    assert srv.socket is not None
    return replace(_tcp(srv), host="localhost", socket=path or srv.socket)


def _url(dsn: Dsn) -> str:
    return (f"mysql://{dsn.user}:{dsn.password}@{dsn.host}:{dsn.port}/{dsn.database}"
            + (f"?socket={dsn.socket}" if dsn.socket else ""))


async def _get(dsn: Dsn, name: str) -> str:
    from bench_dsl.server.connect import connect

    conn = await connect(dsn)
    try:
        async with conn.cursor() as cur:
            await cur.execute(f"SELECT @@GLOBAL.{name}")
            return str((await cur.fetchone())[0])
    finally:
        conn.close()


def _value(dsn: Dsn, name: str) -> str:
    return asyncio.run(_get(dsn, name))


def _set(dsn: Dsn, **values: object) -> None:
    asyncio.run(run_sql(dsn, None, *(f"SET GLOBAL {k} = {v!r}" for k, v in values.items())))


def _release(*studies: RemoteSettings) -> None:
    for s in studies:
        s.release()


# A study killed after it wrote the server's values down and changed them: the process dies by
# SIGKILL with its claim held, as `kill -9` or a power cut would leave it.
KILLED = r'''
import asyncio, json, os, signal, sys
from pathlib import Path
from bench_dsl.core.dsn import parse_dsn
from bench_dsl.server.connect import connect
from bench_dsl.server.remote_settings import RemoteSettings
url, fixed, study, changes = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3], json.loads(sys.argv[4])
dsn = parse_dsn(url)
async def main():
    s = RemoteSettings(dsn, [n for n in changes if n not in fixed], None, print, **({"fixed": fixed} if fixed else {}))
    await s.check()
    s.record(Path(study))
    conn = await connect(dsn)
    async with conn.cursor() as cur:
        for k, v in changes.items():
            await cur.execute(f"SET GLOBAL {k} = %s", (v,))
    conn.close()
asyncio.run(main())
os.kill(os.getpid(), signal.SIGKILL)
'''


def _killed_study(dsn: Dsn, cwd: Path, study: str, changes: dict[str, object], fixed: list[str] | None = None) -> None:
    proc = subprocess.run([sys.executable, "-c", KILLED, _url(dsn), json.dumps(fixed or []), study,
                           json.dumps(changes)], cwd=cwd, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == -signal.SIGKILL, proc.stderr


def _state_files(home: Path) -> list[Path]:
    return sorted((home / "bench-dsl" / "servers").glob("*.json"))


# ---- one server, whatever the address ----------------------------------------------------------

def test_one_server_by_tcp_and_by_its_socket_takes_one_study_at_a_time(own: EmbeddedServer, state: Path) -> None:
    said: list[str] = []
    first = RemoteSettings(_tcp(own), ["innodb_io_capacity"], None, said.append)
    asyncio.run(first.check())
    try:
        second = RemoteSettings(_socket(own), ["innodb_io_capacity"], None, said.append)
        with pytest.raises(UsageError, match="another study") as refused:
            asyncio.run(second.check())
        text = str(refused.value)
        assert f"process {os.getpid()}" in text and f"127.0.0.1:{own.port}" in text, text  # the other, by its address
    finally:
        _release(first)


def test_two_studies_claiming_a_server_at_once_one_is_refused(own: EmbeddedServer, state: Path) -> None:
    """Both pass the barrier before either claims: whichever order the claims take, one wins."""
    barrier = threading.Barrier(2)
    won: list[RemoteSettings] = []
    refused: list[UsageError] = []

    def study(dsn: Dsn) -> None:
        s = RemoteSettings(dsn, ["innodb_io_capacity"], None, lambda _: None)
        barrier.wait()
        try:
            asyncio.run(s.check())
            won.append(s)
        except UsageError as exc:
            refused.append(exc)

    threads = [threading.Thread(target=study, args=(d,)) for d in (_tcp(own), _tcp(own))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    try:
        assert len(won) == 1 and len(refused) == 1, (won, refused)
    finally:
        _release(*won)
    again = RemoteSettings(_socket(own), ["innodb_io_capacity"], None, lambda _: None)
    asyncio.run(again.check())  # released: the next study claims it
    _release(again)


def test_a_study_killed_over_tcp_is_set_back_by_the_next_over_the_socket(
        own: EmbeddedServer, state: Path, tmp_path: Path) -> None:
    _set(_tcp(own), innodb_io_capacity=250)
    _killed_study(_tcp(own), tmp_path, "first", {"innodb_io_capacity": 3000})
    [file] = _state_files(state)
    doc = json.loads(file.read_text())
    assert doc["study"] == str(tmp_path / "first")  # absolute: bench ran in tmp_path
    assert doc["original"] == {"innodb_io_capacity": "250"}
    assert _value(_tcp(own), "innodb_io_capacity") == "3000"
    said: list[str] = []
    s = RemoteSettings(_socket(own), ["innodb_io_capacity"], None, said.append)
    asyncio.run(s.check())
    _release(s)
    assert any(f"an earlier study ({tmp_path / 'first'}) ended" in t for t in said), said
    assert "restored innodb_io_capacity=250 (it was 3000)" in said, said
    assert _value(_tcp(own), "innodb_io_capacity") == "250"


def test_another_server_at_the_same_address_gets_nothing_of_the_first_ones_values(
        own: EmbeddedServer, state: Path, tmp_path: Path) -> None:
    """One address (a socket's path, here a link) leads to a server, then to another one: what
    was written down for the first is not set on the second, and stays for the first."""
    link = tmp_path / "db.sock"
    link.symlink_to(own.socket or "")
    address = _socket(own, str(link))
    _set(address, innodb_io_capacity=200)
    _killed_study(address, tmp_path, "first", {"innodb_io_capacity": 3000})
    other = EmbeddedServer(max_connections=50)
    asyncio.run(other.start())
    try:
        link.unlink()
        link.symlink_to(other.socket or "")
        address = replace(address, password=other.dsn.password if other.dsn else "")
        _set(address, innodb_io_capacity=250)
        said: list[str] = []
        s = RemoteSettings(address, ["innodb_io_capacity"], None, said.append)
        asyncio.run(s.check())
        _release(s)
        assert _value(_tcp(other), "innodb_io_capacity") == "250", said
        assert not any("earlier study" in t for t in said), said
    finally:
        other.stop()
    s = RemoteSettings(_tcp(own), ["innodb_io_capacity"], None, said.append)  # the first server's own, still kept
    asyncio.run(s.check())
    _release(s)
    assert _value(_tcp(own), "innodb_io_capacity") == "200", said


# ---- a state file trusted only when no one else could have written it --------------------------

PLANTED = {"init_connect": "SET @planted_by_nobody = 1", "max_connections": "77"}


def test_a_state_file_someone_else_could_have_written_is_refused_and_never_applied(
        own: EmbeddedServer, state: Path, tmp_path: Path) -> None:
    dsn = _tcp(own)
    _killed_study(dsn, tmp_path, "first", {"innodb_io_capacity": 3000})
    [file] = _state_files(state)
    doc = json.loads(file.read_text())
    doc["original"] = PLANTED
    planted = json.dumps(doc)
    servers = file.parent
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_text(planted)
    elsewhere.chmod(0o600)

    def owned_by_nobody() -> None:
        file.write_text(planted)
        os.chown(file, NOBODY.pw_uid, NOBODY.pw_gid)

    def writable_by_all() -> None:
        file.write_text(planted)
        file.chmod(0o666)

    def directory_of_nobody() -> None:
        file.write_text(planted)
        os.chown(servers, NOBODY.pw_uid, NOBODY.pw_gid)

    def directory_writable_by_all() -> None:
        file.write_text(planted)
        servers.chmod(0o777)

    def a_link() -> None:  # a link to a file of ours: who made the link is unknown
        file.unlink()
        file.symlink_to(elsewhere)

    before = {n: _value(dsn, n) for n in PLANTED}
    for plant, refused in ((owned_by_nobody, file), (writable_by_all, file), (directory_of_nobody, servers),
                           (directory_writable_by_all, servers), (a_link, file)):
        plant()
        s = RemoteSettings(dsn, ["innodb_io_capacity"], None, lambda _: None)
        with pytest.raises(UsageError) as err:
            asyncio.run(s.check())
        text = " ".join(str(err.value).split())
        assert str(refused) in text and "nothing was changed on the server" in text, (plant.__name__, text)
        assert {n: _value(dsn, n) for n in PLANTED} == before, plant.__name__
        # put back as bench-dsl keeps it, for the next case
        os.chown(servers, 0, 0)
        servers.chmod(0o700)
        file.unlink()
        file.write_text(planted)
        file.chmod(0o600)
    assert _value(dsn, "innodb_io_capacity") == "3000"  # no case set anything back either
    file.unlink()


def test_a_state_directory_reached_through_a_link_or_one_any_user_may_replace_is_refused(
        own: EmbeddedServer, state: Path, tmp_path: Path) -> None:
    dsn = _tcp(own)
    mine = tmp_path / "mine"
    mine.mkdir(mode=0o700)
    state.mkdir(mode=0o700)
    (state / "bench-dsl").symlink_to(mine)
    for refused, why in ((state / "bench-dsl", "a symbolic link"), (state, "writable by every user")):
        if refused == state:
            (state / "bench-dsl").unlink()
            state.chmod(0o777)  # no sticky bit: anyone may rename bench-dsl/ away and put theirs
        s = RemoteSettings(dsn, ["innodb_io_capacity"], None, lambda _: None)
        with pytest.raises(UsageError) as err:
            asyncio.run(s.check())
        text = " ".join(str(err.value).split())
        assert f"{refused}: {why}" in text, text
    state.chmod(0o1777)  # as /tmp: only the owner of bench-dsl/ may rename it
    s = RemoteSettings(dsn, ["innodb_io_capacity"], None, lambda _: None)
    asyncio.run(s.check())
    _release(s)


def test_a_temporary_file_planted_where_the_study_writes_is_never_written_through(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A study's directory may be one others can write in: a file they put at the temporary name
    would be written and renamed into place, still theirs."""
    from bench_dsl.server.remote_settings import STUDY_FILE
    from bench_dsl.server.settings_state import write_private

    study = tmp_path / "study"
    study.mkdir()
    study.chmod(0o777)
    tokens = iter(["0000", "1111"])
    monkeypatch.setattr("secrets.token_hex", lambda _: next(tokens))
    planted = [study / f".{STUDY_FILE}.{os.getpid()}.tmp", study / f".{STUDY_FILE}.{os.getpid()}.0000.tmp"]
    for p in planted:
        p.write_text("theirs")
        os.chown(p, NOBODY.pw_uid, NOBODY.pw_gid)
    write_private(study / STUDY_FILE, {"original": {"innodb_io_capacity": "200"}})
    written = (study / STUDY_FILE).stat()
    assert written.st_uid == os.geteuid() and written.st_mode & 0o777 == 0o600
    assert json.loads((study / STUDY_FILE).read_text()) == {"original": {"innodb_io_capacity": "200"}}
    assert [p.read_text() for p in planted] == ["theirs", "theirs"]


def test_a_state_file_of_another_format_is_not_applied(own: EmbeddedServer, state: Path, tmp_path: Path) -> None:
    dsn = _tcp(own)
    _killed_study(dsn, tmp_path, "first", {"innodb_io_capacity": 3000})
    [file] = _state_files(state)
    doc = json.loads(file.read_text())
    doc["format"] = "something-else"
    doc["original"] = PLANTED
    file.write_text(json.dumps(doc))
    said: list[str] = []
    s = RemoteSettings(dsn, ["innodb_io_capacity"], None, said.append)
    asyncio.run(s.check())
    _release(s)
    assert _value(dsn, "max_connections") != "77"
    assert any(str(file) in t and "not a file of bench-dsl" in t for t in said), said


def test_the_state_directories_are_made_private(own: EmbeddedServer, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "a" / "state"  # its parents too are made by bench-dsl
    monkeypatch.setenv("XDG_STATE_HOME", str(home))
    s = RemoteSettings(_tcp(own), ["innodb_io_capacity"], None, lambda _: None)
    asyncio.run(s.check())
    s.record(tmp_path / "study")
    _release(s)
    for d in (tmp_path / "a", home, home / "bench-dsl", home / "bench-dsl" / "servers"):
        assert d.stat().st_mode & 0o777 == 0o700, d


def test_a_forged_static_list_blocks_nothing_the_server_says_is_dynamic(
        own: EmbeddedServer, state: Path, tmp_path: Path) -> None:
    dsn = _tcp(own)
    _set(dsn, innodb_io_capacity=250)
    _killed_study(dsn, tmp_path, "first", {"innodb_io_capacity": 3000})
    [file] = _state_files(state)
    doc = json.loads(file.read_text())
    doc["static"] = ["innodb_io_capacity"]
    file.write_text(json.dumps(doc))
    said: list[str] = []
    s = RemoteSettings(dsn, ["innodb_io_capacity"], None, said.append)
    asyncio.run(s.check())  # today: "static ... give --restart-cmd"
    _release(s)
    assert _value(dsn, "innodb_io_capacity") == "250", said


def test_a_value_the_server_refuses_says_where_it_stays_written_down(
        own: EmbeddedServer, state: Path, tmp_path: Path) -> None:
    dsn = _tcp(own)
    _killed_study(dsn, tmp_path, "first", {"innodb_io_capacity": 3000})
    [file] = _state_files(state)
    doc = json.loads(file.read_text())
    doc["original"] = {"innodb_io_capacity": "many"}
    file.write_text(json.dumps(doc))
    said: list[str] = []
    s = RemoteSettings(dsn, [], None, said.append)
    asyncio.run(s.check())
    asyncio.run(s.restore())
    _release(s)
    assert any(str(file) in t for t in said if "innodb_io_capacity" in t), said
    assert json.loads(file.read_text())["original"] == {"innodb_io_capacity": "many"}
    file.unlink()


# ---- section 5: the study's fixed `server { }` settings ----------------------------------------

FIXED = """scenario "fixed and varied" {
  target env("BENCH_OWN_DSN")
  server { innodb_flush_log_at_trx_commit = 2 }
  workload sysbench oltp_point_select { tables = 1  table_size = 100 }
  vary { innodb_io_capacity = [300, 3000] }
  users 1
  duration %s
}"""


@pytest.mark.slow
def test_a_studys_fixed_server_settings_are_written_down_and_set_back(
        own: EmbeddedServer, state: Path, tmp_path: Path) -> None:
    dsn = _tcp(own)
    _set(dsn, innodb_flush_log_at_trx_commit=1, innodb_io_capacity=200)
    f = tmp_path / "fixed.bench"
    f.write_text(FIXED % "1s")
    env = {"BENCH_OWN_DSN": own.url(), "XDG_STATE_HOME": str(state)}
    r = run_bench("run", str(f), "--headless", "-q", "--json", str(tmp_path / "whole"), env=env)
    assert r.returncode == 0, r.stderr
    said = " ".join(r.stderr.split())
    assert "restored innodb_flush_log_at_trx_commit=1, innodb_io_capacity=200" in said, r.stderr
    assert _value(dsn, "innodb_flush_log_at_trx_commit") == "1"

    # killed while its second configuration runs: both were written down first
    f.write_text(FIXED % "6s")
    proc = subprocess.Popen([*BENCH, "run", str(f), "--headless", "-q", "--json", str(tmp_path / "killed")],
                            cwd=ROOT, env={**os.environ, **env}, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120  # a bound on a hang, not a timing: it is met in seconds
        while _value(dsn, "innodb_io_capacity") != "3000":
            assert proc.poll() is None and time.monotonic() < deadline, "the second configuration never ran"
            time.sleep(0.2)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    [file] = _state_files(state)
    assert json.loads(file.read_text())["original"] == {"innodb_flush_log_at_trx_commit": "1",
                                                       "innodb_io_capacity": "200"}
    s = RemoteSettings(dsn, [], None, lambda _: None)
    asyncio.run(s.check())
    _release(s)
    assert _value(dsn, "innodb_flush_log_at_trx_commit") == "1" and _value(dsn, "innodb_io_capacity") == "200"
