"""A terminal that hangs up under bench (bench_dsl/core/terminal.py), on a pty of the test's own:
its master closed is what a closed tmux window or ssh session does to the terminal bench runs in."""

from __future__ import annotations

import io
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench_dsl.core import terminal


@pytest.fixture
def hung_up() -> Iterator[int]:
    master, slave = os.openpty()
    assert not terminal.gone(slave)  # a live terminal answers
    os.close(master)
    try:
        yield slave
    finally:
        os.close(slave)


def test_a_hung_up_terminal_is_gone(hung_up: int, tmp_path: Path) -> None:
    assert terminal.gone(hung_up)
    r, w = os.pipe()
    with open(tmp_path / "f", "w") as f:
        assert not terminal.gone(r) and not terminal.gone(f.fileno())  # not terminals: nothing went
    os.close(r)
    os.close(w)
    assert not terminal.gone(r)  # closed: no file at all


def test_the_console_drops_what_a_gone_terminal_cannot_take(hung_up: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """A write to it failed with EIO, which made bench's exit status 1 where its result said 129."""
    stream = io.TextIOWrapper(io.FileIO(os.dup(hung_up), "w"), line_buffering=True)
    monkeypatch.setattr(sys, "stderr", stream)
    out = terminal.Stderr()
    assert out.write("status: interrupted (exit 129)\n") == len("status: interrupted (exit 129)\n")
    assert out.gone
    out.write("results: x.json\n")
    out.flush()
    stream.flush()  # what the failed write left buffered goes to /dev/null now, as at the interpreter's exit
    stream.close()


def test_the_console_still_fails_on_other_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    class Full(io.StringIO):
        def write(self, text: str) -> int:
            raise OSError(28, "No space left on device")

    monkeypatch.setattr(sys, "stderr", Full())
    with pytest.raises(OSError, match="No space"):
        terminal.Stderr().write("x\n")
