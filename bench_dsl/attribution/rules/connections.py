"""Connections and the thread pool: the server refused users (error 1040, max_connections), or the
pool of threads queued statements while the CPU had room."""

from __future__ import annotations

from bench_dsl.attribution.model import Evidence, Finding, Outcome, RuledOut, r3
from bench_dsl.attribution.window import THREAD_POOL, Rule, Window, pct

CLASS = "connections"
# ATTRIBUTION.md, rules to start from (connections / thread pool): any refused connection (1040) is
# a limit; the thread pool when its queue is non-empty in half the samples with CPU under 0.8 of
# allowed
QUEUED = 0.5
CPU_BELOW = 0.8


def refused(w: Window) -> int:
    """Users refused, by whichever said most: the caller, the step's errors, the server's count."""
    in_errors = w.s.num("errors_by_code", "1040") or 0.0
    server = w.s.num("server_status", "connection_errors_max_connections", "grew") or 0.0
    return max(w.ctx.refused, int(in_errors), int(server))


def judge(w: Window) -> Outcome:
    n_refused, users = refused(w), w.s.num("users") or 0.0
    connected, top = w.s.value("threads_connected"), w.ctx.max_connections
    queued, util = w.s.num(THREAD_POOL, "queued_share"), w.cpu_util()
    pool = queued is not None and queued >= QUEUED and (util is None or util < CPU_BELOW)
    at_max = connected is not None and top is not None and connected >= top
    if not n_refused and not pool:
        seen = "none refused" + ("" if connected is None or top is None else
                                 f", {connected:.0f} connected of max_connections {top}")
        return RuledOut(CLASS, "refused", float(n_refused), "users", f"not connections: {seen}",
                        f"connections ({seen})", 1.0)
    evidence = [Evidence("refused", float(n_refused), "users", 1.0, corroborates=n_refused > 0,
                         note="error 1040: too many connections")]
    if connected is not None:
        evidence.append(Evidence("threads_connected", connected, "", None if top is None else float(top),
                                 corroborates=at_max, note="against max_connections"))
    if queued is not None:
        evidence.append(Evidence("thread_pool.queued_share", queued, "of samples", QUEUED, corroborates=pool,
                                 note=f"the pool's queue non-empty, with the CPU under {pct(CPU_BELOW)} of allowed"))
    queue = w.s.num(THREAD_POOL, "queue_mean")
    n = w.profile.sessions_in_flight
    shares = [n_refused / (users + n_refused)] if n_refused else []
    if pool and queue is not None and n:
        shares.append(min(1.0, queue / n))
    words = (f"connections ({n_refused} users refused" + ("" if top is None else f", max_connections {top}") + ")"
             if n_refused else f"the thread pool's queue (non-empty in {pct(queued)} of samples)")
    return Finding(CLASS, r3(max(shares)) if shares else None, tuple(evidence), words, hard=n_refused > 0)


RULE = Rule(CLASS, "connections", judge)
