"""TLS end to end: a throwaway server with a certificate made here by `openssl` and
`require_secure_transport=ON`, reached by `bench run` with the mysql client's options (docs/tls.md)."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, replace
from importlib import resources
from pathlib import Path
from urllib.parse import quote

import jsonschema
import pytest

from bench_dsl.core.dsn import Dsn, parse_dsn
from bench_dsl.language.statements import Draw, Execute, StatementStep, Transaction, Transactions
from bench_dsl.measure.recorder import new_counts
from bench_dsl.native import executor
from bench_dsl.native.executor import NativeUser
from bench_dsl.server.connect import connect, session_tls
from bench_dsl.server.embedded import EmbeddedServer

from ..conftest import ROOT, run_bench
from ..tls import Certificates, make_certificates, tls_only_server

pytestmark = pytest.mark.slow

SCHEMA = json.loads(resources.files("bench_dsl.results.schema").joinpath("result-v1.json").read_text())
USERS = 3
SCENARIO = f"""scenario "tls" {{
  target env("BENCH_TLS_DSN")
  workers 2
  workload sysbench oltp_point_select {{ tables = 1  table_size = 500 }}
  users {USERS}  warmup 1s  duration 2s  report every 1s
}}
"""
# How each executor is asked for: the default (the C executor, libmariadb's TLS) and asyncmy (an
# ssl.SSLContext); every test that takes `executor` runs on both.
EXECUTORS: dict[str, dict[str, str]] = {"default": {}, "asyncmy": {"BENCH_RAWEXEC": "0"}}


@dataclass
class TlsServer:
    server: EmbeddedServer
    certs: Certificates
    plain_url: str  # the address without TLS options, password in it: only for the environment

    def url(self, **options: str) -> str:
        query = "&".join(f"{k}={quote(v, safe='/')}" for k, v in options.items())
        return self.plain_url + (f"?{query}" if query else "")

    def verify_ca(self) -> str:
        return self.url(**{"ssl-mode": "VERIFY_CA", "ssl-ca": str(self.certs.ca)})


@pytest.fixture(scope="module")
def tls_server() -> Iterator[TlsServer]:
    """A throwaway server that takes TCP connections over TLS only; its certificates in a 0700
    directory, removed with it."""
    certs = make_certificates()
    srv = tls_only_server(certs)
    try:
        asyncio.run(srv.start())
        yield TlsServer(srv, certs, srv.url())
    finally:
        srv.stop()
        certs.remove()


async def _tls_accepts(dsn: Dsn) -> int:
    """The server's count of completed TLS handshakes, read over a connection of `dsn`'s own."""
    conn = await connect(dsn, None)
    try:
        async with conn.cursor() as cur:
            await cur.execute("SHOW GLOBAL STATUS LIKE 'Ssl_finished_accepts'")
            (_, value), = await cur.fetchall()
            return int(value)
    finally:
        conn.close()


async def _session(dsn: Dsn) -> dict[str, str | None]:
    conn = await connect(dsn, None)
    try:
        async with conn.cursor() as cur:
            return await session_tls(cur)
    finally:
        conn.close()


def _run(tmp_path: Path, url: str, env: dict[str, str] | None = None) -> tuple[int, str, Path]:
    f = tmp_path / "tls.bench"
    f.write_text(SCENARIO)
    out = tmp_path / "tls.json"
    # PYTHONPATH: the workers start with `python -P` and would import the package the venv was installed
    # from, which in a second checkout (a git worktree) is not this code
    r = run_bench("run", str(f), "--headless", "--json", str(out),
                  env={"BENCH_TLS_DSN": url, "PYTHONPATH": str(ROOT), **(env or {})})
    return r.returncode, r.stderr, out


def test_the_machines_server_has_tls(tls_server: TlsServer) -> None:
    """What the other tests stand on: MariaDB built with a TLS library that took the certificate."""
    async def variables() -> dict[str, str]:
        conn = await connect(parse_dsn(tls_server.verify_ca()), None)
        try:
            async with conn.cursor() as cur:
                await cur.execute("SHOW GLOBAL VARIABLES WHERE Variable_name IN "
                                  "('have_ssl', 'version_ssl_library', 'require_secure_transport')")
                return {str(k): str(v) for k, v in await cur.fetchall()}
        finally:
            conn.close()

    v = asyncio.run(variables())
    assert v["have_ssl"] == "YES" and v["require_secure_transport"] == "ON"
    assert v["version_ssl_library"]  # e.g. OpenSSL 3.0.x


@pytest.mark.parametrize("executor", EXECUTORS)
def test_a_run_with_verify_ca_is_encrypted(tls_server: TlsServer, executor: str, tmp_path: Path) -> None:
    url = tls_server.verify_ca()
    dsn = parse_dsn(url)
    before = asyncio.run(_tls_accepts(dsn))
    code, err, out = _run(tmp_path, url, EXECUTORS[executor])
    assert code == 0, err
    after = asyncio.run(_tls_accepts(dsn))
    doc = json.loads(out.read_text())
    jsonschema.validate(doc, SCHEMA)
    assert doc["status"] == "completed" and doc["summary"]["count"] > 0
    assert doc["executor"] == ("libmariadb" if executor == "default" else "driver")
    # The server takes TCP connections over TLS only, so a run that measured anything was encrypted;
    # its handshakes prove it was the run's users that made them: one each at least, besides the
    # run's own (facts, settings, load) and the one that read `before`.
    assert after - before >= USERS + 1
    tls = doc["server"]["tls"]
    assert tls["mode"] == "VERIFY_CA" and tls["cipher"] and tls["version"].startswith("TLS")
    # and a connection made as the run's are shows the server's word for it
    assert asyncio.run(_session(dsn))["cipher"]
    assert tls_server.server.dsn is not None and tls_server.server.dsn.password not in err + out.read_text()


def test_required_without_a_ca_encrypts(tls_server: TlsServer, tmp_path: Path) -> None:
    url = tls_server.url(**{"ssl-mode": "required"})
    assert asyncio.run(_session(parse_dsn(url)))["cipher"]
    code, err, out = _run(tmp_path, url, EXECUTORS["asyncmy"])
    assert code == 0, err
    assert json.loads(out.read_text())["server"]["tls"]["mode"] == "REQUIRED"


def test_verify_identity_checks_the_name(tls_server: TlsServer) -> None:
    """The certificate names 127.0.0.1 and localhost: both pass."""
    for host in ("127.0.0.1", "localhost"):
        url = tls_server.url(**{"ssl-mode": "VERIFY_IDENTITY", "ssl-ca": str(tls_server.certs.ca)})
        url = url.replace("@127.0.0.1:", f"@{host}:")
        assert asyncio.run(_session(parse_dsn(url)))["cipher"], host


def test_a_client_certificate_is_presented(tls_server: TlsServer) -> None:
    """An account that requires a certificate signed by the server's CA (REQUIRE X509) gets in with
    ssl-cert and ssl-key, and not without them."""
    c = tls_server.certs
    root = parse_dsn(tls_server.verify_ca())
    password = "cert-user-pw"

    async def sql(statement: str) -> None:
        conn = await connect(root, None)
        try:
            async with conn.cursor() as cur:
                await cur.execute(statement)
        finally:
            conn.close()

    asyncio.run(sql(f"CREATE USER IF NOT EXISTS 'certified'@'127.0.0.1' IDENTIFIED BY '{password}' REQUIRE X509"))
    try:
        with_cert = replace(parse_dsn(tls_server.url(**{"ssl-mode": "VERIFY_CA", "ssl-ca": str(c.ca),
                                                         "ssl-cert": str(c.client_cert),
                                                         "ssl-key": str(c.client_key)})),
                            user="certified", password=password)
        assert asyncio.run(_session(with_cert))["cipher"]
        with pytest.raises(Exception, match="1045"):
            asyncio.run(_session(replace(root, user="certified", password=password)))
    finally:
        asyncio.run(sql("DROP USER IF EXISTS 'certified'@'127.0.0.1'"))


def test_without_tls_options_the_run_fails_and_says_what_to_add(tls_server: TlsServer, tmp_path: Path) -> None:
    code, err, out = _run(tmp_path, tls_server.url(), EXECUTORS["asyncmy"])
    assert code == 4, err
    assert "ssl-mode=REQUIRED" in err and "without TLS" in err
    assert "Traceback" not in err
    assert tls_server.server.dsn is not None and tls_server.server.dsn.password not in err


def test_a_study_on_a_tls_only_server_says_what_to_add(tls_server: TlsServer, tmp_path: Path) -> None:
    """`vary` on a server of one's own reads its variables first: refused there for want of TLS, the
    study says so as a run does, before anything is written."""
    f = tmp_path / "study.bench"
    f.write_text('scenario "tls study" {\n  target env("BENCH_TLS_DSN")\n'
                 '  workload sysbench oltp_point_select { tables = 1  table_size = 100 }\n'
                 '  vary { innodb_flush_log_at_trx_commit = [1, 2] }\n  users 1  duration 2s\n'
                 f'  output "{tmp_path}/out/"\n}}\n')
    r = run_bench("run", str(f), "--headless", env={"BENCH_TLS_DSN": tls_server.url(), "PYTHONPATH": str(ROOT)})
    assert r.returncode == 4, r.stderr
    assert "ssl-mode=REQUIRED" in r.stderr and "without TLS" in r.stderr
    assert "Traceback" not in r.stderr and not (tmp_path / "out").exists()


def test_a_wrong_ca_fails_and_names_it(tls_server: TlsServer, tmp_path: Path) -> None:
    other = str(tls_server.certs.other_ca)
    code, err, _ = _run(tmp_path, tls_server.url(**{"ssl-mode": "VERIFY_CA", "ssl-ca": other}), EXECUTORS["asyncmy"])
    assert code == 4, err
    assert "not signed by the CA" in err and other in err
    assert "Traceback" not in err
    assert tls_server.server.dsn is not None and tls_server.server.dsn.password not in err


def test_a_missing_ca_file_is_a_bad_scenario_naming_the_option(tls_server: TlsServer, tmp_path: Path) -> None:
    missing = str(tmp_path / "no-such-ca.pem")
    code, err, _ = _run(tmp_path, tls_server.url(**{"ssl-mode": "VERIFY_CA", "ssl-ca": missing}))
    assert code == 2, err
    assert f"ssl-ca={missing}" in err and "does not exist" in err
    assert tls_server.server.dsn is not None and tls_server.server.dsn.password not in err


def test_tls_options_on_a_server_without_tls_say_so(tmp_path: Path) -> None:
    """A throwaway server started without a certificate, whatever BENCH_DSN names."""
    srv = EmbeddedServer()
    dsn = asyncio.run(srv.start())
    try:
        assert not asyncio.run(_has_tls(dsn))
        code, err, _ = _run(tmp_path, srv.url() + "?ssl-mode=REQUIRED", EXECUTORS["asyncmy"])
    finally:
        srv.stop()
    assert code == 4, err
    assert "TLS handshake failed" in err and "have_ssl" in err


async def _has_tls(dsn: Dsn) -> bool:
    conn = await connect(dsn, None)
    try:
        async with conn.cursor() as cur:
            await cur.execute("SELECT @@have_ssl")
            (value,), = await cur.fetchall()
            return str(value) == "YES"
    finally:
        conn.close()


def test_certificates_are_kept_private(tls_server: TlsServer) -> None:
    assert os.stat(tls_server.certs.directory).st_mode & 0o777 == 0o700


def _native_user(url: str) -> NativeUser:
    prog = executor.program(Transactions((Transaction((StatementStep(1, 1, (Draw("const", (1,)),), (Execute(
        ("SELECT ?",), ((0, 0),)),)),), False),)), (1.0,))
    return NativeUser(prog, new_counts(1), 1, executor.options(parse_dsn(url), 10))


SESSION_CIPHER = "SELECT VARIABLE_VALUE FROM information_schema.SESSION_STATUS WHERE VARIABLE_NAME = 'SSL_CIPHER'"


@pytest.mark.parametrize("mode", ["VERIFY_CA", "VERIFY_IDENTITY", "REQUIRED"])
async def test_the_c_executor_s_own_connections_are_encrypted(tls_server: TlsServer, mode: str) -> None:
    """The C executor opens its connections with libmariadb: the server's Ssl_cipher for that very
    session proves TLS, in every mode that asks for it."""
    options = {"ssl-mode": mode} | ({"ssl-ca": str(tls_server.certs.ca)} if mode != "REQUIRED" else {})
    u = _native_user(tls_server.url(**options))
    try:
        outcome, code, message = await u.connect()
        assert outcome == 0, (code, message)
        assert u.core.cipher and u.core.query_value(SESSION_CIPHER) == u.core.cipher
        u.stop = False
        done = asyncio.get_running_loop().call_later(0.3, setattr, u, "stop", True)
        assert (await u.run(False))[0] == 0 and u.completed > 0
        done.cancel()
    finally:
        u.close()


async def test_the_c_executor_refuses_a_wrong_ca_and_plain_connections(tls_server: TlsServer) -> None:
    other = str(tls_server.certs.other_ca)
    u = _native_user(tls_server.url(**{"ssl-mode": "VERIFY_CA", "ssl-ca": other}))
    try:
        outcome, code, message = await u.connect()
        assert outcome != 0 and code >= 2000 and ("certificate" in message.lower() or "ssl" in message.lower())
    finally:
        u.close()
    u = _native_user(tls_server.url())
    try:
        outcome, code, message = await u.connect()
        assert outcome != 0 and code == 1045, message  # the server refuses the account without TLS
    finally:
        u.close()


async def test_the_c_executor_compresses_when_asked(tls_server: TlsServer) -> None:
    u = _native_user(tls_server.url(**{"ssl-mode": "REQUIRED", "compress": "1"}))
    try:
        assert (await u.connect())[0] == 0
        assert u.core.query_value("SELECT VARIABLE_VALUE FROM information_schema.SESSION_STATUS "
                                  "WHERE VARIABLE_NAME = 'COMPRESSION'") == "ON"
    finally:
        u.close()
