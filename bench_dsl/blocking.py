"""The raw executor on a thread per user: the same prepared-statement packets and the same error
policy as RawLoop (rawexec.py), sent and read with blocking calls on a thread of the user's own, as
sysbench runs each of its threads.

Why a thread per user, when the event loop serves a thousand connections on one: with the server on
the same cores, how the client waits decides where the server's threads run. Measured on 2 cores
(point selects, 16 users): one event loop reading many sockets costs 0.43 rescheduling interrupts per
transaction against sysbench's 0.1, and the server spends ~42 us of CPU per point select under it
against ~32 under sysbench. A thread blocked in recv() on its own socket is woken where its server
thread answered. The loop itself is C (_rawcore.Blocking) and holds the GIL only to build a
transaction in Python (a workload's own program) or, never for sysbench's point selects, which are
drawn and encoded in C. Everything rare (an error reply, a lost connection, the end) comes back here,
to the event loop's thread, where the policy that RawLoop applies is applied the same way.

The connection stays asyncmy's: connected, authenticated and prepared by it, and given back to it
(non-blocking, its protocol reading again) when the loop ends."""

from __future__ import annotations

import asyncio
import os
import socket
import threading
from collections.abc import Callable
from typing import Any

from bench_dsl import native
from bench_dsl.rawexec import _NO_MORE_ATTEMPTS, NEXT, RETRY, Pick, Program, Recording

# what Blocking.run says, besides raising for a defect
STOPPED, ERROR, LOST, DOUBT = 0, 1, 2, 3


class ThreadLoop:
    """RawLoop's interface (`RawLoop(conn, program, pick, record, on_error)`, `stop`, `await run()`),
    with the transactions run by a thread of their own."""

    executor = "raw-thread"

    def __init__(self, conn: Any, program: Program, pick: Pick, record: Recording | None,
                 on_error: Callable[[int, int, str, int], int]) -> None:
        if native.compiled is None:
            raise RuntimeError("the thread executor needs the C core (bench_dsl._rawcore)")
        self.transport: asyncio.Transport = conn._transport
        self.on_error = on_error
        self.core = native.compiled.Blocking(program, pick, record, bool(conn._deprecate_eof))

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
    def buffer_size(self) -> int:
        return int(self.core.buffer_size)

    @property
    def completed(self) -> int:
        return int(self.core.completed)

    async def run(self) -> bool:
        """Transactions until stopped; True when the connection must be replaced."""
        t = self.transport
        if t.is_closing():
            return True
        fd = t.get_extra_info("socket").fileno()
        t.pause_reading()  # the driver's protocol must not read the replies
        os.set_blocking(fd, True)
        core = self.core
        retry = False
        try:
            while True:
                outcome, code, message = await self._on_thread(fd, retry)
                if outcome == STOPPED:
                    return False
                if outcome != ERROR:  # lost, or its ROLLBACK failed: the session is in doubt
                    self.on_error(core.tx, code, message, _NO_MORE_ATTEMPTS)
                    return True
                verdict = self.on_error(core.tx, code, message, core.attempt)
                if verdict == RETRY:
                    core.attempt += 1
                    retry = True
                elif verdict == NEXT:
                    retry = False
                else:
                    return True
        except asyncio.CancelledError:
            # a statement may be in flight on the thread: wake it (its recv() ends) and close
            _shutdown(fd)
            t.close()
            raise
        except BaseException:
            t.close()  # a defect while running: the connection is out of step
            raise
        finally:
            if not t.is_closing():
                os.set_blocking(fd, False)
                t.resume_reading()

    def _on_thread(self, fd: int, retry: bool) -> asyncio.Future[tuple[int, int, str]]:
        """Blocking.run on a new daemon thread, on a descriptor of its own: if the event loop closes
        the connection while the thread is still in a call, the thread's descriptor keeps the
        socket (shut down, so the call ends) and never names another connection's."""
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[tuple[int, int, str]] = loop.create_future()
        mine = os.dup(fd)
        core = self.core

        def work() -> None:
            try:
                result = core.run(mine, retry)
            except BaseException as exc:
                _call_soon(loop, _set_exception, fut, exc)
            else:
                _call_soon(loop, _set_result, fut, result)
            finally:
                os.close(mine)

        try:
            threading.Thread(target=work, name="bench-user", daemon=True).start()
        except Exception:
            # no thread ("can't start new thread"): nobody else will close it. An interrupt while
            # start() waits for a thread that did start leaves the descriptor to that thread.
            os.close(mine)
            raise
        return fut


def _shutdown(fd: int) -> None:
    try:
        with socket.socket(fileno=os.dup(fd)) as s:
            s.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


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
