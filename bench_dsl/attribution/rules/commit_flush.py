"""The commit flush: each commit waits for the redo log's fsync (innodb_flush_log_at_trx_commit =
1, sync_binlog = 1), and the device's flushes are slow or always busy. The device's flush time is
/proc/diskstats' fields 19-20 (flushes completed, ms flushing): without it, fsyncs per second alone
cannot tell a slow flush from a fast one."""

from __future__ import annotations

from bench_dsl.attribution.model import Evidence, Finding, NoSignal, Outcome, RuledOut, r3
from bench_dsl.attribution.rules import disk
from bench_dsl.attribution.window import Rule, Step, Window, pct

CLASS = "commit_flush"
# ATTRIBUTION.md, rules to start from (commit flush): flush busy >= 0.7 of wall time, or flush
# latency >= 3x B, while cpu < 0.5 of A
FLUSH_BUSY = 0.7
FLUSH_RISE = 3.0
CPU_OF_ACTIVE_BELOW = 0.5
# the disk's "some" I/O pressure (rules/disk.IO_PRESSURE_PCT): a flush slowed above the device
IO_PRESSURE_PCT = disk.IO_PRESSURE_PCT


def flush_busy(s: Step) -> float | None:
    """The share of wall time the device was flushing: recorded, else fsyncs/s x flush latency."""
    if (busy := s.num("disk", "flush_busy_pct")) is not None:
        return busy / 100.0
    fsyncs, ms = s.per_s("innodb_data_fsyncs"), s.num("disk", "flush_ms")
    return None if fsyncs is None or ms is None else fsyncs * ms / 1000.0


def committed(s: Step) -> float | None:
    """Commits a second: Com_commit, else (autocommit statements count in no Com_commit) the write
    statements', else every transaction's."""
    if commit := s.per_s("com_commit"):
        return commit
    writes = sum(v for k in ("com_insert", "com_update", "com_delete", "com_replace") if (v := s.per_s(k)))
    return writes or s.tps


def judge(w: Window) -> Outcome:
    fsyncs = w.s.per_s("innodb_data_fsyncs")
    if fsyncs is None:
        return NoSignal(CLASS, "no signal: the result records no Innodb_data_fsyncs")
    if fsyncs <= 0:
        return RuledOut(CLASS, "innodb_data_fsyncs", fsyncs, "/s", "not commit flush: no fsyncs",
                        "commit flush (no fsyncs)")
    busy, ms, io = flush_busy(w.s), w.s.num("disk", "flush_ms"), w.pressure("io")
    if busy is None and ms is None and io is None:
        return NoSignal(CLASS, f"no signal: {fsyncs:.0f} fsyncs/s, but the result records no flush latency "
                               "(disk.flush_ms, from /proc/diskstats fields 19-20) nor I/O pressure to tell how "
                               "long commits waited")
    p = w.profile
    cpu_of_active = p.of_active(p.cpu_share)
    if cpu_of_active is not None and cpu_of_active >= CPU_OF_ACTIVE_BELOW:
        return RuledOut(CLASS, "cpu_of_active", cpu_of_active, "of running sessions",
                        f"not commit flush: {pct(cpu_of_active)} of running sessions were on CPU",
                        f"commit flush ({pct(cpu_of_active)} of running sessions on CPU)", CPU_OF_ACTIVE_BELOW)
    b_ms = w.b.num("disk", "flush_ms") if w.b is not None else None
    rise = None if not b_ms else r3(FLUSH_RISE * b_ms)
    commits = committed(w.s)
    per_fsync = None if not commits else r3(commits / fsyncs)
    n = p.sessions_in_flight
    waited = per_fsync is not None and n is not None and per_fsync <= n
    slow = [
        Evidence("flush_busy", r3(busy), "of wall time", FLUSH_BUSY, baseline=r3(flush_busy(w.b)) if w.b else None,
                 corroborates=busy is not None and busy >= FLUSH_BUSY),
        Evidence("disk.flush_ms", ms, "ms", rise, baseline=b_ms, corroborates=ms is not None and rise is not None
                 and ms >= rise, note=f"{FLUSH_RISE:g}x the baseline's"),
    ]
    if io is not None:
        slow.append(Evidence("pressure.io.some", io, "% of time", IO_PRESSURE_PCT, corroborates=io >= IO_PRESSURE_PCT,
                             note="a flush held back above the device (a cgroup's I/O limit) shows only here"))
    evidence = (*slow, Evidence("commits_per_fsync", per_fsync, "commits/fsync", None if n is None else r3(n), "<",
                                corroborates=waited, note="at most one commit per session in flight to an fsync: "
                                "each commit waited for one (not so without a flush a commit: far more)"))
    seen = (f"flush busy {pct(busy)} of the time" if busy is not None else
            f"I/O pressure {io:.0f}%" if io is not None else "flush time not known")
    seen += "" if ms is None else f", {ms:.1f} ms a flush"
    if not waited or not any(e.corroborates for e in slow):
        why = seen if waited or per_fsync is None else f"{per_fsync:.0f} commits an fsync: commits do not wait for one"
        return RuledOut(CLASS, "flush_busy", r3(busy), "of wall time", f"not commit flush: {why}",
                        f"commit flush ({why})", FLUSH_BUSY)
    # only the transactions that commit a write wait for a flush: the reads of a mix do not
    other, tps = w.other_share(), w.s.tps
    share = None if other is None else r3(other * min(1.0, commits / tps) if commits and tps else other)
    return Finding(CLASS, share, evidence, f"the commit flush ({seen}, {fsyncs:.0f} fsyncs/s, "
                                                     f"{per_fsync:.1f} commits each)")


RULE = Rule(CLASS, "the commit flush", judge)
