"""Table and metadata locks: sessions waiting for a table another session holds (LOCK TABLES, an
open transaction that altered it). Without performance_schema the processlist's states are the only
metadata-lock signal; Table_locks_waited counts table-level locks only (LOCK TABLES, Aria, MyISAM).
`waiting` judges any lock the processlist names its waiters for (rules/user_locks.py's too)."""

from __future__ import annotations

from bench_dsl.attribution.model import Evidence, Finding, NoSignal, Outcome, RuledOut, r3
from bench_dsl.attribution.window import LOCK_STATES, PROCESSLIST, Rule, Window, pct

CLASS = "table_locks"
# ATTRIBUTION.md, rules to start from (table / metadata locks): >= 0.3 of sampled sessions in a
# lock-waiting state
WAITING = 0.3
# the disk's gate (rules/disk.OTHER_OF_ACTIVE): most of the sessions in the server off CPU
OFF_CPU = 0.5


def waiting(w: Window, cls: str, states: tuple[str, ...], what: str,
            signs: tuple[Evidence, ...] = ()) -> Outcome | None:
    """A lock whose waiters the processlist names by `states`, judged by the share of the sampled
    sessions in them (`what`: the lock in words, "table or metadata locks"; `signs`: the lock's own
    counters, listed after the states); None: not sampled."""
    each = w.waiting_in(states)
    sampled = w.s.num(PROCESSLIST, "active_mean")
    if each is None or not sampled:
        return None
    frac = r3(min(1.0, sum(each.values()) / sampled)) or 0.0
    if frac < WAITING:
        return RuledOut(cls, "lock_waiting_of_sampled", frac, "of sampled sessions",
                        f"not {what}: {pct(frac)} of sampled sessions waited for one", f"{what} ({pct(frac)} waiting)",
                        WAITING)
    top = max(each, key=lambda k: each[k])
    evidence = [Evidence("lock_waiting_of_sampled", frac, "of sampled sessions", WAITING, corroborates=True, note=top),
                *signs]
    # the time profile agrees: a session waiting for such a lock is running in the server and off
    # CPU (none of them is a row lock: Innodb_row_lock_time does not count it)
    if (off := w.profile.of_active(w.profile.other_share)) is not None:
        evidence.append(Evidence("other_of_active", off, "of running sessions", OFF_CPU, corroborates=off >= OFF_CPU,
                                 note="in the server, neither on CPU nor on a row lock"))
    n = w.profile.sessions_in_flight
    share = None if not n else r3(min(1.0, sum(each.values()) / n))
    return Finding(cls, share, tuple(evidence), f"{what} ({pct(frac)} of sessions '{top}')")


def judge(w: Window) -> Outcome:
    waited = w.s.per_s("table_locks_waited")
    signs = () if waited is None else (Evidence("table_locks_waited", waited, "/s", 0.0, corroborates=waited > 0),)
    if (outcome := waiting(w, CLASS, LOCK_STATES, "table or metadata locks", signs)) is not None:
        return outcome
    if waited:
        return Finding(CLASS, None, (Evidence("table_locks_waited", waited, "/s", 0.0, corroborates=True,
                                              note="table-level locks only; the processlist was not sampled"),),
                       f"table locks ({waited:.1f} waits/s)")
    return NoSignal(CLASS, "no signal: metadata locks show only in the processlist's states (sample "
                           "information_schema.PROCESSLIST, or turn performance_schema on)")


RULE = Rule(CLASS, "table or metadata locks", judge)
