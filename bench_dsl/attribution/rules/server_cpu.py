"""The server's CPU: mysqld busy on the cores it may use (its affinity, a cgroup's quota), not the
host's %: a mysqld held to one core of two shows 50% of the host at its limit."""

from __future__ import annotations

from bench_dsl.attribution.model import Evidence, Finding, NoSignal, Outcome, RuledOut, r3
from bench_dsl.attribution.window import SERVER_SCHED, Rule, Window, cores_words, pct

CLASS = "server_cpu"
# ATTRIBUTION.md, rules to start from (server CPU): cpu >= 0.9 of the allowed cores ...
BUSY = 0.9
# ... cpu >= 0.5 of A ...
OF_ACTIVE = 0.5
# ... with a saturation sign. Not in ATTRIBUTION.md: starting points of ours, for the tests that
# provoke the class to decide. CPU pressure "some" as % of the step's time; run delay in mysqld's
# threads waiting for a core on average (half a thread always waiting is a queue).
PRESSURE_PCT = 10.0
RUN_DELAY = 0.5
# Ours: a server its cgroup throttled this long a second, at this share of its quota, is at its
# own limit whatever the mean says (at_quota)
THROTTLED = 0.05
QUOTA_BUSY = 0.8


def saturation_signs(w: Window) -> list[Evidence]:
    """CPU pressure, mysqld's run delay, a cgroup's throttling: a queue for the CPU, not only use.
    The shared machine's rule reads them too."""
    p, delay = w.pressure("cpu"), w.s.num(SERVER_SCHED, "run_delay_s_per_s")
    throttled = w.s.num(SERVER_SCHED, "throttled_s_per_s")
    out = []
    if p is not None:
        out.append(Evidence("pressure.cpu.some", p, "% of time", PRESSURE_PCT, corroborates=p >= PRESSURE_PCT))
    if delay is not None:
        out.append(Evidence("server_sched.run_delay_s_per_s", r3(delay), "threads waiting", RUN_DELAY,
                            corroborates=delay >= RUN_DELAY))
    if throttled is not None:
        out.append(Evidence("server_sched.throttled_s_per_s", r3(throttled), "s/s", 0.0, ">=",
                            corroborates=throttled > 0))
    return out


def waiting_outside(w: Window) -> float:
    """The time outside the server that is the server's CPU queue: a session whose statement has
    arrived is not in Threads_running until a server thread gets a core to read it, so a server
    held to one core with 4 users of point selects showed 84% of the sessions' time outside it and
    Threads_running's mean under 2 (tests/fixtures/bottleneck/server-cpu.bench). It counts only once
    the client's probe ran and found the client short of nothing: a busy client explains it too.
    The caller has seen the server at its limit."""
    if not w.ctx.client_probed or w.ctx.client_limit is not None:
        return 0.0
    return w.profile.outside_share or 0.0


def queue_share(w: Window) -> float:
    """Time runnable but not running, as a share of N, once the CPU is at its limit (the callers
    see to that): measured (run delay), else the time in the server neither on CPU nor on a row
    lock (an upper bound)."""
    p = w.profile
    delay = w.s.num(SERVER_SCHED, "run_delay_s_per_s")
    if delay is not None and p.sessions_in_flight:
        return min(delay / p.sessions_in_flight, p.other_share or 0.0)
    return p.other_share or 0.0


def at_quota(w: Window, util: float) -> bool:
    """Held back by its own CPU quota: throttled, and near the quota. The cgroup throttles a group
    only once it has used its quota in a period, so the server was at its limit then, while the
    machine's other work kept its mean below BUSY (84% and 89% of a one-core quota, throttled
    0.62 and 0.06 s/s, on a machine at load average 147: tests/fixtures/bottleneck/server-cpu.bench)."""
    throttled = w.s.num(SERVER_SCHED, "throttled_s_per_s")
    return throttled is not None and throttled >= THROTTLED and util >= QUOTA_BUSY


def judge(w: Window) -> Outcome:
    util, allowed = w.cpu_util(), w.allowed_cores()
    if util is None:
        return NoSignal(CLASS, "no signal: the server's CPU was not seen (a server on another machine needs "
                               "monitor with node_exporter; the machine's cores must be known)")
    used = r3(util * (allowed or 0))
    b_util = w.cpu_util(w.b) if w.b is not None else None
    b_used = None if b_util is None else r3(b_util * (allowed or 0))
    held = at_quota(w, util)
    busy = Evidence("cpu.server", used, "cores", r3(BUSY * (allowed or 0)), baseline=b_used,
                    corroborates=util >= BUSY or held, note=f"{pct(util)} of the {cores_words(allowed)} it may use"
                    + (", its quota throttling it" if held and util < BUSY else ""))
    if util < BUSY and not held:
        return RuledOut(CLASS, "cpu.server", used, "cores",
                        f"not server CPU: the server used {pct(util)} of the {cores_words(allowed)} it may use",
                        f"server CPU ({pct(util)} of its {cores_words(allowed)})", r3(BUSY * (allowed or 0)))
    p = w.profile
    delay = w.s.num(SERVER_SCHED, "run_delay_s_per_s") or 0.0
    of_active = None if not p.active_in_server or p.cpu_s_per_s is None else r3(
        min(1.0, (p.cpu_s_per_s + delay) / p.active_in_server))
    # against one reading of Threads_running raised to the CPU's floor, the CPU is all of A by
    # construction: a sign only against its mean
    evidence = (busy, *saturation_signs(w),
                Evidence("cpu_of_active", of_active, "of running sessions", OF_ACTIVE,
                         corroborates=p.measured and of_active is not None and of_active >= OF_ACTIVE,
                         note="on a CPU or waiting for one (run delay), of the sessions in the server"))
    share = None if p.cpu_share is None else r3(min(1.0, p.cpu_share + queue_share(w) + waiting_outside(w)))
    return Finding(CLASS, share, evidence, f"server CPU ({pct(util)} of the {cores_words(allowed)} it may use)")


RULE = Rule(CLASS, "server CPU", judge)
