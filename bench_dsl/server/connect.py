"""Connections to a server, on asyncmy: the one way the coordinator, the workloads and the checks
connect, and the explanation of a connection that fails (TLS, access, an unreachable address)."""

from __future__ import annotations

import contextlib
import logging
from dataclasses import replace

import asyncmy

from bench_dsl.core.dsn import IDENTITY_SQL, Dsn, ServerIdentity, quote_identifier
from bench_dsl.core.errors import TargetError
from bench_dsl.core.tls import explain_failure, ssl_context

# asyncmy logs every server warning (e.g. DROP TABLE IF EXISTS of a missing table) at WARNING.
logging.getLogger("asyncmy").setLevel(logging.ERROR)


class OtherServer(TargetError):
    """A connection reached another server than the one the run measures (Dsn.reaches)."""


def other_server(dsn: Dsn, found: str) -> str:
    """What is said of a connection that reached another server: one wording, for asyncmy's
    connections and the C executor's."""
    return (f"{dsn.redacted()} reached the server {found}, not the one this run measures "
            f"({dsn.reaches}): a connection must reach the server it names")


async def connect(dsn: Dsn, database: str | None = None, autocommit: bool = True,
                  timeout: float = 10) -> asyncmy.Connection:
    """A connection to `dsn`; when the address says which server it must reach (`reaches`), one
    that reached another raises OtherServer."""
    conn = await asyncmy.connect(**dsn.connect_args(), database=database, autocommit=autocommit,
                                 connect_timeout=timeout, ssl=ssl_context(dsn))
    if dsn.reaches is not None:
        try:
            async with conn.cursor() as cur:
                found = await identify(cur)
        except BaseException:
            conn.close()
            raise
        if found != dsn.reaches:
            conn.close()
            raise OtherServer(other_server(dsn, str(found)))
    return conn


async def identify(cur: asyncmy.cursors.Cursor) -> ServerIdentity:
    """The server at the other end of this connection, as it names itself."""
    await cur.execute(IDENTITY_SQL)
    return ServerIdentity.from_row(await cur.fetchone())


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
    except TargetError:  # OtherServer says it all
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


async def session_tls(cur: asyncmy.cursors.Cursor) -> dict[str, str | None]:
    """The cipher and protocol of this session's TLS, as the server sees it: the proof a connection is
    encrypted (the client's word is not). None for each when it is not."""
    await cur.execute("SHOW SESSION STATUS WHERE Variable_name IN ('Ssl_cipher', 'Ssl_version')")
    status = {str(k).lower(): str(v) for k, v in await cur.fetchall()}
    return {"cipher": status.get("ssl_cipher") or None, "version": status.get("ssl_version") or None}


def driver_message(exc: BaseException) -> str:
    """The server's or the driver's message of a failure, without its code."""
    args: tuple[object, ...] = tuple(getattr(exc, "args", ()))
    return str(args[1] if len(args) > 1 else (args[0] if args else exc))


def is_connected(conn: asyncmy.Connection) -> bool:
    try:
        return bool(conn.connected)
    except Exception:
        return False


def close_quietly(conn: asyncmy.Connection) -> None:
    """Close, whatever state the connection is in (a lost one raises)."""
    with contextlib.suppress(Exception):
        conn.close()
