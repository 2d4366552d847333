"""Rows written from C (bench_dsl/native/src/load.c): the Bulk a workload's load is handed when the
C executor is built (bench_dsl.workloads.base.Bulk). Each call connects on its own, with a user's
options (the address, TLS, the server it must reach), in a thread: the event loop goes on meanwhile."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import asyncmy.errors

from bench_dsl import native
from bench_dsl.core.dsn import Dsn, quote_identifier
from bench_dsl.core.errors import TargetError
from bench_dsl.language.statements import Draw
from bench_dsl.native.executor import ELSEWHERE, STOPPED, options

CONNECT_TIMEOUT_S = 10


class NativeBulk:
    async def rows(self, dsn: Dsn, table: str, columns: Sequence[str], draws: Sequence[Draw], count: int,
                   seed: int) -> None:
        assert native.compiled is not None and len(columns) == len(draws)
        head = f"INSERT INTO {quote_identifier(table)} ({', '.join(map(quote_identifier, columns))}) VALUES "
        # utf8mb4 whatever the values: a choice's text may be beyond ASCII, and the library escapes
        # each value for the connection's character set
        connect = {**options(dsn, CONNECT_TIMEOUT_S), "charset": "utf8mb4"}
        outcome, code, message = await asyncio.to_thread(
            native.compiled.fill, connect, head, [(d.kind, *d.args) for d in draws], count, seed & (1 << 64) - 1)
        if outcome == ELSEWHERE:
            raise TargetError(f"loading {table} reached another server than {dsn.redacted()}: {message}")
        if outcome != STOPPED:
            # as the driver would have said it: the load's errors are told apart by their codes (stage.prepared)
            raise asyncmy.errors.OperationalError(code, message)


def bulk() -> NativeBulk | None:
    """The C loader, or None without the C executor (the workload then writes its rows itself)."""
    return NativeBulk() if native.compiled is not None else None
