"""The control path first: the threads of a process that runs users rank above its users' threads.

Why: under the kernel's autogroup every thread of a session gets its share of the session's CPU.
With 1,500 users beside 1,500 server threads in one session, the one thread that answers the
coordinator got about 1/3000 of it and a report waited more than 10 s (issue 39); in a Ray actor,
started at nice 15 by Ray, it ranked below its own users' threads. Niceness is per thread on
Linux, and a thread starts at its creator's: so the process's threads are set once, when it takes
its users (`control_first`), and each user's thread then sets its own (`as_user`).

Where this process may lower a niceness (root, CAP_SYS_NICE, RLIMIT_NICE), its threads go
CONTROL_GAIN below the users', and the users keep the niceness they would have had (0, or the
process's own when it cannot be lowered). Where it may not, the users' threads go CONTROL_GAIN
above the process's niceness (anyone may raise a niceness), up to 19. Only the ranking changes:
on a machine with a core to spare, each thread still runs when it is ready.
"""

from __future__ import annotations

import contextlib
import os
import threading

CONTROL_GAIN = 10  # nice levels between the control threads and the users': a weight 9.3x larger
NICEST = 19

_users_nice: int | None = None  # what the users' threads take; None: nothing set (this process runs no users)
_before: int | None = None  # this process's niceness before control_first, for restore


def control_first(users: int | None = None, apart: bool = True) -> int:
    """Ranks this process's threads above its users' (those started later, through `as_user`):
    every thread it has now gets the control niceness where it may; returns the users' niceness.
    `users`: the niceness they should have (a Ray actor's: 0, not the 15 Ray starts it at); this
    thread's by default, which a process inherits from `nice bench ...`. `apart` False: the users
    run on the control thread's own event loop (asyncmy), which then ranks as users do: raised
    above them, it would take the CPU of a server beside it (a second process cost TPC-C 20%)."""
    global _users_nice, _before
    # this thread's, as it was before a first call (a second one ranks as the first)
    own = os.getpriority(os.PRIO_PROCESS, 0) if _before is None else _before
    _before = own
    users = own if users is None else users
    if not apart:
        if not _set_all(users):
            _set_all(own)
            users = own
        _users_nice = users
        return users
    control = max(-20, users - CONTROL_GAIN)
    if not _set_all(control):
        users = min(NICEST, own + CONTROL_GAIN)
        _set_all(own)  # those it could lower and those it could not, at one niceness again
    _users_nice = users
    return users


def restore() -> None:
    """Every thread of this process back at its niceness before control_first: a coordinator that
    goes on (the next run of a study) must not hand the control niceness to what it starts next, a
    server among them (a child starts at its parent thread's niceness)."""
    global _users_nice, _before
    if _before is not None:
        _set_all(_before)
    _users_nice = _before = None


def users_nice() -> int | None:
    return _users_nice


def as_user() -> None:
    """The calling thread, a user's (or what measures what a user's thread meets), at the users'
    niceness, once control_first ran in this process."""
    if _users_nice is not None:
        with contextlib.suppress(OSError):
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), _users_nice)


def nice_of(tid: int) -> int:
    """A thread's niceness, read from the kernel (what a test checks)."""
    with open(f"/proc/self/task/{tid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[16])


def _set_all(nice: int) -> bool:
    """Every thread of this process at `nice`: False when one may not be lowered to it."""
    try:
        tids = [int(t) for t in os.listdir("/proc/self/task")]
    except OSError:
        tids = [threading.get_native_id()]
    ok = True
    for tid in tids:
        try:
            os.setpriority(os.PRIO_PROCESS, tid, nice)
        except PermissionError:
            ok = False
        except ProcessLookupError:
            pass  # a thread that ended meanwhile
    return ok
