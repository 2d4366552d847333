"""The throwaway server is bench-dsl's alone: tried as another local user would (the `mariadb`
client run as `nobody`), and as a scenario might (settings that would open it)."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import asyncmy
import pytest

from bench_dsl.core.errors import TargetError
from bench_dsl.language.model import ServerSetting
from bench_dsl.server.connect import connect
from bench_dsl.server.embedded import OWNER_FILE, STALE_PREFIX, EmbeddedServer, remove_stale_servers

from ..conftest import run_bench

CLIENT = shutil.which("mariadb") or shutil.which("mysql")


def as_nobody(*args: str) -> subprocess.CompletedProcess[str]:
    # never skipped: the suite runs as root (it installs and starts servers), and the mariadb
    # client comes with the server scripts/setup.sh installs
    assert os.geteuid() == 0 and shutil.which("runuser"), "acting as another user needs root and runuser"
    assert CLIENT is not None, "no mariadb client: run scripts/setup.sh (make test does)"
    return subprocess.run(["runuser", "-u", "nobody", "--", CLIENT, "--no-defaults", "--connect-timeout=5", *args,
                           "-e", "SELECT 'in'"], capture_output=True, text=True, timeout=30, cwd="/")


def test_another_local_user_cannot_reach_the_throwaway_server() -> None:
    srv = EmbeddedServer()
    dsn = asyncio.run(srv.start())
    try:
        assert srv.basedir is not None and (srv.basedir.stat().st_mode & 0o077) == 0
        port = str(dsn.port)
        for user in ("root", "nobody", ""):  # the accounts the installer makes, and an anonymous one
            r = as_nobody("-h127.0.0.1", f"-P{port}", f"-u{user}" if user else "-uanything", "--skip-password")
            assert r.returncode != 0 and "in" not in r.stdout, (user, r.stdout, r.stderr)
            assert "Access denied" in r.stderr, r.stderr
        r = as_nobody(f"--socket={srv.basedir / 'mysqld.sock'}", "-uroot", "--skip-password")
        assert r.returncode != 0 and "in" not in r.stdout
        # the password bench-dsl holds is the way in (over TCP, as the users connect)
        async def ours() -> None:
            conn = await connect(dsn)
            conn.close()
        asyncio.run(ours())
    finally:
        srv.stop()


def test_files_the_server_writes_stay_in_its_own_directory(tmp_path: Path) -> None:
    srv = EmbeddedServer()
    dsn = asyncio.run(srv.start())

    async def outfile(path: Path) -> None:
        conn = await connect(dsn)
        try:
            async with conn.cursor() as cur:
                await cur.execute(f"SELECT 1 INTO OUTFILE '{path}'")
        finally:
            conn.close()
    try:
        with pytest.raises(asyncmy.errors.MySQLError) as err:
            asyncio.run(outfile(tmp_path / "out.txt"))
        assert err.value.args[0] == 1290  # --secure-file-priv
        assert not (tmp_path / "out.txt").exists()
        assert srv.basedir is not None
        asyncio.run(outfile(srv.basedir / "files" / "ok.txt"))  # its own directory only
    finally:
        srv.stop()


def test_the_install_writes_nothing_in_the_shared_temp_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The server and its bootstrap use the server's own directory for temporary tables: with the
    shared temp dir missing (TMPDIR, which mariadbd takes as its default), it still installs and starts."""
    own = Path(tempfile.mkdtemp(prefix="bd-own-"))  # short: the server's socket is in it (107 bytes at most)
    monkeypatch.setenv("TMPDIR", str(tmp_path / "missing"))
    srv = EmbeddedServer(parent=str(own))
    try:
        asyncio.run(srv.start())
        assert srv.alive()
    finally:
        srv.stop()
        shutil.rmtree(own, ignore_errors=True)
    assert not (tmp_path / "missing").exists()


def test_settings_that_would_open_the_server_are_refused() -> None:
    for name, value in (("bind_address", "0.0.0.0"), ("skip_grant_tables", 1), ("secure_file_priv", "")):
        srv = EmbeddedServer((ServerSetting(name, value, str(value)),))
        with pytest.raises(TargetError, match=name):
            asyncio.run(srv.start())
        assert srv.process is None  # nothing was started


def test_a_killed_runs_server_directory_is_removed_at_the_next_start() -> None:
    dead = subprocess.Popen(["true"])
    dead.wait()
    stale = Path(tempfile.mkdtemp(prefix=STALE_PREFIX))
    (stale / OWNER_FILE).write_text(str(dead.pid))
    (stale / "data").mkdir()
    alive = Path(tempfile.mkdtemp(prefix=STALE_PREFIX))
    (alive / OWNER_FILE).write_text(str(os.getpid()))  # a run that is still going
    unknown = Path(tempfile.mkdtemp(prefix=STALE_PREFIX))  # no owner file: not ours to judge
    try:
        removed = remove_stale_servers()
        assert stale in removed and not stale.exists()
        assert alive.exists() and unknown.exists()
    finally:
        for d in (stale, alive, unknown):
            shutil.rmtree(d, ignore_errors=True)


def test_a_kept_servers_directory_is_not_taken_for_a_stale_one() -> None:
    srv = EmbeddedServer(keep=True)
    asyncio.run(srv.start())
    srv.stop()
    assert srv.basedir is not None and srv.basedir.exists()
    try:
        assert srv.basedir not in remove_stale_servers() and srv.basedir.exists()  # --keep-server kept it
    finally:
        shutil.rmtree(srv.basedir, ignore_errors=True)


HOSTILE = "evil\x1b]0;owned\x07 \x1b[2J\u202e [bold]x[/bold]"  # retitles the window, clears the screen


def test_names_from_files_reach_the_terminal_with_their_control_characters_escaped(dsn_url: str,
                                                                                     tmp_path: Path) -> None:
    f = tmp_path / "evil.bench"
    f.write_text(f'scenario "{HOSTILE}" {{\n  target env("BENCH_DSN")\n'
                 "  workload custom { transaction one { query \"SELECT 1\" } }\n"
                 "  users 1\n  duration 2s\n  report every 1s\n}\n")
    base, other = tmp_path / "base.json", tmp_path / "other.json"
    said = {"check --plan": run_bench("check", "--plan", str(f)),
            "run": run_bench("run", str(f), "--headless", "--json", str(base))}
    assert said["run"].returncode == 0, said["run"].stderr
    doc = json.loads(base.read_text())
    doc["scenario"]["name"] = "other\x1b[31m\x9b2J [red]y"  # a result file edited by hand: a label, a C1 CSI
    doc["warnings"] = [*doc.get("warnings", []), "careful\x1b[8m hidden"]
    other.write_text(json.dumps(doc))
    said["compare"] = run_bench("compare", str(base), str(other), "--fail-if", "tps < -99%")
    said["compare --markdown -"] = run_bench("compare", str(base), str(other), "--markdown", "-")
    said["replay"] = run_bench("replay", str(other))  # no terminal: the console lines
    for command, r in said.items():
        out = r.stdout + r.stderr
        assert "\x1b" not in out and "\x9b" not in out and "\u202e" not in out, (command, out)
        assert r.returncode == 0, (command, r.stderr)
    assert "evil\\x1b]0;owned" in said["check --plan"].stdout and "[bold]x[/bold]" in said["check --plan"].stdout
    assert "\\x1b[2J" in said["run"].stderr and "[bold]x[/bold]" in said["run"].stderr  # markup shown, not read
    assert "other\\x1b[31m\\x9b2J [red]y" in said["compare"].stdout and "[bold]x[/bold]" in said["compare"].stdout
    assert "other\\x1b[31m" in said["compare --markdown -"].stdout
    assert "other\\x1b[31m\\x9b2J [red]y" in said["replay"].stdout
    assert "careful\\x1b[8m hidden" in said["replay"].stdout


async def test_the_live_screen_draws_a_hostile_name_escaped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from bench_dsl.engine.events import Started

    from ..e2e.test_replay import _replay
    from ..fixtures.replay import QUICKSTART, events

    evs = [dataclasses.replace(e, scenario=HOSTILE) if isinstance(e, Started) else e for e in events(QUICKSTART)]
    monkeypatch.chdir(tmp_path)  # a short path in the header leaves room for the name
    stream = Path("h.jsonl")
    stream.write_text("".join(json.dumps(e.to_json(), default=str) + "\n" for e in evs))
    text, _ = await _replay(stream)
    assert "evil\\x1b]0;owned\\x07 \\x1b[2J\\u202e [bold]x[/bold]" in text and "\x1b" not in text
