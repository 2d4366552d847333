"""Small asyncio helpers the engine's background readers share."""

from __future__ import annotations

import asyncio
import contextlib


async def cancel_and_wait(task: asyncio.Task[object] | None) -> None:
    """Cancel a background task and wait until it has finished, whatever it ended with: a reader
    stopped at the run's end must not outlive it, nor make the end fail."""
    if task is not None:
        task.cancel()
        with contextlib.suppress(BaseException):
            await task
