"""The run's clock (bench_dsl.core.clock) and the virtual one the unit tests hand it (tests/fakes.py):
the virtual clock moves only when every task waits, to the earliest moment one waits for."""

from __future__ import annotations

import asyncio

from bench_dsl.core.clock import MONOTONIC

from ..fakes import VirtualClock


async def test_the_virtual_clock_wakes_each_sleeper_at_its_moment_in_order() -> None:
    clock = VirtualClock(100.0)
    woke: list[tuple[str, float]] = []

    async def sleeper(name: str, until: float) -> None:
        await clock.sleep_until(until)
        woke.append((name, clock.now()))

    await asyncio.gather(sleeper("late", 105.0), sleeper("early", 103.0), sleeper("also early", 103.0))
    assert woke == [("early", 103.0), ("also early", 103.0), ("late", 105.0)]


async def test_the_virtual_clock_waits_for_a_task_that_is_not_waiting_yet() -> None:
    """A task busy (ready to run) when another sleeps holds the clock until it waits too."""
    clock = VirtualClock(0.5)
    seen: list[float] = []

    async def busy() -> None:
        for _ in range(50):
            await asyncio.sleep(0)  # ready again at once: never waiting on the clock
        seen.append(clock.now())

    await asyncio.gather(clock.sleep_until(10.0), busy())
    assert seen == [0.5] and clock.now() == 10.0


async def test_a_wake_ends_a_virtual_sleep_without_moving_the_clock_past_it() -> None:
    clock = VirtualClock(1.0)
    wake = asyncio.Event()

    async def waker() -> None:
        await clock.sleep_until(2.0)
        wake.set()

    await asyncio.gather(clock.sleep_until(60.0, wake), waker())
    assert clock.now() == 2.0
    await clock.sleep_until(1.5)  # past: at once
    assert clock.now() == 2.0


async def test_the_machines_clock_does_not_wait_for_a_moment_gone_by() -> None:
    wake = asyncio.Event()
    wake.set()
    await MONOTONIC.sleep_until(MONOTONIC.now() + 60.0, wake)  # woken: at once
    await MONOTONIC.sleep_until(MONOTONIC.now() - 1.0)
