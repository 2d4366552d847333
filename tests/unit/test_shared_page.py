"""One node_exporter page for the watches that read it (bench_dsl.server.hostwatch.SharedPage): the
host's figures and `power node_exporter` read the monitor's page each second; one scrape serves
both. Its clock and its fetch are the test's: nothing here depends on the time it takes."""

from __future__ import annotations

import asyncio
import threading

import pytest

from bench_dsl.server.hostwatch import SharedPage


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_readers_in_the_same_second_share_one_scrape_and_the_next_second_scrapes_again() -> None:
    clock, fetched = Clock(), []
    gate = threading.Event()

    def fetch(url: str) -> str:
        gate.wait(10)  # the first reader's fetch is under way when the second asks
        fetched.append(url)
        return f"page {len(fetched)}"

    page = SharedPage("http://exporter:9100/metrics", clock, fetch)

    async def main() -> None:
        first = asyncio.create_task(page.get())
        second = asyncio.create_task(page.get())
        await asyncio.sleep(0)
        gate.set()
        assert await first == await second == (100.0, "page 1")
        clock.now += 0.5
        assert await page.get() == (100.0, "page 1")  # the other watch's read this second
        clock.now += 0.5
        assert await page.get() == (101.0, "page 2")  # a second later: a new page

    asyncio.run(main())
    assert len(fetched) == 2


def test_a_failed_scrape_is_said_to_each_reader_and_the_next_read_tries_again() -> None:
    clock, calls = Clock(), []

    def fetch(url: str) -> str:
        calls.append(url)
        if len(calls) == 1:
            raise OSError("connection refused")
        return "up"

    page = SharedPage("http://exporter:9100/metrics", clock, fetch)

    async def main() -> None:
        with pytest.raises(OSError):
            await page.get()
        assert await page.get() == (100.0, "up")

    asyncio.run(main())
    assert len(calls) == 2


def test_a_reader_stopped_while_it_waits_leaves_the_scrape_to_the_other() -> None:
    clock = Clock()
    gate = threading.Event()

    def fetch(url: str) -> str:
        gate.wait(10)
        return "page"

    page = SharedPage("http://exporter:9100/metrics", clock, fetch)

    async def main() -> None:
        stopped = asyncio.create_task(page.get())
        other = asyncio.create_task(page.get())
        await asyncio.sleep(0)
        stopped.cancel()
        gate.set()
        assert await other == (100.0, "page")
        assert stopped.cancelled()

    asyncio.run(main())
