"""Table and metadata locks: sessions waiting for a table another session holds (LOCK TABLES, an
open transaction that altered it). Without performance_schema the processlist's states are the only
metadata-lock signal; Table_locks_waited counts table-level locks only (LOCK TABLES, Aria, MyISAM)."""

from __future__ import annotations

from bench_dsl.attribution.model import Evidence, Finding, NoSignal, Outcome, RuledOut, r3
from bench_dsl.attribution.window import LOCK_STATES, PROCESSLIST, Rule, Window, pct

CLASS = "table_locks"
# ATTRIBUTION.md, rules to start from (table / metadata locks): >= 0.3 of sampled sessions in a
# lock-waiting state
WAITING = 0.3
# the disk's gate (rules/disk.OTHER_OF_ACTIVE): most of the sessions in the server off CPU
OFF_CPU = 0.5


def judge(w: Window) -> Outcome:
    states = w.s.numbers(PROCESSLIST, "states")
    sampled = w.s.num(PROCESSLIST, "active_mean")
    waited = w.s.per_s("table_locks_waited")
    if not isinstance(w.s.get(PROCESSLIST, "states"), dict) or not sampled:
        if waited:
            return Finding(CLASS, None, (Evidence("table_locks_waited", waited, "/s", 0.0, corroborates=True,
                                                  note="table-level locks only; the processlist was not sampled"),),
                           f"table locks ({waited:.1f} waits/s)")
        return NoSignal(CLASS, "no signal: metadata locks show only in the processlist's states (sample "
                               "information_schema.PROCESSLIST, or turn performance_schema on)")
    each = {s: v for s, v in states.items() if s in LOCK_STATES}
    frac = r3(min(1.0, sum(each.values()) / sampled)) or 0.0
    if frac < WAITING:
        return RuledOut(CLASS, "lock_waiting_of_sampled", frac, "of sampled sessions",
                        f"not table or metadata locks: {pct(frac)} of sampled sessions waited for one",
                        f"table locks ({pct(frac)} waiting)", WAITING)
    top = max(each, key=lambda k: each[k])
    n = w.profile.sessions_in_flight
    evidence = [Evidence("lock_waiting_of_sampled", frac, "of sampled sessions", WAITING, corroborates=True, note=top)]
    if waited is not None:
        evidence.append(Evidence("table_locks_waited", waited, "/s", 0.0, corroborates=waited > 0))
    # the time profile agrees: a session waiting for a table's lock is running in the server and
    # off CPU (a metadata lock is not a row lock: Innodb_row_lock_time does not count it)
    if (off := w.profile.of_active(w.profile.other_share)) is not None:
        evidence.append(Evidence("other_of_active", off, "of running sessions", OFF_CPU, corroborates=off >= OFF_CPU,
                                 note="in the server, neither on CPU nor on a row lock"))
    share = None if not n else r3(min(1.0, sum(each.values()) / n))
    return Finding(CLASS, share, tuple(evidence), f"table or metadata locks ({pct(frac)} of sessions '{top}')")


RULE = Rule(CLASS, "table or metadata locks", judge)
