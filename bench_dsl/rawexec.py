"""The hot path's own executor on the event loop: prepared statements sent straight on the
connection's socket, and their replies walked in the socket's callback, one virtual user's
transactions back to back. By default the users run on blocking.py's ThreadLoop instead (the same
packets, the same error policy, a thread per user: see there why); this one runs with
BENCH_RAWEXEC=loop (C core) or py (pure-Python core), and its packet encoding, reply walk and
error policy are what both share.

Why not asyncmy for this: a transaction through any coroutine driver costs a future, a task switch
and a chain of coroutine frames per statement. Measured on 2 cores against MariaDB 10.11 (point
selects, 16 connections): asyncmy's fastest path spends ~11 us of user CPU per query, this loop in
Python ~8 us, sysbench (C) ~5-7 us. On a machine where the client shares the cores with the server,
that difference is throughput taken from the server. So the work done once per reply and once per
transaction (walking the reply, stepping to the next statement, timing and counting, and for
sysbench's point selects drawing the key and encoding the packet) runs in C: `_rawcore.Core` is
RawLoop's base, and `_PyCore` here is its pure-Python twin, the reference the tests hold the C code
to (BENCH_RAWEXEC=py runs it). asyncmy still does everything else: connecting, authenticating,
preparing, text queries, and every workload that reads what it gets back (TPC-C).

Only what a load generator needs is implemented: the packets of packets.py (COM_STMT_EXECUTE, and
COM_QUERY for BEGIN/COMMIT/ROLLBACK), and replies read only far enough to know where they end and
whether they are errors (rows are not decoded: sysbench-like workloads never look at them). What a
user's transactions are comes from its workload, in the workload's terms (statements.py):
programs.py turns that into the Program this loop runs."""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable, Sequence
from itertools import accumulate
from typing import TYPE_CHECKING, Any, Protocol

from bench_dsl import native
from bench_dsl.mysql_errors import LOST_CONNECTION
from bench_dsl.packets import BEGIN, COMMIT, MAX_PAYLOAD, ROLLBACK, Statement, command, query

# BEGIN, COMMIT, ROLLBACK, Statement, command and query are packets.py's, importable from here too
__all__ = ["BEGIN", "COMMIT", "NEXT", "RECONNECT", "RETRY", "ROLLBACK", "CRawLoop", "Pick", "Program", "PyMix",
           "PyRawLoop", "RawLoop", "Recording", "Statement", "command", "mix", "query"]

# what the owner of the loop decides after an error
RETRY, NEXT, RECONNECT = 0, 1, 2
_NO_MORE_ATTEMPTS = 1 << 30

_now = time.perf_counter_ns


# A transaction as the executor sends it (programs.py builds it from the workload's statements):
# the packets, in order, one reply awaited after each.
# When the first is BEGIN, a failure inside it is followed by ROLLBACK before anything else.
Program = Callable[[int], Sequence[bytes]]
# The next transaction type; None: always 0
Pick = Callable[[], int] | None

# where the parser is inside a reply: at its first packet, among the column definitions, in the rows
_FIRST, _COLUMNS, _ROWS = 0, 1, 2
# a point select's reply is ~100 bytes: a thousand users should not each hold asyncmy's 256 KiB
# twice; the buffer doubles when a reply needs it
_FIRST_BUFFER = 16 * 1024
_MORE_RESULTS = 0x0008  # SERVER_MORE_RESULTS_EXISTS: another result of the same statement follows


_BYTES = [bytes((i,)) for i in range(256)]


def _leading(s: bytearray, value: int) -> int:
    """How many of the first bytes of `s` are `value`."""
    return len(s) - len(s.lstrip(_BYTES[value]))


def _skip_lenenc(b: bytearray, p: int) -> int:
    v = b[p]
    return p + (1 if v < 0xFB else 3 if v == 0xFC else 4 if v == 0xFD else 9)


def _status_at(b: bytearray, start: int, length: int) -> int:
    """Where the status flags of the OK or EOF packet at `start` are."""
    if length < 7 or (b[start + 1] < 0xFB and b[start + 2] < 0xFB):
        # a classic EOF (0xFE, warnings, status), or an OK whose affected rows and insert id
        # take one byte each: the usual case, without a call per field
        return start + 3
    p = _skip_lenenc(b, start + 1)
    return _skip_lenenc(b, p) if p < start + length else start + length  # past the packet: no flags


class PyMix:
    """The pure-Python twin of _rawcore.Mix: a transaction type drawn by weight with the user's
    random.Random (one `random()` a draw, compared with the running sum of the weights)."""

    def __init__(self, rng: random.Random, weights: Sequence[float]) -> None:
        self.random = rng.random
        self.cum = list(accumulate(weights))
        self.total = self.cum[-1]

    def __call__(self) -> int:
        x = self.random() * self.total
        for i, c in enumerate(self.cum):
            if x < c:
                return i
        return len(self.cum) - 1


def mix(rng: random.Random, weights: Sequence[float]) -> Pick:
    """What picks each transaction of a user: None when there is one type."""
    if len(weights) == 1:
        return None
    return native.core.Mix(rng, weights) if native.core is not None else PyMix(rng, weights)


class Recording(Protocol):
    def ok(self, i: int, micros: int, queries: int) -> None: ...


class _PyCore:
    """The pure-Python twin of _rawcore.Core: the reply parser and the step from one statement and
    one transaction to the next. Kept as the reference the C code is tested against, and run when
    BENCH_RAWEXEC=py. Attribute names are the C type's."""

    def __init__(self, write: Callable[[bytes], object], program: Program, pick: Pick,
                 record: Recording | None, deprecate_eof: bool) -> None:
        self.write = write
        self.program = program
        self.pick = pick
        self.record = record
        self.deprecate_eof = deprecate_eof  # no EOF packet between column definitions and rows
        self.buf = bytearray(_FIRST_BUFFER)
        self.view = memoryview(self.buf)
        self.end = 0  # bytes in buf
        self.pos = 0  # first byte not yet parsed
        self.state = _FIRST
        self.columns_left = 0
        self.stop = False
        self.tx = 0
        self.attempt = 0
        self.t0 = 0
        self.completed = 0
        self.packets: Sequence[bytes] = ()
        self.k = 0  # index of the packet whose reply is awaited
        self.failed: tuple[int, str] | None = None  # an error waiting for its ROLLBACK's reply

    if TYPE_CHECKING:  # _Control's, beside this in RawLoop's bases
        def _finish(self, reconnect: bool, exc: BaseException | None = None) -> None: ...
        def _broken(self, exc: BaseException) -> None: ...
        def _rollback_answered(self) -> None: ...
        def _reply_error(self, code: int, message: str) -> None: ...

    @property
    def buffer_size(self) -> int:
        return len(self.buf)

    def _next_transaction(self) -> None:
        if self.stop:
            self._finish(False)
            return
        self.tx = 0 if self.pick is None else self.pick()
        self.attempt = 0
        self.t0 = _now()
        self._start_attempt()

    def _start_attempt(self) -> None:
        packets = self.packets = self.program(self.tx)
        if not packets:
            raise ValueError("a transaction without statements")
        self.k = 0
        self.write(packets[0])

    def _reply_ok(self) -> None:
        if self.failed is not None:  # the ROLLBACK after a failed statement has been answered
            self._rollback_answered()
            return
        k = self.k = self.k + 1
        packets = self.packets
        if k < len(packets):
            self.write(packets[k])
            return
        if self.record is not None:
            self.record.ok(self.tx, (_now() - self.t0) // 1000, k)
        self.completed += 1
        self._next_transaction()

    def get_buffer(self, sizehint: int) -> memoryview:
        if not self.end:  # everything parsed (the usual case): the whole buffer
            return self.view
        room = len(self.buf) // 4  # read at least this much at a time
        if len(self.buf) - self.end < room:
            if self.pos:  # drop what has been parsed
                rest = self.end - self.pos
                self.buf[:rest] = self.buf[self.pos:self.end]
                self.pos, self.end = 0, rest
            if len(self.buf) - self.end < room:  # a large reply: a new buffer, twice the size
                bigger = bytearray(2 * len(self.buf))
                bigger[:self.end] = self.buf[:self.end]
                self.buf, self.view = bigger, memoryview(bigger)
        return self.view[self.end:]

    def buffer_updated(self, nbytes: int) -> None:
        self.end += nbytes
        try:
            self._parse()
        except Exception as exc:  # a defect here must reach the run, not the loop's log
            self._broken(exc)

    def _parse(self) -> None:
        # Every reply is walked packet by packet, but only the packets that decide something are
        # looked into: the first (OK, error, or a result set's column count) and the one after the
        # rows. Column definitions and rows are stepped over by their headers. This runs once per
        # packet received, so it is written for the interpreter: locals, no calls on the way.
        b = self.buf
        pos, end = self.pos, self.end
        state, left = self.state, self.columns_left
        while end - pos >= 4:
            length = b[pos] | (b[pos + 1] << 8) | (b[pos + 2] << 16)
            start = pos + 4
            nxt = start + length
            if nxt > end:
                break
            if not 0 < length < MAX_PAYLOAD:  # only a 16 MiB packet's continuation can be empty
                raise ValueError("a reply of 16 MiB or more: not supported by the raw executor")
            first = b[start]
            if state == _ROWS:
                if first < 0xFE:  # a row (binary rows start with 0x00)
                    stride = length + 4
                    n = (end - pos) // stride
                    if n > 2 and first == 0:
                        # Rows of one length (fixed-width columns, such as sysbench's CHAR(120)) are
                        # stepped over many at a time: every stride-th byte of the buffer is a
                        # length byte or a row's first byte exactly as long as the rows keep this
                        # length, and strided slices compare them in C.
                        lim = pos + n * stride
                        n = min(_leading(b[pos:lim:stride], b[pos]), _leading(b[pos + 1:lim:stride], b[pos + 1]),
                                _leading(b[pos + 2:lim:stride], b[pos + 2]), _leading(b[start:lim:stride], 0))
                        pos += n * stride
                    else:
                        pos = nxt
                    continue
            elif state == _COLUMNS:  # a column definition, or the EOF after them before DEPRECATE_EOF
                pos = nxt
                left -= 1
                if not left:
                    state = _ROWS
                continue
            pos = nxt
            if first == 0xFF:  # an error, first or instead of the end of the rows
                if length < 3:
                    raise ValueError("a malformed reply: an error packet without its code")
                code = b[start + 1] | (b[start + 2] << 8)
                text = bytes(b[start + 9:nxt]) if length > 9 and b[start + 3] == 0x23 else bytes(b[start + 3:nxt])
                state = _FIRST
                self._reply_error(code, text.decode("utf-8", "replace"))
                continue
            if state == _FIRST and first != 0x00 and first != 0xFE:  # a result set: its column count
                if first == 0xFB:
                    raise ValueError("LOCAL INFILE request: not supported by the raw executor")
                if first >= 0xFC and length < (3 if first == 0xFC else 4):
                    raise ValueError("a malformed reply: a column count cut short")
                left = first if first < 0xFB else int.from_bytes(b[start + 1:start + (3 if first == 0xFC else 4)], "little")
                if not self.deprecate_eof:
                    left += 1
                state = _COLUMNS
                continue
            # an OK, or the EOF / OK after the rows: the statement is done unless a result follows
            state = _FIRST
            p = _status_at(b, start, length)
            if p < nxt and b[p] & _MORE_RESULTS:
                continue
            self._reply_ok()
        if pos == end:
            self.pos = self.end = 0
        else:
            self.pos = pos
        self.state, self.columns_left = state, left


class _Control(asyncio.BufferedProtocol):
    """What RawLoop does in Python whichever core it runs on: starting and ending, the rare paths
    (an error reply, a failed ROLLBACK, a lost connection) and the error policy's verdicts."""

    transport: asyncio.Transport
    on_error: Callable[[int, int, str, int], int]
    done: asyncio.Future[bool] | None
    _driver_protocol: Any
    # the core's (C or _PyCore)
    tx: int
    k: int
    attempt: int
    packets: Sequence[bytes]
    failed: tuple[int, str] | None

    if TYPE_CHECKING:  # the core's
        def _next_transaction(self) -> None: ...
        def _start_attempt(self) -> None: ...

    async def run(self) -> bool:
        """Transactions until stopped; True when the connection must be replaced."""
        loop = asyncio.get_running_loop()
        self.done = loop.create_future()
        if self.transport.is_closing():  # lost before we got it: no connection_lost will come
            return True
        self._driver_protocol = self.transport.get_protocol()
        self.transport.set_protocol(self)
        try:
            self._next_transaction()
            return await self.done
        except asyncio.CancelledError:
            # a statement may be in flight: the connection is out of step, only closing is safe
            self.transport.close()
            raise
        finally:
            if not self.transport.is_closing():
                self.transport.set_protocol(self._driver_protocol)

    def _finish(self, reconnect: bool, exc: BaseException | None = None) -> None:
        d = self.done
        if d is not None and not d.done():
            if exc is not None:
                d.set_exception(exc)
            else:
                d.set_result(reconnect)

    def _broken(self, exc: BaseException) -> None:
        """A defect while reading replies: the run must hear of it, the connection is out of step."""
        self._finish(True, exc)
        self.transport.close()

    def _rollback_answered(self) -> None:
        failed = self.failed
        assert failed is not None
        self.failed = None
        self._after_error(*failed)

    def _reply_error(self, code: int, message: str) -> None:
        if self.failed is not None:  # the ROLLBACK itself failed: the session is in doubt
            code, message = self.failed
            self.failed = None
            self.on_error(self.tx, code, message, _NO_MORE_ATTEMPTS)  # counted as an error, never retried
            self._finish(True)
            return
        if self.k > 0 and self.packets[0] is BEGIN:
            self.failed = (code, message)
            self.transport.write(ROLLBACK)
            return
        self._after_error(code, message)

    def _after_error(self, code: int, message: str) -> None:
        verdict = self.on_error(self.tx, code, message, self.attempt)
        if verdict == RETRY:
            self.attempt += 1
            self._start_attempt()
        elif verdict == NEXT:
            self._next_transaction()
        else:
            self._finish(True)

    def eof_received(self) -> bool | None:
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        d = self.done
        if d is not None and not d.done():
            try:
                self.on_error(self.tx, LOST_CONNECTION, f"Lost connection to server during query ({exc or 'closed'})",
                              _NO_MORE_ATTEMPTS)
                self._finish(True)
            except Exception as err:  # a defect in the policy: the run must hear of it
                self._finish(True, err)


def _init(self: Any, core: type, conn: Any, program: Program, pick: Pick, record: Recording | None,
          on_error: Callable[[int, int, str, int], int]) -> None:
    self.transport = conn._transport
    core.__init__(self, self.transport.write, program, pick, record, bool(conn._deprecate_eof))
    self.on_error = on_error
    self.done = None
    self._driver_protocol = None


class PyRawLoop(_PyCore, _Control):
    """RawLoop on the pure-Python core."""

    executor = "raw-py"

    def __init__(self, conn: Any, program: Program, pick: Pick, record: Recording | None,
                 on_error: Callable[[int, int, str, int], int]) -> None:
        _init(self, _PyCore, conn, program, pick, record, on_error)


if native.compiled is not None or TYPE_CHECKING:
    class CRawLoop(native.compiled.Core if native.compiled is not None else _PyCore, _Control):  # type: ignore[misc]
        """RawLoop on the C core."""

        executor = "raw"

        def __init__(self, conn: Any, program: Program, pick: Pick, record: Recording | None,
                     on_error: Callable[[int, int, str, int], int]) -> None:
            _init(self, native.compiled.Core, conn, program, pick, record, on_error)

RawLoop: type[PyRawLoop] | type[CRawLoop] = CRawLoop if native.core is not None else PyRawLoop
RawLoop.__doc__ = """Runs one user's transactions on an established asyncmy connection until `stop` is set (then
finishes the transaction in flight), an error asks for a new connection, or the connection is lost.
Borrows the connection's transport and gives it back to the driver's own protocol when done.
`program(tx)` gives each transaction's packets, `pick()` its type (None: always 0), `record.ok(tx,
microseconds, statements)` is told of each completed one (metrics.Counts: counted in C), and
`on_error(tx, code, message, attempt)` says what follows a failure (RETRY, NEXT or RECONNECT)."""
