"""`kill -USR1` on a run that seems to hang (bench_dsl/core/stacks.py): every thread's stack and
what each task awaits, printed on stderr, and the process goes on."""

from __future__ import annotations

import subprocess
import sys

CHILD = """
import asyncio, os, signal
from bench_dsl.core import stacks
stacks.on_request()

async def waits_for_the_server(ev):
    await ev.wait()

async def main():
    ev = asyncio.Event()
    users = [asyncio.create_task(waits_for_the_server(ev)) for _ in range(3)]
    await asyncio.sleep(0)  # the users start, and await
    os.kill(os.getpid(), signal.SIGUSR1)
    ev.set()
    await asyncio.gather(*users)
    print("went on")

asyncio.run(main())
"""


def test_usr1_prints_the_threads_and_where_the_tasks_await_and_the_process_goes_on() -> None:
    r = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "went on\n"
    assert "Current thread" in r.stderr  # faulthandler's: printed even when the main thread is stuck
    assert "3 task(s) awaiting at:" in r.stderr
    place = r.stderr.split("3 task(s) awaiting at:\n")[1]
    assert "in waits_for_the_server" in place and "in wait" in place
