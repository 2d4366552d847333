"""Named locks: sessions waiting in GET_LOCK for a lock another session holds, the application's
own serialization (a job queue's lock, a migration's, a "one writer" rule). The server counts no
wait for them anywhere but the processlist's state ("User lock"): no row lock time, no table lock."""

from __future__ import annotations

from bench_dsl.attribution.model import NoSignal, Outcome
from bench_dsl.attribution.rules.table_locks import waiting
from bench_dsl.attribution.window import USER_LOCK_STATES, Rule, Window

CLASS = "user_locks"


def judge(w: Window) -> Outcome:
    outcome = waiting(w, CLASS, USER_LOCK_STATES, "GET_LOCK's named locks")
    return outcome or NoSignal(CLASS, "no signal: a GET_LOCK's waiters show only in the processlist's states "
                                      "(sample information_schema.PROCESSLIST)")


RULE = Rule(CLASS, "named locks (GET_LOCK)", judge)
