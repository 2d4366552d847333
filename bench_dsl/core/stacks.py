"""Where a run stands when it seems to hang: `kill -USR1 <pid>` makes the process (the coordinator or
a worker) print every thread's Python stack on its stderr and then, when its event loop is alive,
what each of its tasks awaits, and go on. A worker's lines reach the run's log through the
coordinator."""

from __future__ import annotations

import asyncio
import collections
import faulthandler
import signal
import sys
from types import FrameType

ASK = signal.SIGUSR1


def on_request() -> None:
    """Print the stacks on stderr at each SIGUSR1 (the run goes on)."""
    # the tasks' part runs between two bytecodes of the main thread, so only when it is not stuck;
    # the threads' part is faulthandler's, from the signal itself, so it is printed even then
    signal.signal(ASK, _tasks)
    faulthandler.register(ASK, file=sys.__stderr__ or 2, all_threads=True, chain=True)


def _tasks(signum: int, frame: FrameType | None) -> None:
    try:
        tasks = asyncio.all_tasks()
    except RuntimeError:  # no event loop runs
        return
    # thousands of users await in a few places: each place once, with how many tasks await there
    places: collections.Counter[str] = collections.Counter()
    for t in tasks:
        places["".join(f"  {f.f_code.co_filename}:{f.f_lineno} in {f.f_code.co_name}\n" for f in _awaits(t)[-8:])
               or f"  {t.get_coro()!r}\n"] += 1
    out = sys.__stderr__
    if out is None:
        return
    for place, n in places.most_common():
        out.write(f"{n} task(s) awaiting at:\n{place}")
    out.flush()


def _awaits(task: asyncio.Task[object]) -> list[FrameType]:
    """The task's frames down its chain of awaits, outermost first (Task.get_stack gives a suspended
    coroutine's outermost frame only)."""
    frames: list[FrameType] = []
    coro: object = task.get_coro()
    while coro is not None and len(frames) < 64:
        frame = getattr(coro, "cr_frame", None) or getattr(coro, "gi_frame", None)
        if frame is not None:
            frames.append(frame)
        coro = getattr(coro, "cr_await", None) or getattr(coro, "gi_yieldfrom", None)
    return frames
