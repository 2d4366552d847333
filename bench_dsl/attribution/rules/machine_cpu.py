"""The machine's CPU, shared: client and server on one machine, every core busy, and neither at its
own limit. Each side waits for a core the other holds: the server's run queue and the client's
scheduling lag both grow, so neither "server CPU" nor "client" alone is the answer."""

from __future__ import annotations

from bench_dsl.attribution.model import Evidence, Finding, NoSignal, Outcome, RuledOut, r3
from bench_dsl.attribution.rules.server_cpu import BUSY, at_quota, queue_share, saturation_signs
from bench_dsl.attribution.window import Rule, Window, pct

CLASS = "machine_cpu"
# ATTRIBUTION.md, rules to start from (machine CPU, shared): "all cores busy"; 90%, as the server's
# own limit (server_cpu.BUSY), leaves the host's own few % of housekeeping
HOST_BUSY_PCT = 90.0
# The client's limits as bench_dsl.engine.client_limit holds them (the engine is a floor above this
# package, so not imported; tests/unit/test_attribution.py holds the two equal): a process at 90%
# of a core is out of CPU; a p90 lag of 10 ms is a process waiting for a core
CLIENT_SATURATED = 0.9
CLIENT_LAG_MS = 10.0
# "shared by client and server": their CPU together at least this share of the host's busy time.
# Not in ATTRIBUTION.md, ours: a host busy with other work is a limit only when a side waits for a
# core (a recorded run of sleeping user locks on a machine busy with other runs showed 96% busy
# with the server at 5% and the client at 8%, and the CPU was not what held it)
THEIRS = 0.5


def _client_at_limit(w: Window) -> str | None:
    busy = [(n, v) for n, v in w.s.numbers("client_cpu_by_process").items() if v >= 100 * CLIENT_SATURATED]
    if busy:
        name, v = max(busy, key=lambda kv: kv[1])
        return f"its {name} process used {v:.0f}% of a core"
    client, cores = w.s.cpu("client"), w.ctx.cores
    if client is not None and cores and w.ctx.client_cores:
        used = client * cores / 100.0
        if used >= CLIENT_SATURATED * w.ctx.client_cores:
            return f"it used {used:.1f} of the {w.ctx.client_cores:g} cores it may use"
    return None


def between_transactions(w: Window) -> float:
    """The share of the users' time between transactions, by the client's own clock (Little's law:
    tps x mean latency sessions were inside one): where a client that waits for a core loses it.
    Threads_running, a reading or two a second, can put far more outside the server: a run whose
    users waited 87% of the time for a metadata lock showed 66% outside by it, none by this."""
    n, tps, lat = w.profile.sessions_in_flight, w.s.tps, w.s.latency_avg_ms()
    if not n or tps is None or lat is None:
        return 0.0
    return max(0.0, 1.0 - tps * lat / 1000.0 / n)


def judge(w: Window) -> Outcome:
    host = w.s.cpu("host")
    if w.ctx.shared_machine is None or host is None:
        return NoSignal(CLASS, "no signal: whether client and server share a machine, or the host's CPU, is not known")
    if not w.ctx.shared_machine:
        return RuledOut(CLASS, "shared_machine", 0.0, "", "not the machine's CPU, shared: the client runs on "
                        "another machine", "the shared machine's CPU (client elsewhere)")
    if host < HOST_BUSY_PCT:
        return RuledOut(CLASS, "cpu.host", host, "%", f"not the machine's CPU: it was {host:.0f}% busy",
                        f"the machine's CPU ({host:.0f}% busy)", HOST_BUSY_PCT)
    util = w.cpu_util()
    if util is not None and (util >= BUSY or at_quota(w, util)):
        return RuledOut(CLASS, "cpu.server", r3(util), "of allowed cores", "not the machine's CPU, shared: the "
                        f"server was at its own limit ({pct(util)} of the cores it may use)",
                        "the shared machine's CPU (the server at its own limit)", BUSY)
    if (own := _client_at_limit(w)) is not None:
        return RuledOut(CLASS, "cpu.client", w.s.cpu("client"), "%", "not the machine's CPU, shared: the client "
                        f"was at its own limit ({own})", "the shared machine's CPU (the client at its own limit)")
    lag, client = w.s.client_lag_p90(), w.s.cpu("client")
    theirs = (w.s.cpu("server") or 0.0) + (client or 0.0)
    shared = theirs >= THEIRS * host
    waits = [*saturation_signs(w)]
    if lag is not None:
        waits.append(Evidence("client_lag_ms.p90", lag, "ms", CLIENT_LAG_MS, corroborates=lag >= CLIENT_LAG_MS,
                              note="the client waiting for a core"))
    sides = f"the server {pct(util)} of its cores, the client {'?' if client is None else f'{client:.0f}%'}"
    if not shared and not any(e.corroborates for e in waits):
        why = f"the host was {host:.0f}% busy, mostly with other work ({sides})"
        if not waits:
            return NoSignal(CLASS, f"no signal: {why}, and whether either waited for a core is not recorded")
        return RuledOut(CLASS, "cpu.host", host, "%", f"not the machine's CPU: {why}, and neither waited for a core",
                        "the machine's CPU (busy with other work, nobody waiting)", HOST_BUSY_PCT)
    evidence = (
        Evidence("cpu.host", host, "%", HOST_BUSY_PCT, baseline=w.b.cpu("host") if w.b else None, corroborates=shared,
                 note=f"client and server {theirs:.0f}% of it"),
        *waits,
        Evidence("cpu.server", None if util is None else r3(util), "of allowed cores", BUSY, "<",
                 corroborates=False, note="the server short of its own limit"),
    )
    p = w.profile
    outside = p.outside_share or 0.0
    if not shared:
        # busy with other work, the time outside the server is the CPU's only as far as the users
        # were outside a transaction: the rest is the server's (a lock, a disk) however few
        # Threads_running saw
        outside = min(outside, between_transactions(w))
    share = None if p.cpu_share is None else r3(min(1.0, p.cpu_share + queue_share(w) + outside))
    how = "shared by client and server" if shared else "busy with other work"
    return Finding(CLASS, share, evidence, f"the machine's CPU, {how} ({host:.0f}% busy: {sides})")


# At the checkpoint's maximum MariaDB's writers wait on the page flush and its page cleaner flushes
# at full speed: with a 4M redo log and its writes throttled, the server burned 1.2 to 1.5 cores
# while tps fell to 180, its threads 3.5 waiting for a core, on a machine another engineer's work
# kept busy (tests/fixtures/bottleneck/redo-log.bench). The CPU there is the redo log's symptom.
RULE = Rule(CLASS, "the machine's CPU, shared", judge, symptom_of=("redo_log",))
