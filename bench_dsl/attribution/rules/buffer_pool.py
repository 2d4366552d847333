"""The buffer pool: too small for the pages the load touches, so transactions read from disk.
Demand reads are Innodb_buffer_pool_reads less the read-ahead's; Innodb_buffer_pool_wait_free
rising says the pool is too small for the write set too. ATTRIBUTION.md asks for a disk sign
besides: here it is a second corroboration, not a condition, because a pool too small in front of
a fast disk (a virtual one, the host's page cache behind it) still costs each transaction a read,
and the disk shows nothing.

The lock holders' misses: a transaction that holds a row lock while it reads a page from disk (its
undo log's, a hot page the pool evicted: an 8M pool turns over its old sublist in milliseconds,
before innodb_old_blocks_time lets a hot page in) makes every session behind it wait too. So here a
row lock wait counts as time off CPU, and row locks are listed as a symptom of the pool's misses
(registry: row_locks' symptom_of): examples/what-breaks-first.bench's 8M configuration at 32 users
had 59% of running sessions on row locks, 1.6 reads from disk a transaction, and 4% on CPU
(tests/fixtures/attribution-wbf-8m.json); its 512M one, the same hot rows, no such waits."""

from __future__ import annotations

from bench_dsl.attribution.model import Evidence, Finding, NoSignal, Outcome, RuledOut, r3
from bench_dsl.attribution.rules.disk import off_cpu_gate, signs
from bench_dsl.attribution.window import Rule, Step, Window

CLASS = "buffer_pool"
# ATTRIBUTION.md, rules to start from (buffer pool): other >= 0.5 of A (disk.OTHER_OF_ACTIVE),
# demand reads per transaction >= 1 or >= 10x B, with a disk sign. 1 was too strict for a one-
# statement transaction: an 8M pool under random point reads of a 35 MB table (the index's upper
# pages stay in it, the leaf misses) measured 0.97 to 0.99 reads a transaction at a 68% hit ratio,
# tests/fixtures/attribution-small-pool.json. Half a read each: most transactions wait on the disk.
READS_PER_TX = 0.5
READS_RISE = 10.0


def reads_per_tx(s: Step) -> float | None:
    reads, tps = s.per_s("innodb_buffer_pool_reads"), s.tps
    if reads is None or not tps:
        return None
    ahead = s.per_s("innodb_buffer_pool_read_ahead") or 0.0
    return max(0.0, reads - ahead) / tps


def judge(w: Window) -> Outcome:
    rpt = reads_per_tx(w.s)
    if rpt is None:
        return NoSignal(CLASS, "no signal: the result records no Innodb_buffer_pool_reads, or no transaction completed")
    b_rpt = reads_per_tx(w.b) if w.b is not None else None
    hit = w.s.num("server_status", "buffer_pool_hit_ratio_pct")
    seen = f"{rpt:.2g} reads from disk per transaction" + ("" if hit is None else f", hit ratio {hit:.1f}%")
    rose = bool(b_rpt) and rpt >= READS_RISE * (b_rpt or 0.0)
    if rpt < READS_PER_TX and not rose:
        return RuledOut(CLASS, "buffer_pool_reads_per_tx", r3(rpt), "reads/transaction", f"not the buffer pool: {seen}",
                        f"the buffer pool ({rpt:.2g} reads per transaction)", READS_PER_TX)
    gate = off_cpu_gate(w, CLASS, "the buffer pool", seen, row_locks_too=True)
    if isinstance(gate, RuledOut):
        return gate
    wait_free = w.s.per_s("innodb_buffer_pool_wait_free")
    disk = [e for e in signs(w) if e.corroborates]
    evidence = [
        Evidence("buffer_pool_reads_per_tx", r3(rpt), "reads/transaction", READS_PER_TX, baseline=r3(b_rpt),
                 corroborates=True, note="demand reads (Innodb_buffer_pool_reads - read_ahead) per transaction"),
        *([Evidence("innodb_buffer_pool_wait_free", wait_free, "/s", 0.0, corroborates=wait_free > 0,
                    note="waits for a free page: the pool too small for the write set")]
          if wait_free is not None else []),
        # one sign of the disk's counts as one corroboration however many it shows: they are the
        # disk's evidence, listed under its own finding
        *([Evidence(disk[0].figure, disk[0].value, disk[0].unit, disk[0].limit, disk[0].op, disk[0].baseline,
                    True, "the misses reach a disk that shows them")] if disk else []),
        *([gate] if gate else []),
    ]
    return Finding(CLASS, w.other_share(), tuple(evidence), f"the buffer pool ({seen})")


RULE = Rule(CLASS, "the buffer pool", judge)
