"""Small asyncio helpers the engine's background readers share."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


async def cancel_and_wait(task: asyncio.Task[object] | None) -> None:
    """Cancel a background task and wait until it has finished, whatever it ended with: a reader
    stopped at the run's end must not outlive it, nor make the end fail."""
    if task is not None:
        task.cancel()
        with contextlib.suppress(BaseException):
            await task


def run_loop(coro: Coroutine[Any, Any, T]) -> T:
    """Run a command's coroutine to its end, on uvloop where it is installed."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run(coro)
    return uvloop.run(coro)  # an ImportError inside the run is the run's, not uvloop's absence
