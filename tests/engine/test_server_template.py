"""The throwaway server's data directory is a copy of a template installed once (server/template.py):
servers made from it are each their own (data, password), the template holds no secret and is
never changed by them, another binary gets another template, a bad one is built again, and two
first starts at once build it once. Each test has a cache of its own (XDG_CACHE_HOME)."""

from __future__ import annotations

import asyncio
import hashlib
import os
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import asyncmy
import pytest

from bench_dsl.core.dsn import Dsn
from bench_dsl.core.errors import TargetError
from bench_dsl.language.model import ServerSetting
from bench_dsl.server.connect import connect
from bench_dsl.server.embedded import EmbeddedServer

from ..conftest import ROOT


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache" / "bench-dsl" / "server-templates"


def templates(root: Path) -> list[Path]:
    return sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))


def started(*settings: ServerSetting) -> EmbeddedServer:
    srv = EmbeddedServer(settings)
    asyncio.run(srv.start())
    return srv


async def query(dsn: Dsn, *sql: str) -> list[tuple[object, ...]]:
    conn = await connect(dsn)
    try:
        async with conn.cursor() as cur:
            for s in sql:
                await cur.execute(s)
            return list(await cur.fetchall())
    finally:
        conn.close()


def native_hash(password: str) -> bytes:
    return b"*" + hashlib.sha1(hashlib.sha1(password.encode()).digest()).hexdigest().upper().encode()


@pytest.fixture
def servers() -> Iterator[list[EmbeddedServer]]:
    made: list[EmbeddedServer] = []
    yield made
    for srv in made:
        srv.stop()


def test_servers_from_one_template_are_each_their_own(cache: Path, servers: list[EmbeddedServer]) -> None:
    servers += [started(), started()]
    a, b = servers
    assert (a.data_from, b.data_from) == ("new template", "template")
    (tpl,) = templates(cache)
    for d in (cache.parent, cache, tpl):  # no other local user lists or reads it
        assert d.stat().st_uid == os.geteuid() and stat.S_IMODE(d.stat().st_mode) == 0o700, d
    assert a.dsn is not None and b.dsn is not None and a.dsn.password != b.dsn.password
    asyncio.run(query(a.dsn, "CREATE TABLE benchdsl.mine (x INT)", "INSERT INTO benchdsl.mine VALUES (1)"))
    assert asyncio.run(query(b.dsn, "SHOW TABLES IN benchdsl")) == []
    assert asyncio.run(query(a.dsn, "SELECT x FROM benchdsl.mine")) == [(1,)]
    with pytest.raises(asyncmy.errors.OperationalError) as denied:  # a's password does not open b
        asyncio.run(query(Dsn("127.0.0.1", b.port, "root", a.dsn.password, "benchdsl", None), "SELECT 1"))
    assert denied.value.args[0] == 1045
    # each password is in its server's own copy, and in the template neither it nor its hash
    assert a.basedir is not None
    asyncio.run(query(a.dsn, "FLUSH TABLES"))  # its system tables' pages written to their files
    assert native_hash(a.dsn.password) in (a.basedir / "data" / "mysql" / "global_priv.MAD").read_bytes()
    secrets = [s for srv in (a, b) if srv.dsn for s in (srv.dsn.password.encode(), native_hash(srv.dsn.password))]
    for f in tpl.rglob("*"):
        if f.is_file():
            body = f.read_bytes()
            assert not any(s in body for s in secrets), f
    # the servers changed their copies only: a third start copies the template as it was made
    servers.append(started())
    assert servers[2].data_from == "template" and templates(cache) == [tpl]
    assert asyncio.run(query(servers[2].dsn, "SHOW TABLES IN benchdsl")) == []  # type: ignore[arg-type]


def test_the_servers_settings_decide_its_redo_log(cache: Path, servers: list[EmbeddedServer]) -> None:
    """The template's redo log is a small one: the server makes its own, at the size of its settings."""
    servers += [started(), started(ServerSetting("innodb_log_file_size", 64 * 1024 * 1024, "64M"))]
    assert servers[1].data_from == "template"
    for srv, size in zip(servers, (96 * 1024 * 1024, 64 * 1024 * 1024), strict=True):
        assert srv.dsn is not None and srv.basedir is not None
        assert asyncio.run(query(srv.dsn, "SELECT @@innodb_log_file_size")) == [(size,)]
        assert (srv.basedir / "data" / "ib_logfile0").stat().st_size == size
    (tpl,) = templates(cache)
    assert (tpl / "data" / "ib_logfile0").stat().st_size < 8 * 1024 * 1024


def test_another_installer_or_a_changed_one_gets_another_template(
        cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, servers: list[EmbeddedServer]) -> None:
    """The key is the binaries' identity: another installer (here one on the PATH that runs the
    real one) is another template, and so is the same one changed in place (an upgrade). Its
    install writes nothing in the shared temp dir (here missing), as a server's own does not."""
    monkeypatch.setenv("TMPDIR", str(tmp_path / "missing"))
    servers.append(started())
    assert servers[0].data_from == "new template"
    real = subprocess.run(["sh", "-c", "command -v mariadb-install-db || command -v mysql_install_db"],
                          capture_output=True, text=True).stdout.strip()
    assert real, "no mariadb-install-db: run scripts/setup.sh"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    wrapper = bin_dir / Path(real).name
    wrapper.write_text(f'#!/bin/sh\nexec {real} "$@"\n')
    wrapper.chmod(0o700)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    servers.append(started())
    assert servers[1].data_from == "new template" and len(templates(cache)) == 2
    os.utime(wrapper, ns=(time.time_ns(), time.time_ns() + 10**9))  # the same installer, upgraded
    servers.append(started())
    assert servers[2].data_from == "new template" and len(templates(cache)) == 3
    servers.append(started())
    assert servers[3].data_from == "template" and len(templates(cache)) == 3
    assert all(srv.alive() for srv in servers)
    assert not (tmp_path / "missing").exists()


def test_a_changed_template_is_built_again_and_an_open_cache_is_not_used(cache: Path,
                                                                           servers: list[EmbeddedServer]) -> None:
    servers.append(started())
    (tpl,) = templates(cache)
    user = tpl / "data" / "mysql" / "global_priv.MAD"
    body = bytearray(user.read_bytes())
    body[-1] ^= 0xFF  # the same size, another content
    user.write_bytes(bytes(body))
    servers.append(started())
    assert servers[1].data_from == "new template"
    (tpl,) = templates(cache)
    (tpl / "data" / "mysql" / "db.frm").unlink()
    servers.append(started())
    assert servers[2].data_from == "new template" and (tpl / "data" / "mysql" / "db.frm").exists()
    tpl.chmod(0o755)  # another user may read it: not used, built again
    servers.append(started())
    assert servers[3].data_from == "new template" and stat.S_IMODE(tpl.stat().st_mode) == 0o700
    cache.chmod(0o777)  # anyone may write where the templates are: none is used or made
    servers.append(started())
    assert servers[4].data_from == "install" and templates(cache) == [tpl]
    assert all(srv.alive() for srv in servers)
    assert not [p for p in cache.iterdir() if p.name.startswith(".")]  # no build or discarded one left


FIRST_START = """
import asyncio, pathlib, sys, time
from bench_dsl.server.embedded import EmbeddedServer
ready, go = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
ready.touch()
while not go.exists():
    time.sleep(0.005)
srv = EmbeddedServer()
try:
    asyncio.run(srv.start())
    print(srv.data_from)
finally:
    srv.stop()
"""


def test_two_first_starts_at_once_install_once(cache: Path, tmp_path: Path) -> None:
    """Two processes start a server in the same moment with no template yet: one builds it, the
    other waits for it and copies it, and neither sees it half made."""
    go = tmp_path / "go"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [subprocess.Popen([sys.executable, "-c", FIRST_START, str(tmp_path / f"ready{i}"), str(go)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for i in range(2)]
    try:
        deadline = time.monotonic() + 60
        while not all((tmp_path / f"ready{i}").exists() for i in range(2)) and time.monotonic() < deadline:
            time.sleep(0.01)
        go.touch()
        said = [p.communicate(timeout=120) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    assert [p.returncode for p in procs] == [0, 0], said
    assert sorted(out.strip() for out, _ in said) == ["new template", "template"], said
    assert len(templates(cache)) == 1
    assert not [p for p in cache.iterdir() if p.name.startswith(".")]


def test_an_installer_that_fails_says_so_and_leaves_no_template(cache: Path, tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    broken = bin_dir / "mariadb-install-db"
    broken.write_text("#!/bin/sh\necho 'cannot write the system tables' >&2\nexit 1\n")
    broken.chmod(0o700)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    srv = EmbeddedServer()
    with pytest.raises(TargetError, match="could not initialise a throwaway data directory") as err:
        asyncio.run(srv.start())
    assert "cannot write the system tables" in str(err.value) and srv.process is None
    srv.stop()
    assert templates(cache) == [] and not [p for p in cache.iterdir() if p.name.startswith(".")]
