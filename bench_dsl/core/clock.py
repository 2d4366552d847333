"""The time a run is cut in: a clock read and a wait until a moment of it. A run asks this object,
never `time` or `asyncio.sleep` directly, so that a test can hand it a virtual clock (one that moves
when every task waits on it) and run a plan's minutes in milliseconds, the same every time, however
busy the machine."""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Protocol


class Clock(Protocol):
    def now(self) -> float:
        """Seconds on a clock that only goes forward (its origin is its own)."""
        ...

    async def sleep_until(self, t: float, wake: asyncio.Event | None = None) -> None:
        """Until `now()` reaches `t`, or `wake` is set (whichever comes first); at once when `t`
        is past (without yielding to the loop, as a wait that has nothing to wait for)."""
        ...


class Monotonic:
    """CLOCK_MONOTONIC and the event loop's timers: the product's clock. One machine's processes
    share it (a worker's reports are timed on it too)."""

    def now(self) -> float:
        return time.monotonic()

    async def sleep_until(self, t: float, wake: asyncio.Event | None = None) -> None:
        delay = t - time.monotonic()
        if delay <= 0:
            return
        if wake is None:
            await asyncio.sleep(delay)
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(wake.wait(), delay)


MONOTONIC = Monotonic()
