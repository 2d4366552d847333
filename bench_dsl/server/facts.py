"""What a server is (its version, its host's cores, its pid when local) and what its settings
became once applied: the facts a result records of the server it measured."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from pathlib import Path

import asyncmy
import psutil

from bench_dsl.core.dsn import Dsn, ServerIdentity
from bench_dsl.core.errors import error_reason
from bench_dsl.core.server_info import AppliedSetting
from bench_dsl.language.model import ServerSetting
from bench_dsl.language.server_settings import reads_as
from bench_dsl.server.connect import connect, identify, session_tls

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


@dataclass
class ServerFacts:
    version: str
    variables: dict[str, str]
    pid: int | None
    local: bool
    identity: ServerIdentity  # what every connection of the run must reach (Dsn.reaches)
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
            await cur.execute("SELECT @@pid_file")
            (pid_file,) = await cur.fetchone()
            identity = await identify(cur)
            tls = await session_tls(cur)
    finally:
        conn.close()
    pid = embedded_pid if embedded_pid is not None else _local_pid(dsn, str(pid_file), identity.port)
    return ServerFacts(variables.get("version", "?"), variables, pid, pid is not None, identity,
                       {"mode": dsn.ssl_mode, **tls})


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
