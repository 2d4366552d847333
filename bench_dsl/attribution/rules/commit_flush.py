"""The commit flush: each commit waits for the redo log's fsync (innodb_flush_log_at_trx_commit =
1, sync_binlog = 1), and the device's flushes are slow or always busy. The device's flush time is
/proc/diskstats' fields 19-20 (flushes completed, ms flushing): without it, fsyncs per second alone
cannot tell a slow flush from a fast one."""

from __future__ import annotations

from bench_dsl.attribution.model import Evidence, Finding, NoSignal, Outcome, RuledOut, r3
from bench_dsl.attribution.window import Rule, Step, Window, pct

CLASS = "commit_flush"
# ATTRIBUTION.md, rules to start from (commit flush): flush busy >= 0.7 of wall time, or flush
# latency >= 3x B, while cpu < 0.5 of A
FLUSH_BUSY = 0.7
FLUSH_RISE = 3.0
CPU_OF_ACTIVE_BELOW = 0.5


def flush_busy(s: Step) -> float | None:
    """The share of wall time the device was flushing: recorded, else fsyncs/s x flush latency."""
    if (busy := s.num("disk", "flush_busy_pct")) is not None:
        return busy / 100.0
    fsyncs, ms = s.per_s("innodb_data_fsyncs"), s.num("disk", "flush_ms")
    return None if fsyncs is None or ms is None else fsyncs * ms / 1000.0


def judge(w: Window) -> Outcome:
    fsyncs = w.s.per_s("innodb_data_fsyncs")
    if fsyncs is None:
        return NoSignal(CLASS, "no signal: the result records no Innodb_data_fsyncs")
    if fsyncs <= 0:
        return RuledOut(CLASS, "innodb_data_fsyncs", fsyncs, "/s", "not commit flush: no fsyncs",
                        "commit flush (no fsyncs)")
    busy, ms = flush_busy(w.s), w.s.num("disk", "flush_ms")
    if busy is None and ms is None:
        return NoSignal(CLASS, f"no signal: {fsyncs:.0f} fsyncs/s, but the result records no flush latency "
                               "(disk.flush_ms, from /proc/diskstats fields 19-20) to tell how long commits waited")
    p = w.profile
    cpu_of_active = p.of_active(p.cpu_share)
    if cpu_of_active is not None and cpu_of_active >= CPU_OF_ACTIVE_BELOW:
        return RuledOut(CLASS, "cpu_of_active", cpu_of_active, "of running sessions",
                        f"not commit flush: {pct(cpu_of_active)} of running sessions were on CPU",
                        f"commit flush ({pct(cpu_of_active)} of running sessions on CPU)", CPU_OF_ACTIVE_BELOW)
    b_ms = w.b.num("disk", "flush_ms") if w.b is not None else None
    rise = None if not b_ms else r3(FLUSH_RISE * b_ms)
    commits = w.s.per_s("com_commit")
    evidence = (
        Evidence("flush_busy", r3(busy), "of wall time", FLUSH_BUSY, baseline=r3(flush_busy(w.b)) if w.b else None,
                 corroborates=busy is not None and busy >= FLUSH_BUSY),
        Evidence("disk.flush_ms", ms, "ms", rise, baseline=b_ms, corroborates=ms is not None and rise is not None
                 and ms >= rise, note=f"{FLUSH_RISE:g}x the baseline's"),
        Evidence("commits_per_fsync", None if commits is None else r3(commits / fsyncs), "commits/fsync",
                 note="group commit: many commits per fsync while the flush is the limit"),
    )
    seen = f"flush busy {pct(busy)} of the time" + ("" if ms is None else f", {ms:.1f} ms a flush")
    if not any(e.corroborates for e in evidence):
        return RuledOut(CLASS, "flush_busy", r3(busy), "of wall time", f"not commit flush: {seen}",
                        f"commit flush ({seen})", FLUSH_BUSY)
    return Finding(CLASS, w.other_share(), evidence, f"the commit flush ({seen}, {fsyncs:.0f} fsyncs/s)")


RULE = Rule(CLASS, "the commit flush", judge)
