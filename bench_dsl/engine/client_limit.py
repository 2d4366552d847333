"""Whether the end of a climb was bench-dsl's own limit (saturation.limited_by = "client"): at the
step that ended it, the client's processes were out of CPU or waited for a core. A load generator
that saturates reports its own ceiling, not the server's; the judge says so from these rules."""

from __future__ import annotations

from typing import Any

from bench_dsl.measure.schedlag import worst_lag

# The client's CPU, as a share of what its processes can use, above which a climb's end is said to
# be bench-dsl's own limit (saturation.limited_by = "client").
CLIENT_SATURATED = 0.9

# The client's scheduling lag (bench_dsl.measure.schedlag), in ms, above which the climb's end is bench-dsl's
# own limit too: the p90 of one process's wakeups over the step, by either probe (its event loop, or
# a thread as its users' are). p90, not p99: a step gives some 40 samples a process, so its p99 is
# its max, one hiccup. Measured on 2 cores, 16 users of point selects (docs/language.md), the worst
# process's p90: under 1.2 ms on an idle machine and beside another run of the same load (single
# wakeups up to 80 ms late); 96 to 190 ms with a CPU hog on each core. (On a machine overloaded by
# other runs, load average 20, everything waits: 3 to 36 ms, the client's limit indeed.)
CLIENT_LAG_MS = 10.0
# A process's p90 is judged on this many samples of a probe at least (5 s of a step): a shorter
# step's p90 is its max
CLIENT_LAG_SAMPLES = 20


def why(step: dict[str, Any], capacity_pct: float | None, users: int) -> str | None:
    """Why the step that ended the climb was bench-dsl's own limit, or None: a worker's report came
    late (its machine short of CPU), the client used more than CLIENT_SATURATED of the CPU its
    processes can use, or one of its processes waited for a core longer than CLIENT_LAG_MS."""
    return _late(step, users) or _cpu(step, capacity_pct, users) or _lag(step, users)


def no_thread(message: str, connected: int | None, users: int | None) -> str:
    """A user's thread could not start (bench_dsl.core.threads): the client machine's limit on
    threads, whatever its CPU did."""
    carries = f", so the server carries at least {users} users" if users is not None else ""
    at = f" beyond {connected:,} connected users" if connected is not None else ""
    return f"the client machine was the limit: it could not start a thread for another user{at}: {message}{carries}"


def _late(step: dict[str, Any], users: int) -> str | None:
    """A worker whose report came more than a tick late (schedlag.REPORT_LATE_S) was alive and short
    of CPU: what the coordinator waited for, the users' machine could not give (issue 39)."""
    late = step.get("client_reports_late") or {}
    if not late:
        return None
    name, fig = max(late.items(), key=lambda kv: kv[1]["waited_s"])
    runnable = fig.get("runnable_threads")
    beside = f" while {runnable:,} threads were runnable" if runnable is not None else ""
    return (f"the client machine was the limit: its {name} reported {fig['waited_s']:.1f} s late{beside}, "
            f"so the server carries at least {users} users")


def _lag(step: dict[str, Any], users: int) -> str | None:
    worst = worst_lag(step.get("client_lag_ms_by_process"), CLIENT_LAG_SAMPLES)
    if worst is None or worst[0] <= CLIENT_LAG_MS:
        return None
    p90, name, probe = worst
    what = "its event loop's timers ran" if probe == "loop" else "a thread of its woke"
    return (f"bench-dsl itself was the limit: its {name} process waited for a core ({what} {p90:.0f} ms late "
            f"at one wakeup in ten: client_lag_ms {probe} p90, over the bound of {CLIENT_LAG_MS:g} ms), "
            f"so the server carries at least {users} users")

def _cpu(step: dict[str, Any], capacity_pct: float | None, users: int) -> str | None:
    if capacity_pct is None:
        return None
    client = (step.get("cpu") or {}).get("client")
    each = step.get("client_cpu_by_process") or {}
    busy = {name: pct for name, pct in each.items() if pct is not None and pct >= 100 * CLIENT_SATURATED}
    if busy:  # one process out of its core holds the others back, whatever the machine has left
        name, pct = max(busy.items(), key=lambda kv: kv[1])
        return (f"bench-dsl itself was the limit: its {name} process used {pct:.0f}% of a core, "
                f"so the server carries at least {users} users")
    if client is None or client < CLIENT_SATURATED * capacity_pct:
        return None
    return (f"bench-dsl itself was the limit: its CPU was at {client:.0f}% of the machine, "
            f"{100 * client / capacity_pct:.0f}% of what its processes can use, "
            f"so the server carries at least {users} users")
