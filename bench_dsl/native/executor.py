"""The C executor's Python side: a workload's statements (statements.py) flattened into the
Program its users' threads run, and one virtual user (`NativeUser`) whose connection, prepared
statements and transaction loop are _native.User's, on a thread of its own.

Connecting (libmariadb, with the address's TLS and compression options) and running both block,
so each runs on the user's own thread while the event loop awaits its outcome. Everything rare comes
back here: an error reply, a lost connection, the end; users.py applies the error policy, the same
one as for statements sent through asyncmy."""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from bench_dsl import native
from bench_dsl.core import limits, priority
from bench_dsl.core.dsn import IDENTITY_SQL, Dsn
from bench_dsl.language.statements import READS, Transactions

# what run() and connect() say (ELSEWHERE: connected to another server than the address must reach)
STOPPED, ERROR, LOST, DOUBT, PREPARE, ELSEWHERE = 0, 1, 2, 3, 4, 5

T = TypeVar("T")


def program(description: Transactions, weights: Sequence[float]) -> Any:
    """The _native.Program of a workload's transactions: statements numbered once each, every
    value of every step numbered over the whole program (the executor keeps one of each per user):
    a draw of several values is followed by "filled" slots, and a draw's arguments that name a value
    of its step name its slot."""
    assert native.compiled is not None
    sql: dict[str, int] = {}
    draws: list[tuple[object, ...]] = []
    transactions = []
    for t in description.transactions:
        steps = []
        base = len(draws)
        for s in t.steps:
            base = len(draws)
            first = []  # the slot of each draw
            for d in s.draws:
                reads = READS.get(d.kind, ())
                first.append(len(draws))
                draws.append((d.kind, *(base + a if k in reads and isinstance(a, int) else a
                                        for k, a in enumerate(d.args))))
                draws += [("filled",)] * (d.width - 1)
            executes = tuple((tuple(sql.setdefault(q, len(sql)) for q in e.sql),
                              tuple((base + k, plus) for k, plus in e.params), e.outcome,
                              tuple((base + c.value, c.kind, c.column) for c in e.captures),
                              -1 if e.when is None else base + e.when) for e in s.executes)
            steps.append((s.count, s.tables, tuple(first), executes))
        keep = None if t.keep is None else (base + t.keep[0], base + t.keep[1], t.keep[2])
        transactions.append((t.explicit, tuple(steps), keep))
    pauses = [(p.keying_s, p.think_mean_s, p.think_max_s) for p in description.pauses] or None
    return native.compiled.Program(list(sql), draws, transactions, [float(w) for w in weights], pauses,
                                   description.autocommit)


def charset(description: Transactions) -> str | None:
    """The connection's character set: libmariadb's default (latin1), as sysbench's, unless a
    statement or a value holds text beyond ASCII, which utf8mb4 carries. Results are never read,
    so a character set only changes what the server converts: utf8mb4 with latin1 tables (the
    throwaway server's default) cost the server 6% more CPU per point select and 7% of the
    throughput (16 users, 3 alternated rounds: 12.8 against 12.1 us)."""
    for t in description.transactions:
        for s in t.steps:
            texts = [q for e in s.executes for q in e.sql] + [a for d in s.draws for a in d.args if isinstance(a, str)]
            if not all(text.isascii() for text in texts):
                return "utf8mb4"
    return None


def options(dsn: Dsn, timeout: float, description: Transactions | None = None) -> dict[str, object]:
    """What _native.User connects with: the address, its TLS and compression options, the
    character set the description's text needs, and the server it must reach."""
    reaches = dsn.reaches
    return {"identity_sql": None if reaches is None else IDENTITY_SQL,
            "identity": None if reaches is None else reaches.text(),
            "charset": None if description is None else charset(description),
            "host": dsn.host, "port": dsn.port, "user": dsn.user, "password": dsn.password,
            "database": dsn.database, "unix_socket": dsn.socket, "connect_timeout": max(1, round(timeout)),
            "ssl_mode": dsn.ssl_mode, "ssl_ca": dsn.ssl_ca, "ssl_cert": dsn.ssl_cert, "ssl_key": dsn.ssl_key,
            "compress": int(dsn.compress)}


# a call handed to a user's thread: what to run, and where its answer goes
_Call = tuple[Callable[[], Any], asyncio.Future[Any], asyncio.AbstractEventLoop]

class NativeUser:
    """One virtual user on the C executor. `connect()` and `run()` are awaited one at a time;
    `stop` and `interrupt()` may be called at any time."""

    executor = "libmariadb"

    def __init__(self, prog: Any, counts: Any, seed: int, connect_options: dict[str, object],
                 schedule: Any = None, values: Sequence[int] = ()) -> None:
        """`schedule`: a _native.Schedule (open loop: each transaction waits for an arrival, its
        latency runs from the arrival's due time), or None (closed loop). `values`: the user's own,
        which the program's user(k) draws give."""
        assert native.compiled is not None
        self.core = native.compiled.User(prog, counts, seed & (1 << 64) - 1, connect_options, schedule=schedule,
                                         values=tuple(values))
        self._lock = threading.Lock()
        self._busy = False  # the thread is in the core
        self._closing = False
        self._calls: queue.SimpleQueue[_Call | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None

    @property
    def stop(self) -> bool:
        return bool(self.core.stop)

    @stop.setter
    def stop(self, value: bool) -> None:
        self.core.stop = value  # read by the user's thread before each transaction

    @property
    def tx(self) -> int:
        """The transaction type in flight (or last run): what a defect is reported under."""
        return int(self.core.tx)

    @property
    def completed(self) -> int:
        return int(self.core.completed)

    @property
    def attempt(self) -> int:
        return int(self.core.attempt)

    @attempt.setter
    def attempt(self, value: int) -> None:
        self.core.attempt = value

    async def connect(self) -> tuple[int, int, str]:
        """(outcome, code, message): 0 connected and prepared; ERROR: no connection; PREPARE: connected,
        but a statement cannot be prepared (the caller lets the driver meet it, under its transaction)."""
        return await self._on_thread(self.core.connect)

    async def run(self, retry: bool) -> tuple[int, int, str]:
        """Transactions until one fails or `stop`: (STOPPED | ERROR | LOST | DOUBT, code, message)."""
        return await self._on_thread(lambda: self.core.run(retry))

    def close(self) -> None:
        """Close the connection now, or, while the thread is in a call, wake it and close once it is out."""
        with self._lock:
            self._closing = True
            if self._busy:
                self.core.interrupt()
                return
        self.core.close()
        self._calls.put(None)  # the thread, if any, ends

    async def _on_thread(self, call: Callable[[], T]) -> T:
        """`call` on the user's own thread, started at its first call and kept: a thread started per
        call made the event loop wait for each start (Thread.start waits until the new thread runs),
        which, for hundreds of users starting at once beside a busy server, held the worker's loop
        for seconds (a report unanswered for 10 s at 256 users)."""
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[T] = loop.create_future()
        with self._lock:
            if self._closing:
                raise RuntimeError("the user is closing")
            self._busy = True
        self._calls.put((call, fut, loop))
        if self._thread is None:
            self._thread = threading.Thread(target=self._serve, name="bench-user", daemon=True)
            try:
                await loop.run_in_executor(None, limits.start, self._thread)  # its wait off the event loop
            except BaseException as exc:
                with self._lock:
                    self._busy = False
                if (short := limits.short(exc)) is not None:
                    raise short from exc
                raise
        return await fut

    def _serve(self) -> None:
        priority.as_user()  # below the thread that answers the coordinator (bench_dsl.core.priority)
        while (item := self._calls.get()) is not None:
            call, fut, loop = item
            try:
                result, error = call(), None
            except BaseException as exc:
                result, error = None, exc
            # out of the core before the caller hears: told first, it could send its next call (and
            # mark the thread busy) before this cleared the mark, and a close() that then found the
            # thread idle closed the core beside this thread's own close (a double free, a segfault)
            with self._lock:
                self._busy = False
                closing = self._closing
            if closing:
                self.core.close()
            if error is not None:
                _call_soon(loop, _set_exception, fut, error)
            else:
                _call_soon(loop, _set_result, fut, result)
            if closing:
                return


def _call_soon(loop: asyncio.AbstractEventLoop, fn: Callable[..., None], *args: object) -> None:
    try:
        loop.call_soon_threadsafe(fn, *args)
    except RuntimeError:  # the loop is closed: nobody waits for this any more
        pass


def _set_result(fut: asyncio.Future[Any], value: object) -> None:
    if not fut.done():
        fut.set_result(value)


def _set_exception(fut: asyncio.Future[Any], exc: BaseException) -> None:
    if not fut.done():
        fut.set_exception(exc)
