"""Passwords never appear: one address parser, one redaction, every output of a run searched."""

from __future__ import annotations

import asyncio
import os
import subprocess
import time
from pathlib import Path
from urllib.parse import quote

import psutil
import pytest

from bench_dsl.core.dsn import parse_dsn, quote_identifier, redact
from bench_dsl.server.connect import connect

from ..conftest import BENCH, ROOT, run_bench

SECRET = "Pw-Sekr3t"


@pytest.mark.parametrize("text", [
    f"mysql://u:{SECRET}@h:3306/db", f"MYSQL://u:{SECRET}@h/db", f"MariaDB://u:{SECRET}@h/db",
    f"postgres://u:{SECRET}@h/db", f"mysql:/u:{SECRET}@h/db", f"mysql://u:{SECRET}#x@h/db",
    f"mysql://u:{SECRET}@x@h/db", f"mysql://u:a:{SECRET}@h/db", f"(mysql://u:{SECRET}@h/db)",
])
def test_redaction_hides_the_password_of_any_address(text: str) -> None:
    assert SECRET not in redact(text) and ":***@" in redact(text)


@pytest.mark.parametrize(("text", "says"), [
    (f"mysql:/u:{SECRET}@h/db", "two slashes"),
    (f"postgres://u:{SECRET}@h/db", "only mysql:// and mariadb://"),
    (f"mysql://u:{SECRET}#1@h/db", "%23"),
    (f"mysql://u:{SECRET}@h:99999/db", "port"),
    (f"mysql://u:{SECRET}@h/db`; DROP DATABASE x; --", "database name"),
    (f"mysql://u:{SECRET}@h/a/b", "database name"),
    (f"mysql://u:{SECRET}@h/db?sslmode=on", "unknown option"),
])
def test_a_bad_address_is_refused_without_its_password(text: str, says: str) -> None:
    with pytest.raises(ValueError) as err:
        parse_dsn(text)
    assert says in str(err.value) and SECRET not in str(err.value)


def test_an_upper_case_scheme_is_an_address_like_any_other() -> None:
    d = parse_dsn(f"MYSQL://u:{SECRET}@h:3307/shop")
    assert (d.host, d.port, d.user, d.password, d.database) == ("h", 3307, "u", SECRET, "shop")


def test_identifiers_are_quoted() -> None:
    assert quote_identifier("a`b") == "`a``b`"
    with pytest.raises(ValueError):
        quote_identifier("a\x00b")


@pytest.mark.parametrize("args", [
    ["run", "examples/quickstart.bench", "--target", f"mysql:/u:{SECRET}@127.0.0.1/db"],
    ["run", "examples/quickstart.bench", "--target", f"postgres://u:{SECRET}@127.0.0.1/db"],
    ["run", "examples/quickstart.bench", "--target", f"MYSQL://u:{SECRET}@127.0.0.1:99999/db"],
])
def test_a_bad_target_option_is_a_usage_error_that_hides_the_password(args: list[str]) -> None:
    r = run_bench(*args)
    assert r.returncode == 2, r.stderr
    assert SECRET not in r.stdout + r.stderr and r.stderr.startswith("bench: --target: ")


def test_check_and_plan_hide_passwords_from_the_file_the_options_and_the_environment(tmp_path: Path) -> None:
    f = tmp_path / "t.bench"
    f.write_text(f'let dsn = "x"\nscenario "t" {{\n  target "MYSQL://u:{SECRET}@h:3306/db"\n'
                 '  workload sysbench oltp_read_write { tables = 1 }\n  users 2  duration 5s\n}\n')
    r = run_bench("check", "--plan", str(f))
    assert r.returncode == 0 and "MYSQL://u:***@h:3306/db" in r.stdout and SECRET not in r.stdout + r.stderr
    r = run_bench("check", str(f), "-D", f"dsn=mysql://u:{SECRET}@h/db")  # unquoted: not an expression
    assert r.returncode == 2 and SECRET not in r.stdout + r.stderr
    g = tmp_path / "e.bench"
    g.write_text('scenario "e" {\n  target env("BENCH_DSN")\n  workload sysbench oltp_read_write { tables = 1 }\n'
                 '  users 2  duration 5s\n}\n')
    for bad in (f"mysql://u:{SECRET}#1@h/db", f"MYSQL://u:{SECRET}@h:x/db", f"mysql:/u:{SECRET}@h/db"):
        r = run_bench("check", str(g), env={"BENCH_DSN": bad})
        assert r.returncode == 2 and SECRET not in r.stdout + r.stderr, bad


def test_a_run_with_a_known_password_shows_it_nowhere(server, dsn_url: str, tmp_path: Path) -> None:
    """stdout, stderr, the result, the event stream, every process's command line and environment
    seen by others, the server's process list, and the files the run leaves."""
    dsn, _ = server
    password = "Known#Pa55@word"

    async def make_user() -> None:
        conn = await connect(dsn, None)
        try:
            async with conn.cursor() as cur:
                await cur.execute("CREATE USER IF NOT EXISTS 'known'@'%%' IDENTIFIED BY %s", (password,))
                await cur.execute("GRANT ALL ON *.* TO 'known'@'%'")
        finally:
            conn.close()

    asyncio.run(make_user())
    address = f"mysql://known:{quote(password, safe='')}@{dsn.host}:{dsn.port}/benchdsl"
    f = tmp_path / "pw.bench"
    f.write_text('scenario "pw" { target env("BENCH_DSN")  workers 2\n'
                 '  workload sysbench oltp_point_select { tables = 1 table_size = 1000 } users 4 duration 4s }')
    out, stream = tmp_path / "pw.json", tmp_path / "pw.jsonl"
    before = set(Path("/tmp").iterdir())
    proc = subprocess.Popen([*BENCH, "run", str(f), "--json", str(out), "--jsonl", str(stream)], cwd=ROOT,
                            env={**os.environ, "BENCH_DSN": address}, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    seen: list[str] = []
    processlist: list[str] = []

    async def look() -> None:
        conn = await connect(dsn, None)
        try:
            async with conn.cursor() as cur:
                await cur.execute("SELECT COALESCE(INFO, ''), USER FROM information_schema.PROCESSLIST")
                processlist.extend(" ".join(map(str, row)) for row in await cur.fetchall())
        finally:
            conn.close()

    deadline = time.monotonic() + 60
    while proc.poll() is None and time.monotonic() < deadline:
        try:
            me = psutil.Process(proc.pid)
            for p in [me, *me.children(recursive=True)]:
                seen.append(" ".join(p.cmdline()))
        except psutil.Error:
            pass
        asyncio.run(look())
        time.sleep(0.5)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 0, stderr
    assert any("bench_dsl.fleet.worker" in s for s in seen)  # the workers were looked at too
    assert any("known" in p for p in processlist)  # and the users' connections
    left = [p for p in set(Path("/tmp").iterdir()) - before if p.is_file()]
    texts = [stdout, stderr, out.read_text(), stream.read_text(), *seen, *processlist,
             *(p.read_text(errors="replace") for p in left), *(p.read_text(errors="replace")
                                                             for p in tmp_path.iterdir() if p.is_file())]
    for form in (password, quote(password, safe=""), "Pa55"):
        assert not [t for t in texts if form in t], form
    assert "mysql://known:***@" in out.read_text()
