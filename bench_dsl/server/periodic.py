"""Readings of something the server's side watches (its host's CPU and disks, its machine's power),
taken once a second in the background on their own clock: `first()` reads before the run starts
(a condition that needs the figure is refused when nothing answers), `newest()` hands the latest
reading with the one taken before it, once each. A reading that fails is said once, and again when
it works again; the watch never ends the run."""

from __future__ import annotations

import asyncio
import time
from typing import Generic, Protocol, TypeVar

from bench_dsl.core.aio import cancel_and_wait


class Stamped(Protocol):
    @property
    def at(self) -> float: ...  # monotonic


R = TypeVar("R", bound=Stamped)


class Periodic(Generic[R]):
    def __init__(self) -> None:
        self._latest: R | None = None
        self._taken: R | None = None
        self._task: asyncio.Task[None] | None = None
        self._failing = False
        self.last_error: str | None = None  # why the latest reading failed

    async def _reading(self) -> R:
        """One reading, now (raises what stops it)."""
        raise NotImplementedError

    def _failed(self, exc: Exception, quiet: bool) -> None:
        """A reading failed: `last_error` set, the failure said unless `quiet` or said already."""
        raise NotImplementedError

    def _again(self) -> None:
        """Readings work again after failing."""

    async def first(self, tries: int = 1) -> R | None:
        """A reading now (up to `tries` attempts a second apart); a failure is not said here: the
        caller says it, with what needs the figure."""
        for attempt in range(tries):
            if attempt:
                await asyncio.sleep(1.0)
            self._latest = await self._read(quiet=True)
            if self._latest is not None:
                break
        self._taken = self._latest
        return self._latest

    def start(self) -> None:
        # the readings of the run start now: `first()`'s was taken before the data was loaded, and a
        # span from it would give the first tick the load's minutes (its energy, its disks' work)
        self._latest = self._taken = None
        self._task = asyncio.create_task(self._loop())

    async def stop(self) -> None:
        await cancel_and_wait(self._task)

    def newest_at(self) -> float | None:
        """When the latest reading was taken (None: none since the run's readings started)."""
        return None if self._latest is None else self._latest.at

    def newest(self) -> tuple[R | None, R] | None:
        """The newest reading not handed yet and the one handed before it (None: none new)."""
        now = self._latest
        if now is None or (self._taken is not None and now.at <= self._taken.at):
            return None
        before, self._taken = self._taken, now
        return before, now

    async def _loop(self) -> None:
        while True:
            t = time.monotonic()
            reading = await self._read()
            if reading is not None:
                self._latest = reading
            await asyncio.sleep(max(0.0, 1.0 - (time.monotonic() - t)))

    async def _read(self, quiet: bool = False) -> R | None:
        try:
            reading = await self._reading()
        except Exception as exc:
            self._failed(exc, quiet or self._failing)
            self._failing = True
            return None
        if self._failing and not quiet:
            self._again()
        self._failing = False
        return reading
