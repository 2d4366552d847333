"""The database server under test: an embedded throwaway one, or a remote one by address.
Connecting, server facts (version, variables, pid) and applying `server { }` settings."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from urllib.parse import quote

import asyncmy
import psutil

from bench_dsl.core.dsn import Dsn, quote_identifier
from bench_dsl.core.errors import TargetError, error_reason
from bench_dsl.core.tls import explain_failure, ssl_context
from bench_dsl.language.model import ServerSetting
from bench_dsl.language.server_settings import log_bin_base, reads_as, refusal

# The variables that decide how a MySQL server performs: recorded with every result.
REPORTED_VARIABLES = (
    "version", "version_comment", "innodb_buffer_pool_size", "innodb_buffer_pool_instances",
    "innodb_flush_method", "innodb_flush_log_at_trx_commit", "innodb_log_file_size",
    "innodb_log_files_in_group", "innodb_log_buffer_size", "innodb_io_capacity", "innodb_io_capacity_max",
    "innodb_doublewrite", "innodb_page_cleaners", "innodb_adaptive_hash_index", "innodb_flush_neighbors",
    "innodb_thread_concurrency", "innodb_read_io_threads", "innodb_write_io_threads", "innodb_lru_scan_depth",
    "innodb_file_per_table", "sync_binlog", "log_bin", "binlog_format", "max_connections",
    "max_prepared_stmt_count", "transaction_isolation", "tx_isolation", "table_open_cache", "thread_handling",
    "performance_schema", "innodb_page_size",
)

# asyncmy logs every server warning (e.g. DROP TABLE IF EXISTS of a missing table) at WARNING.
logging.getLogger("asyncmy").setLevel(logging.ERROR)


STALE_PREFIX = "bench-dsl-server-"
OWNER_FILE = "owner.pid"


def remove_stale_servers(parent: str | None = None) -> list[Path]:
    """Throwaway servers' directories left by a bench-dsl that was killed (kill -9 gives it no time
    to clean up): ours by their name, and stale when the process named in their owner file is gone
    and no server runs from them. Returns what was removed."""
    removed = []
    for d in Path(parent or tempfile.gettempdir()).glob(STALE_PREFIX + "*"):
        try:
            if not d.is_dir() or d.is_symlink() or d.stat().st_uid != os.geteuid():
                continue
            owner = int((d / OWNER_FILE).read_text().strip())
        except (OSError, ValueError):
            continue  # not one we can tell is ours and dead (e.g. kept with --keep-server by an older version)
        if psutil.pid_exists(owner) or _server_running(d):
            continue
        shutil.rmtree(d, ignore_errors=True)
        removed.append(d)
    return removed


def _server_running(d: Path) -> bool:
    try:
        pid = int((d / "mysqld.pid").read_text().strip())
    except (OSError, ValueError):
        return False
    return psutil.pid_exists(pid)


def _die_with_parent() -> None:
    """In the child, before exec: SIGTERM when bench-dsl dies, even by kill -9, so that a throwaway
    server never outlives its run (Linux only; elsewhere the run's own cleanup must do)."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def find_binary(*names: str) -> str | None:
    for n in names:
        found = shutil.which(n) or next((str(p) for d in ("/usr/sbin", "/usr/local/sbin", "/usr/bin")
                                          if (p := Path(d) / n).exists()), None)
        if found:
            return found
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _size_arg(s: ServerSetting) -> str:
    v = s.value
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    return f"--{s.name.replace('_', '-')}={v}"


@dataclass
class EmbeddedServer:
    """A throwaway mariadbd/mysqld in a temporary directory, on its own socket and free port."""

    settings: tuple[ServerSetting, ...] = ()
    keep: bool = False
    max_connections: int = 0
    basedir: Path | None = None
    process: subprocess.Popen[bytes] | None = None
    port: int = 0
    dsn: Dsn | None = None
    log: Path | None = None
    extra_args: list[str] = field(default_factory=list)
    parent: str | None = None  # the directory (the disk) its files go in; None: the temp dir
    # "alone"; "primary": binary log on (its replicas read it); "replica": a relay log, read-only
    role: str = "alone"
    server_id: int = 1

    async def start(self) -> Dsn:
        for s in self.settings:  # validation refuses them first; this keeps a caller of this class from it too
            if (why := refusal(s.name, s.value)) is not None:
                raise TargetError(f"the throwaway server does not take {s.name}: {why[0]}")
        remove_stale_servers(self.parent)
        mysqld = find_binary("mariadbd", "mysqld")
        if mysqld is None:
            raise TargetError(
                "no target was given, so bench-dsl starts a throwaway server, but no mariadbd or mysqld "
                "was found.\n  Install one:  sudo apt-get install mariadb-server   (or run `make run`, "
                "which does)\n  or give a server:  target \"mysql://user:password@host:3306/db\" in the "
                "file, or --target")
        # mkdtemp: mode 0700, so the socket, the data and the files inside are ours alone
        try:
            self.basedir = Path(tempfile.mkdtemp(prefix=STALE_PREFIX, dir=self.parent))
        except OSError as exc:
            raise TargetError(f"cannot make the throwaway server's directory in {self.parent}: "
                              f"{exc.strerror}") from None
        (self.basedir / OWNER_FILE).write_text(str(os.getpid()))
        files = self.basedir / "files"  # where SELECT ... INTO OUTFILE and LOAD DATA may reach, and nowhere else
        files.mkdir(mode=0o700)
        datadir = self.basedir / "data"
        self.log = self.basedir / "error.log"
        await asyncio.to_thread(self._install, mysqld, datadir)
        self.port = _free_port()
        sock = str(self.basedir / "mysqld.sock")
        args = [mysqld, "--no-defaults", f"--datadir={datadir}", f"--socket={sock}", f"--port={self.port}",
                "--bind-address=127.0.0.1", f"--pid-file={self.basedir / 'mysqld.pid'}",
                f"--log-error={self.log}", "--skip-name-resolve",
                f"--tmpdir={self.basedir}", f"--secure-file-priv={files}", f"--server-id={self.server_id}"]
        # the binary logs, in the server's own directory: a primary's (its replicas read them) or
        # those log_bin asks for; log_bin = OFF leaves a primary's on (validation refuses the pair)
        asked = next((s.value for s in self.settings if s.name == "log_bin"), None)
        base = log_bin_base(asked) if asked is not None else None
        if self.role == "primary" or base is not None:
            args.append(f"--log-bin={self.basedir / (base or 'binlog')}")
            args += ["--binlog-format=ROW"] if self.role == "primary" else []
        else:
            args.append("--skip-log-bin")
        if self.role == "replica":
            args += [f"--relay-log={self.basedir / 'relay'}", "--read-only=ON", "--skip-slave-start"]
        if os.geteuid() == 0:
            args.append("--user=root")
        names = {s.name for s in self.settings}
        if "max_connections" not in names and self.max_connections:
            args.append(f"--max-connections={max(151, self.max_connections)}")
        if "max_prepared_stmt_count" not in names:
            args.append("--max-prepared-stmt-count=1048576")
        args += [_size_arg(s) for s in self.settings if s.name != "log_bin"] + self.extra_args
        # the server's start must be here and now (its pid is checked below); Popen itself returns at once
        self.process = subprocess.Popen(args,  # noqa: ASYNC220 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL, start_new_session=True,
                                        preexec_fn=_die_with_parent)
        # root's password: random, for this server's life; it reaches the workers through their pipes,
        # never an argument or a file, and every output redacts it
        password = secrets.token_urlsafe(24)
        self.dsn = Dsn("127.0.0.1", self.port, "root", password, "benchdsl", None)
        deadline = time.monotonic() + 60
        while True:
            if self.process.poll() is not None:
                tail = self._log_tail()
                self.stop()
                raise TargetError(f"the throwaway server did not start (exit {self.process.returncode}):\n{tail}")
            try:
                conn = await asyncmy.connect(unix_socket=sock, user="root", password="", connect_timeout=2)
            except Exception:
                if time.monotonic() > deadline:
                    tail = self._log_tail()
                    self.stop()
                    raise TargetError(f"the throwaway server did not answer within 60 s:\n{tail}") from None
                await asyncio.sleep(0.02)
                continue
            try:
                async with conn.cursor() as cur:
                    # every account the installer made has no password (root@localhost, @127.0.0.1, @::1,
                    # @hostname): the two bench-dsl uses get the run's own, the others go, so that the
                    # TCP port admits bench-dsl alone
                    await cur.execute("SELECT user, host FROM mysql.user WHERE user <> 'mariadb.sys' "
                                      "AND user NOT LIKE 'mysql.%'")  # the servers' own system accounts
                    for user, host in await cur.fetchall():
                        if (user, host) in (("root", "localhost"), ("root", "127.0.0.1")):
                            await cur.execute("ALTER USER %s@%s IDENTIFIED BY %s", (user, host, password))
                            continue
                        try:
                            await cur.execute("DROP USER %s@%s", (user, host))
                        except asyncmy.errors.MySQLError:  # MariaDB under skip-name-resolve: root@hostname
                            await cur.execute("DELETE FROM mysql.global_priv WHERE user = %s AND host = %s",
                                              (user, host))
                    await cur.execute("FLUSH PRIVILEGES")
                    await cur.execute("CREATE DATABASE IF NOT EXISTS benchdsl")
            except asyncmy.errors.MySQLError as exc:
                conn.close()
                self.stop()
                raise TargetError(f"could not secure the throwaway server: {error_reason(exc)}") from None
            conn.close()
            return self.dsn

    def url(self) -> str:
        """The server's address with its password, for a test or the benchmark to hand to a client
        through the environment (BENCH_DSN), never on a command line."""
        assert self.dsn is not None
        return f"mysql://root:{quote(self.dsn.password, safe='')}@127.0.0.1:{self.port}/{self.dsn.database}"

    def _install(self, mysqld: str, datadir: Path) -> None:
        installer = find_binary("mariadb-install-db", "mysql_install_db")
        # the bootstrap's temporary tables in the server's own directory, as the server's are, not
        # in the shared temp dir, where another process may remove them mid-install (seen once in
        # the suite: 'Error on delete of /tmp/#sql-temptable-...') or read them
        common = [f"--tmpdir={self.basedir}", *(["--user=root"] if os.geteuid() == 0 else [])]
        if installer is not None:
            cmd = [installer, "--no-defaults", f"--datadir={datadir}", "--auth-root-authentication-method=normal",
                   "--skip-test-db", *common]
            basedir = Path(mysqld).resolve().parent.parent
            cmd.append(f"--basedir={basedir}")
        else:  # MySQL 5.7+ initialises itself
            cmd = [mysqld, "--no-defaults", "--initialize-insecure", f"--datadir={datadir}", *common]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            raise TargetError(f"could not initialise a throwaway data directory ({' '.join(cmd[:1])}):\n"
                              + (r.stderr or r.stdout)[-2000:])

    def _log_tail(self) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-15:]) if self.log else ""
        except OSError:
            return ""

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process else None

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.basedir is not None and not self.keep:
            shutil.rmtree(self.basedir, ignore_errors=True)
        elif self.basedir is not None:  # kept (--keep-server): no longer a stale one for the next start
            (self.basedir / OWNER_FILE).unlink(missing_ok=True)


async def connect(dsn: Dsn, database: str | None = None, autocommit: bool = True,
                  timeout: float = 10) -> asyncmy.Connection:
    return await asyncmy.connect(**dsn.connect_args(), database=database, autocommit=autocommit,
                                 connect_timeout=timeout, ssl=ssl_context(dsn))


async def connect_failure(dsn: Dsn, exc: BaseException) -> str:
    """Why a connection to `dsn` failed, as a person reads it (bench_dsl/core/tls.py tells TLS causes)."""
    return await explain_failure(dsn, exc, _tls_admitted)


async def _tls_admitted(dsn: Dsn) -> bool:
    """Whether the server admits this account over TLS, having refused it without: one connection,
    encrypted and unverified, as the mysql client's default (PREFERRED) would have made, closed at
    once. It tells "TLS only" apart from a wrong password, which MariaDB reports alike."""
    try:
        conn = await connect(replace(dsn, ssl_mode="REQUIRED"), None, timeout=5)
    except Exception:
        return False
    conn.close()
    return True


async def connect_explained(dsn: Dsn, database: str | None = None, timeout: float = 10) -> asyncmy.Connection:
    """`connect` for a first contact with the target: a failure is a TargetError that says why as a
    person reads it (a TLS-only server, a wrong CA, a refused password), not the driver's error.
    Connections that retry on their own (counters, replication probes) use `connect`."""
    try:
        return await connect(dsn, database, timeout=timeout)
    except TargetError:
        raise
    except Exception as exc:
        raise TargetError(f"cannot reach {dsn.redacted()}: {await connect_failure(dsn, exc)}") from None


async def ensure_database(dsn: Dsn) -> None:
    conn = await connect_explained(dsn, None, timeout=5)
    try:
        async with conn.cursor() as cur:
            await cur.execute(f"CREATE DATABASE IF NOT EXISTS {quote_identifier(dsn.database)}")
    finally:
        conn.close()


@dataclass
class ServerFacts:
    version: str
    variables: dict[str, str]
    pid: int | None
    local: bool
    # the result's server.tls: the mode asked for, and the cipher and protocol the server reports for
    # one connection made as the run's are (null when it is not encrypted)
    tls: dict[str, str | None] = field(default_factory=dict)


async def facts(dsn: Dsn, embedded_pid: int | None) -> ServerFacts:
    conn = await connect(dsn, dsn.database)
    try:
        async with conn.cursor() as cur:
            names = ",".join(f"'{n}'" for n in REPORTED_VARIABLES)
            await cur.execute(f"SHOW GLOBAL VARIABLES WHERE Variable_name IN ({names})")
            variables = {str(k): str(v) for k, v in await cur.fetchall()}
            await cur.execute("SELECT @@pid_file, @@port")
            pid_file, port = await cur.fetchone()
            tls = await session_tls(cur)
    finally:
        conn.close()
    pid = embedded_pid if embedded_pid is not None else _local_pid(dsn, str(pid_file), int(port))
    return ServerFacts(variables.get("version", "?"), variables, pid, pid is not None,
                       {"mode": dsn.ssl_mode, **tls})


async def session_tls(cur: asyncmy.cursors.Cursor) -> dict[str, str | None]:
    """The cipher and protocol of this session's TLS, as the server sees it: the proof a connection is
    encrypted (the client's word is not). None for each when it is not."""
    await cur.execute("SHOW SESSION STATUS WHERE Variable_name IN ('Ssl_cipher', 'Ssl_version')")
    status = {str(k).lower(): str(v) for k, v in await cur.fetchall()}
    return {"cipher": status.get("ssl_cipher") or None, "version": status.get("ssl_version") or None}


def _local_pid(dsn: Dsn, pid_file: str, port: int) -> int | None:
    """The server's pid when it runs on this machine, so that cpu(server) can be measured."""
    if dsn.socket is None and dsn.host not in ("127.0.0.1", "localhost", "::1"):
        return None
    with contextlib.suppress(OSError, ValueError):
        pid = int(Path(pid_file).read_text().strip())
        if psutil.pid_exists(pid) and any(n in psutil.Process(pid).name() for n in ("mysqld", "mariadbd")):
            return pid
    with contextlib.suppress(psutil.Error, OSError):
        for c in psutil.net_connections(kind="tcp"):
            if c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port == port and c.pid:
                return int(c.pid)
    return None


@dataclass
class AppliedSetting:
    name: str
    requested: str
    before: str | None
    after: str | None
    applied: bool
    note: str

    def to_json(self) -> dict[str, object]:
        return {"name": self.name, "requested": self.requested, "before": self.before, "after": self.after,
                "applied": self.applied, "note": self.note}


def _same(requested: int | float | str, actual: str | None) -> bool:
    if actual is None:
        return False
    if isinstance(requested, (int, float)) and actual.upper() in ("ON", "OFF"):  # a boolean given as 1 or 0
        return requested == (1 if actual.upper() == "ON" else 0)
    if isinstance(requested, (int, float)):
        try:
            return float(actual) == float(requested)
        except ValueError:
            return False
    return str(requested).upper() == actual.upper() or (str(requested).upper(), actual.upper()) in (
        ("ON", "1"), ("OFF", "0"), ("1", "ON"), ("0", "OFF"))


async def apply_settings(dsn: Dsn, settings: tuple[ServerSetting, ...], embedded: bool) -> list[AppliedSetting]:
    """Embedded: the settings were given at start; check them. Remote: SET GLOBAL where dynamic,
    else check and report. Every outcome is recorded."""
    if not settings:
        return []
    out: list[AppliedSetting] = []
    conn = await connect(dsn, dsn.database)
    try:
        async with conn.cursor() as cur:
            for s in settings:
                await cur.execute("SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_VARIABLES "
                                  "WHERE VARIABLE_NAME = %s", (s.name.upper(),))
                row = await cur.fetchone()
                before = str(row[0]) if row else None
                if row is None:
                    out.append(AppliedSetting(s.name, s.text, None, None, False, "the server has no such variable"))
                    continue
                if _same(reads_as(s.name, s.value), before):
                    out.append(AppliedSetting(s.name, s.text, before, before, True,
                                              "set at server start" if embedded else "already set"))
                    continue
                note = ""
                try:
                    # The name was checked against the server's own list above; the value is bound.
                    await cur.execute(f"SET GLOBAL {s.name} = %s", (s.value,))
                    note = "SET GLOBAL"
                except asyncmy.errors.MySQLError as exc:
                    note = f"not applied: {error_reason(exc)}"
                await cur.execute("SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_VARIABLES "
                                  "WHERE VARIABLE_NAME = %s", (s.name.upper(),))
                row = await cur.fetchone()
                after = str(row[0]) if row else None
                ok = _same(reads_as(s.name, s.value), after)
                if not ok and note == "SET GLOBAL":
                    note = f"SET GLOBAL accepted, but the server reports {after}"
                out.append(AppliedSetting(s.name, s.text, before, after, ok, note))
    finally:
        conn.close()
    return out
