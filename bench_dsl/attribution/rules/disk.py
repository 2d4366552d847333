"""The disk: the device under the data and the log busy, queued or slow, while the sessions in the
server are off CPU. %util means nothing on a parallel device (NVMe, virtual): it counts as one sign
only, and a queue, an await risen against B, or I/O pressure make a second. A cgroup's I/O limit
waits above the device: only pressure and await show it."""

from __future__ import annotations

from bench_dsl.attribution.model import Evidence, Finding, NoSignal, Outcome, RuledOut, r3
from bench_dsl.attribution.window import Rule, Window, pct

CLASS = "disk"
# ATTRIBUTION.md, rules to start from (disk): other >= 0.5 of A, and util >= 0.9 or queue >= 2 or
# await >= 3x B, with I/O pressure
OTHER_OF_ACTIVE = 0.5
UTIL_PCT = 90.0
QUEUE = 2.0
AWAIT_RISE = 3.0
# Not in ATTRIBUTION.md, ours: an await risen on a disk this idle is a handful of requests, not a
# queue (a side session's LOCK TABLES held the users off the disk: 0.1 ms to 0.35 ms at 2% util)
AWAIT_UTIL_PCT = 10.0
# not in ATTRIBUTION.md: a starting point of ours, "some" I/O pressure as % of the step's time
IO_PRESSURE_PCT = 10.0


def signs(w: Window) -> list[Evidence]:
    """The busiest disk's utilisation and saturation, and I/O pressure. The buffer pool's rule reads
    them too: misses are its signal only when they reach a disk that shows them."""
    s, b = w.s, w.b
    out = []
    if (util := s.num("disk", "util_pct")) is not None:
        out.append(Evidence("disk.util_pct", util, "%", UTIL_PCT, baseline=b.num("disk", "util_pct") if b else None,
                            corroborates=util >= UTIL_PCT, note=str(s.get("disk", "busiest") or "")))
    if (queue := s.num("disk", "queue")) is not None:
        out.append(Evidence("disk.queue", queue, "requests", QUEUE, corroborates=queue >= QUEUE))
    if (wait := s.num("disk", "await_ms")) is not None:
        base = b.num("disk", "await_ms") if b else None
        limit = None if not base else r3(AWAIT_RISE * base)
        idle = util is not None and util < AWAIT_UTIL_PCT
        out.append(Evidence("disk.await_ms", wait, "ms", limit, baseline=base,
                            corroborates=limit is not None and wait >= limit and not idle,
                            note=f"{AWAIT_RISE:g}x the baseline's" + (f", on a disk {util:.0f}% busy: no sign"
                                                                       if idle and util is not None else "")))
    if (io := w.pressure("io")) is not None:
        out.append(Evidence("pressure.io.some", io, "% of time", IO_PRESSURE_PCT, corroborates=io >= IO_PRESSURE_PCT))
    return out


def off_cpu_gate(w: Window, cls: str, title: str, sign: str, row_locks_too: bool = False) -> RuledOut | Evidence | None:
    """The sessions in the server mostly neither on CPU nor on a row lock, as an I/O wait needs:
    ruled out when they were not, the evidence when they were, None when A is not known.
    `row_locks_too`: a row lock wait counts as off CPU, for a class whose reads the lock holders
    wait on while the others wait for them (the buffer pool's)."""
    other = w.other_of_active()
    if row_locks_too and other is not None:
        other = r3(other + (w.profile.of_active(w.profile.row_lock_share) or 0.0))
    if other is None:
        return None
    where = "off CPU" if row_locks_too else "neither on CPU nor on a row lock"
    if other < OTHER_OF_ACTIVE:
        return RuledOut(cls, "other_of_active", other, "of running sessions",
                        f"not {title}: {sign}, but only {pct(other)} of running sessions were "
                        + ("off CPU" if row_locks_too else "off CPU and off row locks"),
                        f"{title} ({pct(other)} of running sessions off CPU)", OTHER_OF_ACTIVE)
    return Evidence("other_of_active", other, "of running sessions", OTHER_OF_ACTIVE, corroborates=False,
                    note=f"in the server, {where}")


def judge(w: Window) -> Outcome:
    found = signs(w)
    if not found:
        return NoSignal(CLASS, "no signal: the result records no disk figures (a server on another machine "
                               "needs monitor with node_exporter)")
    util, wait = w.s.num("disk", "util_pct"), w.s.num("disk", "await_ms")
    seen = ", ".join(x for x in (None if util is None else f"util {util:.0f}%",
                                 None if wait is None else f"await {wait:.1f} ms") if x) or "no disk figure"
    if not any(e.corroborates for e in found):
        return RuledOut(CLASS, "disk.util_pct", util, "%", f"not disk: {seen}", f"disk ({seen})", UTIL_PCT)
    gate = off_cpu_gate(w, CLASS, "disk", seen)
    if isinstance(gate, RuledOut):
        return gate
    device = w.s.get("disk", "busiest")
    return Finding(CLASS, w.other_share(), (*found, *([gate] if gate else [])),
                   f"disk{f' {device}' if device else ''} ({seen})")


RULE = Rule(CLASS, "disk", judge, symptom_of=("buffer_pool", "commit_flush", "redo_log"))
