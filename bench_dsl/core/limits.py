"""The client machine's limits on what users hold: file descriptors (raised as far as allowed), and
threads. A user's thread that cannot start means the client machine is out of threads, a measured
limit of the client (the climb ends there), not a failure of bench-dsl. The error names the limits
the kernel, the process and its control group put on threads, with what is in use, so that the
reader knows which one to raise."""

from __future__ import annotations

import os
import resource
import threading
from pathlib import Path


class NoThread(RuntimeError):
    """A thread the users need could not start (EAGAIN: a limit on threads or tasks, or no memory
    for its stack)."""


def start(thread: threading.Thread) -> None:
    """thread.start(), or NoThread naming the machine's limits."""
    try:
        thread.start()
    except RuntimeError as exc:
        if (no := short(exc)) is not None:
            raise no from exc
        raise


def short(exc: BaseException) -> NoThread | None:
    """NoThread when it says a thread could not start (pthread_create's EAGAIN, as the
    thread itself or a pool's thread that was to start it met it)."""
    if isinstance(exc, RuntimeError) and not isinstance(exc, NoThread) and "can't start new thread" in str(exc):
        return NoThread(f"{exc} ({limits()})")
    return None


def limits() -> str:
    """The limits on threads this process is under, each with its use where it is known:
    `kernel.pid_max 32768, kernel.threads-max 192730 (31,950 tasks on the machine), its cgroup's
    pids.max 150 (150 in use)`."""
    words = [f"kernel.{name} {value}" for name in ("pid_max", "threads-max")
             if (value := _read(Path("/proc/sys/kernel") / name)) is not None]
    if words and (tasks := _tasks()) is not None:
        words[-1] += f" ({tasks:,} tasks on the machine)"
    cap = _pids_cgroup()
    if cap is not None:
        words.append(cap)
    soft, _ = resource.getrlimit(resource.RLIMIT_NPROC)
    if soft != resource.RLIM_INFINITY and os.geteuid() != 0:  # root is not held to it
        words.append(f"ulimit -u {soft}")
    return ", ".join(words) or "no limit on threads could be read"


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def _tasks() -> int | None:
    """Threads on the machine: /proc/loadavg's fourth field is runnable/total."""
    text = _read(Path("/proc/loadavg"))
    try:
        return int(text.split()[3].split("/")[1]) if text else None
    except (IndexError, ValueError):
        return None


def cgroups(pid: int | str, controller: str) -> list[tuple[Path, bool]]:
    """The directories of a process's control groups that may hold `controller`'s files: its v1
    hierarchy of that controller (mounted as /sys/fs/cgroup/<controllers>), and its v2 group; each
    with whether it is v2 (whose files are named otherwise: cpu.max against cpu.cfs_quota_us)."""
    text = _read(Path(f"/proc/{pid}/cgroup"))
    out = []
    for line in (text or "").splitlines():
        _, controllers, path = line.split(":", 2)
        if controller in controllers.split(","):
            out.append((Path("/sys/fs/cgroup") / controllers / path.lstrip("/"), False))
        elif controllers == "" and line.startswith("0::"):
            out.append((Path("/sys/fs/cgroup") / path.lstrip("/"), True))
    return out


def _pids_cgroup() -> str | None:
    """The pids.max of this process's control group (v1 "pids" or v2), with its use."""
    for group, _ in cgroups("self", "pids"):
        cap = _read(group / "pids.max")
        if cap is None or cap == "max":
            continue
        current = _read(group / "pids.current")
        return f"its cgroup's pids.max {cap}" + (f" ({current} in use)" if current else "")
    return None


def allow_many_connections() -> None:
    """Raise this process's soft limit of open descriptors to its hard limit. Each user holds a
    socket (and on the thread executor a second descriptor of it): Debian's usual soft limit of
    1,024 would end a run of a few hundred users per process in EMFILE. The hard limit is the
    machine's own word and stays."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = 1 << 20 if hard == resource.RLIM_INFINITY else hard  # Linux refuses more than fs.nr_open
    if soft != resource.RLIM_INFINITY and soft < want:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
        except (ValueError, OSError):
            pass  # a stricter kernel or container: the soft limit stands, and EMFILE says so if reached
