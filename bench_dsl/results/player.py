"""Timed events played to sinks at a pace, with a run's controls: how `bench replay` shows a
finished run (bench_dsl/results/replay.py makes the events) on the live screen or the console."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from bench_dsl.engine.voice import Bus
from bench_dsl.results.replay import Timed


class Player:
    """Plays timed events to sinks at `speed` times the run's pace (None: at once). It has a run's
    three controls for the screen: stop ends the replay, hold pauses it, next step does nothing."""

    def __init__(self, evs: Sequence[Timed], speed: float | None = 1.0, sinks: Sequence[Any] = ()) -> None:
        self.evs = evs
        self.speed = speed
        self.sinks: list[Any] = list(sinks)
        self.paused = False
        self.position = 0.0  # the run's second the replay has reached
        self._stopped = False
        self._wake = asyncio.Event()
        self._anchor: tuple[float, float] | None = None  # (loop time, run second) the pace counts from

    def request_stop(self) -> None:
        self._stopped = True
        self._wake.set()

    def next_step(self) -> None:
        pass  # a recorded run's steps are what they were

    def toggle_hold(self) -> bool:
        now = asyncio.get_running_loop().time()
        if not self.paused:
            self.position = self._now(now)
        self.paused = not self.paused
        self._anchor = None if self.paused else (now, self.position)
        self._wake.set()
        return self.paused

    def _now(self, now: float) -> float:
        if self._anchor is None or self.speed is None:
            return self.position
        wall, pos = self._anchor
        return pos + (now - wall) * self.speed

    async def _until(self, t: float) -> None:
        loop = asyncio.get_running_loop()
        while not self._stopped and self.speed is not None:
            now = loop.time()
            if self._anchor is None and not self.paused:
                self._anchor = (now, self.position)
            wait = None if self.paused else (t - self._now(now)) / self.speed
            if wait is not None and wait <= 0:
                return
            self._wake.clear()
            try:
                await asyncio.wait_for(self._wake.wait(), wait)
            except TimeoutError:
                pass

    async def execute(self) -> int:
        bus = Bus(self.sinks)
        for t, e in self.evs:
            await self._until(t)
            if self._stopped:
                break
            self.position = max(self.position, t)
            bus.publish(e)
            await asyncio.sleep(0)  # the screen gets its turn, as between a run's ticks
        return 0
