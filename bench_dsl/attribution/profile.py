"""The time profile of a step, by Little's law (ATTRIBUTION.md, "the time profile first"): where the
sessions' time went, from the counters the result records, without performance_schema.

    N  sessions in flight at the client: users (closed loop); an open loop's busy users, or its
       rate x mean service time
    A  sessions active in the server: mean Threads_running - 1 (the coordinator's own reading
       counts itself)
    outside = 1 - A/N                      client, network, pacing
    cpu     = cpu.server% x cores / 100    the server's CPU seconds per second
    rowlock = rate(Innodb_row_lock_time) / 1000
    other   = A - cpu - rowlock            I/O, fsync, metadata locks, the pool's queue, mutexes

A session on a CPU or waiting on a row lock is a running thread: cpu + rowlock is a floor under A.
Threads_running read once at the step's end (no mean recorded) is a point sample that can be far
below it, so A is then raised to that floor (threads_running keeps what was read). A mean is a
measurement: cpu + rowlock past it is mysqld's background threads' CPU (purge, page cleaners) and
row lock time added late, so the two are scaled down to fit A and the shares still add up to 1."""

from __future__ import annotations

from bench_dsl.attribution.model import Profile, r3
from bench_dsl.attribution.window import Context, Step


def sessions_in_flight(s: Step) -> float | None:
    if not s.open_loop:
        return s.num("users")
    if (busy := s.num("busy")) is not None:
        return busy
    tps, lat = s.num("achieved_tps") or s.tps, s.latency_avg_ms()
    return None if tps is None or lat is None else tps * lat / 1000.0


def profile_of(s: Step, ctx: Context) -> Profile:
    n = sessions_in_flight(s)
    running, source = s.gauge("threads_running")
    a = None if running is None else max(0.0, running - 1.0)
    server, cores = s.cpu("server"), ctx.cores
    cpu = None if server is None or not cores else server * cores / 100.0
    lock_ms = s.per_s("innodb_row_lock_time")
    lock = None if lock_ms is None else lock_ms / 1000.0
    if not n or n <= 0:
        return Profile(n, r3(a), source if a is not None else None, r3(cpu), r3(lock), None, None, None, None,
                       r3(running))
    if a is None:
        # without A only what is measured in sessions can be set against N: no outside, no other
        return Profile(r3(n), None, None, r3(cpu), r3(lock), None,
                       None if cpu is None else r3(min(cpu, n) / n),
                       None if lock is None else r3(min(lock, n) / n), None, None)
    used = (cpu or 0.0) + (lock or 0.0)
    inside = min(max(a, used) if source == "one reading" else a, n)
    scale = inside / used if used > inside else 1.0
    cpu_in, lock_in = (cpu or 0.0) * scale, (lock or 0.0) * scale
    return Profile(r3(n), r3(inside), source, r3(cpu), r3(lock), r3(1.0 - inside / n),
                   None if cpu is None else r3(cpu_in / n), None if lock is None else r3(lock_in / n),
                   r3(max(0.0, inside - cpu_in - lock_in) / n), r3(running))
