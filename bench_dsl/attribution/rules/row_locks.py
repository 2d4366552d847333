"""Row locks: sessions waiting for rows other transactions hold (a hot row). PMM's "row lock
blocking": rate(Innodb_row_lock_time) / 1000, sessions blocked on average by Little's law, over the
sessions in the server. The table and index come from the lock waits sampled, when they were."""

from __future__ import annotations

from bench_dsl.attribution.model import Evidence, Finding, NoSignal, Outcome, Profile, RuledOut, r3
from bench_dsl.attribution.window import LOCK_WAITS, Rule, Window, pct

CLASS = "row_locks"
# ATTRIBUTION.md, rules to start from (row locks): rowlock / A >= 0.3 and rising with users
OF_ACTIVE = 0.3
# "rising": S's share at least this many times B's. Not in ATTRIBUTION.md: a starting point of ours
RISE = 1.2


def waiting(p: Profile) -> float | None:
    """Row lock waits over the sessions in the server; over N when A is not known (a floor under
    it: A <= N)."""
    base = p.active_in_server or p.sessions_in_flight
    if p.row_lock_s_per_s is None or not base:
        return None
    return r3(min(1.0, p.row_lock_s_per_s / base))


def judge(w: Window) -> Outcome:
    frac = waiting(w.profile)
    if frac is None:
        return NoSignal(CLASS, "no signal: the result records no Innodb_row_lock_time, or no session was in flight")
    b_frac = waiting(w.b_profile) if w.b_profile is not None else None
    over = "running sessions" if w.profile.active_in_server else "sessions in flight"
    if frac < OF_ACTIVE:
        return RuledOut(CLASS, "row_lock_of_active", frac, f"of {over}", f"not row locks: {pct(frac)} of {over} "
                        "waited for a row lock", f"row locks ({pct(frac)} waiting)", OF_ACTIVE)
    current, _ = w.s.gauge("innodb_row_lock_current_waits")
    active = w.profile.active_in_server
    cur = None if current is None or not active else r3(min(1.0, current / active))
    deadlocks = w.s.per_s("innodb_deadlocks")
    evidence = [
        Evidence("row_lock_of_active", frac, f"of {over}", OF_ACTIVE, baseline=b_frac, corroborates=True,
                 note="rate(Innodb_row_lock_time)/1000 over the sessions in the server"),
        Evidence("row_lock_rising", frac, f"of {over}", None if b_frac is None else r3(RISE * b_frac),
                 baseline=b_frac, corroborates=b_frac is not None and frac >= RISE * b_frac,
                 note="rising with users: against the baseline step" if w.b else "no earlier step to compare with"),
    ]
    if cur is not None:
        evidence.append(Evidence("innodb_row_lock_current_waits", cur, "of running sessions", OF_ACTIVE,
                                 corroborates=cur >= OF_ACTIVE))
    if deadlocks is not None:
        evidence.append(Evidence("innodb_deadlocks", deadlocks, "/s", 0.0, corroborates=deadlocks > 0,
                                 note="transactions in each other's way: a coherency cost"))
    table = w.s.get(LOCK_WAITS, "table")
    on = f" on {table}" if isinstance(table, str) and table else ""
    if on:
        index = w.s.get(LOCK_WAITS, "index")
        evidence.append(Evidence("lock_waits.share", w.s.num(LOCK_WAITS, "share"), "of samples",
                                 note=f"{table}{f' ({index})' if index else ''}: the table seen most in the "
                                      "lock waits"))
    return Finding(CLASS, w.profile.row_lock_share, tuple(evidence), f"row locks{on} ({pct(frac)} of {over} waiting)")


# a lock holder that reads from disk holds its waiters as long (rules/buffer_pool.py): listed, but
# the pool's misses are what ran out
RULE = Rule(CLASS, "row locks", judge, symptom_of=("buffer_pool",))
