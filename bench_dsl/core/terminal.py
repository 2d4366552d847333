"""A terminal that went away under a running bench (a closed tmux window, a dropped ssh session).

A hung-up terminal fails every write and every ioctl with EIO, where a file or a pipe would answer
or say ENOTTY. bench must still leave with the status its results say: the lines it would have
printed there have nobody to read them, and a write that fails is no reason for an exit status of
its own (it was 1, an internal error, while the result said 129). A hangup signal is not needed to
see it: a session leader that ignores SIGHUP (`trap '' HUP`) passes none on."""

from __future__ import annotations

import contextlib
import errno
import io
import os
import stat
import sys
import termios
from typing import IO, cast

# what a write or an ioctl on a hung-up terminal fails with (Linux's hung_up_tty_fops), and opening
# /dev/tty once the session has lost it
GONE_ERRNOS = frozenset({errno.EIO, errno.ENXIO})


def gone(fd: int) -> bool:
    """Whether `fd` is a terminal that has hung up. One ioctl: cheap enough to ask every second."""
    try:
        termios.tcgetattr(fd)
    except termios.error as exc:
        return bool(exc.args) and exc.args[0] in GONE_ERRNOS
    except (OSError, ValueError):  # closed, or no file at all: not a terminal that went
        return False
    return False


def let_go(fd: int) -> None:
    """Points `fd`, and the other standard outputs on the same terminal, at /dev/null: what is still
    buffered for them (the interpreter flushes at exit, and a flush failing there turns the exit
    status into 120) and whatever is written later go nowhere, without an error."""
    try:
        device = os.fstat(fd)
    except OSError:
        return
    same = [fd]
    for other in (sys.__stdout__, sys.__stderr__):
        with contextlib.suppress(AttributeError, OSError, ValueError):
            o = os.fstat(other.fileno())  # type: ignore[union-attr]
            if stat.S_ISCHR(o.st_mode) and o.st_rdev == device.st_rdev:
                same.append(other.fileno())  # type: ignore[union-attr]
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        for f in set(same):
            os.dup2(null, f)
    finally:
        os.close(null)


class Stderr(io.TextIOBase):
    """The file of the commands' console: sys.stderr (looked up at each use, so that whoever
    replaced it, a test's capture, has it), until its terminal is gone; from then on what is
    printed is dropped, and the run's status stays the exit status."""

    def __init__(self) -> None:
        super().__init__()
        self.gone = False

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(sys.stderr, "encoding", None) or "utf-8"

    def isatty(self) -> bool:
        return not self.gone and sys.stderr.isatty()

    def fileno(self) -> int:
        return sys.stderr.fileno()

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        if not self.gone:
            try:
                return sys.stderr.write(text)
            except OSError as exc:
                self._failed(exc)
        return len(text)

    def flush(self) -> None:
        if not self.gone:
            try:
                sys.stderr.flush()
            except OSError as exc:
                self._failed(exc)

    def _failed(self, exc: OSError) -> None:
        if exc.errno not in GONE_ERRNOS:
            raise exc
        self.gone = True
        with contextlib.suppress(AttributeError, OSError, ValueError):
            let_go(sys.stderr.fileno())


def stderr() -> IO[str]:
    """A Stderr, as rich's Console takes a file: typeshed's IO[str] is not io.TextIOBase."""
    return cast(IO[str], Stderr())
