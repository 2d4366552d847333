"""The redo log and its checkpoint: the log too small for the write rate, so InnoDB flushes pages
early (checkpoint age >= 7/8 of its maximum) and, at the maximum, makes writers wait
(mtr0mtr.cc, PAGE_FLUSH_SYNC): throughput dips. Innodb_log_waits is the log *buffer*, not this."""

from __future__ import annotations

from bench_dsl.attribution.model import Evidence, Finding, NoSignal, Outcome, RuledOut, r3
from bench_dsl.attribution.window import Rule, Step, Window, pct

CLASS = "redo_log"
# ATTRIBUTION.md, rules to start from (redo / checkpoint): age/max >= 0.875 in half of S's
# intervals, and intervals at >= 1.0 coincide with tps dips (here: the step had a stall)
PRE_FLUSH = 0.875
HALF = 0.5
SYNC = 1.0
STALL_S = 1.0  # a stall this long is a dip (the result's stall_total_s counts those of 1 s or more)


def ratios(s: Step) -> tuple[list[float], str]:
    """Checkpoint age over its maximum at each reading of the step (or its one end value)."""
    top = s.value("innodb_checkpoint_max_age")
    ages = s.readings("innodb_checkpoint_age")
    source = "readings"
    if not ages and (end := s.value("innodb_checkpoint_age")) is not None:
        ages, source = [end], "one reading"
    return ([a / top for a in ages] if top else []), source


def judge(w: Window) -> Outcome:
    got, source = ratios(w.s)
    if not got:
        return NoSignal(CLASS, "no signal: the result records no Innodb_checkpoint_age and "
                               "Innodb_checkpoint_max_age (MariaDB 10.5 and later have them)")
    peak = max(got)
    near = sum(r >= PRE_FLUSH for r in got) / len(got)
    b_got = ratios(w.b)[0] if w.b is not None else []
    b_near = sum(r >= PRE_FLUSH for r in b_got) / len(b_got) if b_got else None
    if near < HALF:
        return RuledOut(CLASS, "checkpoint_age_ratio", r3(peak), "of max", f"not the redo log: checkpoint age at most "
                        f"{pct(peak)} of its maximum", f"the redo log (checkpoint age {pct(peak)} of max)", PRE_FLUSH)
    stall = max(w.s.num("stall_s") or 0.0, w.s.num("stall_total_s") or 0.0)
    evidence = (
        Evidence("checkpoint_age_near_max", r3(near), "of readings", HALF, baseline=r3(b_near), corroborates=True,
                 note=f"readings at >= {PRE_FLUSH:g} of the maximum ({source}): pages flushed early"),
        Evidence("checkpoint_age_ratio", r3(peak), "of max", SYNC, corroborates=peak >= SYNC and stall >= STALL_S,
                 note="at the maximum writers wait; it counts with a stall in the step (a dip in tps)"),
        Evidence("stall_s", stall, "s", STALL_S, corroborates=False),
    )
    return Finding(CLASS, w.other_share(), evidence,
                   f"the redo log (checkpoint age past 7/8 of its maximum in {pct(near)} of readings)")


RULE = Rule(CLASS, "the redo log", judge)
