"""What breaks first (issue 41): at a step, name the resource that ran out, with its evidence and
what was ruled out. Pure: plain data in (a step row of a result, the steps before it, a Context),
a Diagnosis out; no I/O, and nothing above bench_dsl.core. docs: ../shared/ATTRIBUTION.md is the
method and the source of every threshold.

    diagnose.attribute(step, earlier, Context(...)) -> Diagnosis      .to_json() / Diagnosis.from_json()

Modules:
    model      Evidence, Finding, RuledOut, NoSignal, Profile, Diagnosis, and their JSON
    window     Step (a row read safely), Context, Window (what a rule sees), Rule, the baseline B
    profile    the time profile by Little's law: N, A, outside / cpu / row lock / other shares
    rules/     one module per class: its signals, thresholds (named, with their source) and words
    registry   the classes the diagnosis weighs, one line each
    diagnose   ranks the findings, sets the confidence, writes the sentence

What each rule reads. server_status variables are lower case, as the result records them
({value, grew, per_s}); a gauge may carry "mean" or "readings" (see below). "extra" figures are
top-level keys of the step row (window.py names them): the result records pressure and
server_sched (a server on this machine: bench_dsl.measure.cpu.Waits), processlist and network.rtt_ms
(bench_dsl.measure.processlist, read with the status); not yet disk.queue, disk.flush_ms,
disk.flush_busy_pct, lock_waits, thread_pool, network's bytes and retransmits. A rule whose figures
are absent says "no signal", and is neither a finding nor ruled out.

    client        cpu.client, client_lag_ms; Context.client_limit (bench_dsl.engine.client_limit.why)
    server_cpu    cpu.server with Context.cores / allowed_cores; extra: pressure.cpu.some,
                  server_sched.run_delay_s_per_s, server_sched.throttled_s_per_s
    machine_cpu   cpu.host, cpu.client, client_cpu_by_process, client_lag_ms, Context.shared_machine;
                  the server_cpu extras
    disk          disk.util_pct, disk.await_ms (S against B); extra: disk.queue (requests in flight,
                  /proc/diskstats field 14 as iostat's aqu-sz), pressure.io.some
    commit_flush  innodb_data_fsyncs, com_commit (or the write statements'), tps; extra: disk.flush_ms
                  (ms a flush, fields 19-20), disk.flush_busy_pct, pressure.io.some
    redo_log      innodb_checkpoint_age (readings), innodb_checkpoint_max_age; stall_s, stall_total_s
    buffer_pool   innodb_buffer_pool_reads, innodb_buffer_pool_read_ahead, innodb_buffer_pool_wait_free,
                  buffer_pool_hit_ratio_pct, tps; the disk's signs
    row_locks     innodb_row_lock_time (the profile), innodb_row_lock_current_waits (mean),
                  innodb_deadlocks; extra: lock_waits {table, index, share} from INNODB_LOCK_WAITS
    table_locks   table_locks_waited; extra: processlist {samples, active_mean, states: {state: mean
                  sessions}} from information_schema.PROCESSLIST, the Sleep sessions and the sampler left
                  out (its lock waiters are also taken out of the disk's and the pool's share)
    user_locks    processlist states "User lock" (GET_LOCK's waiters, taken out of the disk's and the
                  pool's share like a table lock's)
    connections   errors_by_code["1040"], connection_errors_max_connections, threads_connected,
                  Context.refused / max_connections; extra: thread_pool {samples, queued_share,
                  queue_mean} from information_schema.THREAD_POOL_GROUPS
    network       the profile's outside share, qps / tps, latency; extra: network {rtt_ms,
                  retransmits_per_s, bytes_per_s, link_bytes_per_s}
    (profile)     threads_running: its mean over the step ("mean", or "readings"); the one value read
                  at the end otherwise, a point sample that holds the confidence to medium

The STATUS variables the engine must start recording (bench_dsl.server.counters.STATUS_DEFAULT has
the rest: Innodb_buffer_pool_reads / _read_requests, Innodb_data_fsyncs, Innodb_row_lock_time /
_waits, Threads_running, Threads_connected, Com_commit):
    Innodb_buffer_pool_read_ahead, Innodb_buffer_pool_wait_free,
    Innodb_checkpoint_age, Innodb_checkpoint_max_age,
    Innodb_row_lock_current_waits, Innodb_deadlocks,
    Table_locks_waited, Connection_errors_max_connections
and, for the gauges Threads_running, Innodb_checkpoint_age and Innodb_row_lock_current_waits, each
reading of the step ("readings", in order) or at least their "mean": the value at the step's end
is one point sample.
"""

from bench_dsl.attribution.diagnose import attribute
from bench_dsl.attribution.model import Diagnosis, Evidence, Finding, NoSignal, Profile, RuledOut
from bench_dsl.attribution.window import Context

__all__ = ["Context", "Diagnosis", "Evidence", "Finding", "NoSignal", "Profile", "RuledOut", "attribute"]
