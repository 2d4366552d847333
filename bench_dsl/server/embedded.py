"""The database server under test: an embedded throwaway one, or a remote one by address.
Connecting, server facts (version, variables, pid) and applying `server { }` settings.

A throwaway server's data directory is a copy of one installed once per server binary and kept
in the user's cache (template.py); its root password is set, at random, after it starts."""

from __future__ import annotations

import asyncio
import os
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

import asyncmy
import psutil

from bench_dsl.core.dsn import Dsn
from bench_dsl.core.errors import TargetError, error_reason
from bench_dsl.language.model import ServerSetting
from bench_dsl.language.server_settings import log_bin_base, refusal
from bench_dsl.server.template import make_data_dir, template_key

STALE_PREFIX = "bench-dsl-server-"
OWNER_FILE = "owner.pid"
# the bytes a Unix socket's path may have (sockaddr_un.sun_path, less its NUL): a server in a deep
# directory (server.dir on a long mount path) gets its socket in a short one of its own instead
SOCKET_PATH_MAX = 107
# the redo log a MariaDB install makes (small, and a size every version takes): the server resizes it
# at its first start to its innodb_log_file_size, so the template is ~20 MB to copy, not ~110
INSTALL_LOG_SIZE = "4M"


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


def _run_install(cmd: list[str]) -> None:
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise TargetError(f"could not initialise a throwaway data directory ({' '.join(cmd[:1])}):\n"
                          + (r.stderr or r.stdout)[-2000:])


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
    socket_dir: Path | None = None  # the short directory of its socket, when its own was too deep
    socket: str | None = None  # its socket's path, once started
    # how its data directory was made: "template" (a copy), "new template" (built, then copied),
    # "install" (in its own directory: MySQL, or no private cache to keep a template in)
    data_from: str = ""

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
        sock = self.socket = self._socket_path()
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
        root = ["--user=root"] if os.geteuid() == 0 else []
        if installer is None:
            # MySQL 5.7+ initialises itself, and its directory is its own: a server_uuid (auto.cnf)
            # and TLS keys made for it, never to be shared by two servers, so it has no template
            assert self.basedir is not None
            _run_install([mysqld, "--no-defaults", "--initialize-insecure", f"--datadir={datadir}",
                          f"--tmpdir={self.basedir}", *root])
            self.data_from = "install"
            return
        basedir = Path(mysqld).resolve().parent.parent

        def command(data: Path, tmp: Path) -> list[str]:
            # the bootstrap's temporary tables in a directory of the server's (or the template's)
            # own, not in the shared temp dir, where another process may remove them mid-install
            # (seen once in the suite: 'Error on delete of /tmp/#sql-temptable-...') or read them.
            # A small redo log: the server makes its own at its first start, at the size its
            # settings give (template.py says why)
            return [installer, "--no-defaults", f"--datadir={data}", "--auth-root-authentication-method=normal",
                    "--skip-test-db", f"--tmpdir={tmp}", *root, f"--basedir={basedir}",
                    f"--innodb-log-file-size={INSTALL_LOG_SIZE}"]

        # what the installed directory depends on: the binaries, the SQL the installer runs, the command
        sql = sorted(str(f) for d in ("mysql", "mariadb") for f in (basedir / "share" / d).glob("*.sql"))
        key = template_key([mysqld, installer, *sql], command(Path("<datadir>"), Path("<tmpdir>")))
        try:
            self.data_from = make_data_dir(datadir, key, lambda data, tmp: _run_install(command(data, tmp)))
        except OSError as exc:  # writing the copy (the disk full): what the installer would have met
            raise TargetError(f"could not make a throwaway data directory in {datadir.parent}: "
                              f"{exc.strerror or exc}") from None

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

    def _socket_path(self) -> str:
        """The socket in the server's directory, or, when that path is too long for a socket, in a
        short directory of the temp dir: mode 0700 as the server's own, and named and owned like a
        server's, so that one left by a killed bench-dsl is removed as a stale server's is."""
        assert self.basedir is not None
        sock = self.basedir / "mysqld.sock"
        if len(os.fsencode(sock)) <= SOCKET_PATH_MAX:
            return str(sock)
        short = tempfile.gettempdir()
        if len(os.fsencode(short)) > SOCKET_PATH_MAX - 40:  # a deep TMPDIR: /tmp then
            short = "/tmp"
        self.socket_dir = Path(tempfile.mkdtemp(prefix=STALE_PREFIX, dir=short))
        (self.socket_dir / OWNER_FILE).write_text(str(os.getpid()))
        return str(self.socket_dir / "mysqld.sock")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.socket_dir is not None:
            shutil.rmtree(self.socket_dir, ignore_errors=True)
        if self.basedir is not None and not self.keep:
            shutil.rmtree(self.basedir, ignore_errors=True)
        elif self.basedir is not None:  # kept (--keep-server): no longer a stale one for the next start
            (self.basedir / OWNER_FILE).unlink(missing_ok=True)


