"""The network: sessions mostly outside the server while the client is not busy, and the round
trips a large part of a transaction's time (or the link near its speed). Retransmits are its
errors. The round trip is the least of a step's ping (COM_PING) on the coordinator's own connection
(network.rtt_ms); a delaying TCP proxy in the tests stands in for a slow network."""

from __future__ import annotations

from bench_dsl.attribution.model import Evidence, Finding, NoSignal, Outcome, RuledOut, r3
from bench_dsl.attribution.window import NETWORK, SERVER_SCHED, Rule, Window, pct

CLASS = "network"
# ATTRIBUTION.md, rules to start from (network): A/N < 0.5, client not busy, round trip x
# statements per transaction >= 0.3 of a transaction's latency, or bytes near the link's speed
ACTIVE_BELOW = 0.5
RTT_OF_LATENCY = 0.3
# "near the link's speed": not in ATTRIBUTION.md, a starting point of ours
LINK_BUSY = 0.9
# Not in ATTRIBUTION.md, ours: a round trip under this is no wire's. Through the loopback, from
# Python's driver, a round trip took 0.1 to 0.2 ms here: a point select's whole time is of that order,
# and that time is the two sides' CPU, which the CPU rules weigh
RTT_FLOOR_MS = 0.5
# Ours: the server's threads waiting this long for a core a second (schedstat's run delay) make the
# ping wait too, so its round trip is the CPU's queue, not a wire's: provoked runs at the server's
# own CPU limit and on a machine whose CPU client and server filled took 0.5 to 9.8 ms round trips
# with 2.3 to 14 threads waiting; through a 4 ms link with the server idle, 0.03 to 0.6 waiting
RTT_RUN_DELAY = 1.0


def judge(w: Window) -> Outcome:
    outside = w.profile.outside_share
    if outside is None:
        return NoSignal(CLASS, "no signal: the time outside the server needs Threads_running's mean")
    active = r3(1.0 - outside)
    if active is not None and active >= ACTIVE_BELOW:
        return RuledOut(CLASS, "active_share", active, "of sessions in flight", f"not the network: sessions spent "
                        f"{pct(active)} of their time in the server", f"the network ({pct(outside)} of time outside "
                        "the server)", ACTIVE_BELOW)
    if w.ctx.client_limit is not None:
        return RuledOut(CLASS, "client_limit", 1.0, "", "not the network: the time outside the server is the "
                        "client's own (its probe found it the limit)", "the network (the client was busy)")
    rtt, bytes_s, link = (w.s.num(NETWORK, k) for k in ("rtt_ms", "bytes_per_s", "link_bytes_per_s"))
    if rtt is None and (bytes_s is None or not link):
        return NoSignal(CLASS, f"no signal: {pct(outside)} of the sessions' time was outside the server and the "
                               "client was not busy, but the result records no round trip (network.rtt_ms) to tell "
                               "the network from pacing")
    tps, qps, lat = w.s.tps, w.s.num("qps"), w.s.latency_avg_ms()
    per_tx = qps / tps if qps and tps else 1.0
    rtt_part = None if rtt is None or not lat else r3(rtt * per_tx / lat)
    queue = w.s.num(SERVER_SCHED, "run_delay_s_per_s")
    cpu_queue = queue is not None and queue >= RTT_RUN_DELAY
    wire = rtt is not None and rtt >= RTT_FLOOR_MS and not cpu_queue
    not_wire = ("" if wire or rtt is None else
                f": the server's threads waited for a core ({queue:.1f} at a time), and so did the ping" if cpu_queue
                else f": under {RTT_FLOOR_MS:g} ms, no wire's")
    busy = None if bytes_s is None or not link else r3(bytes_s / link)
    retrans = w.s.num(NETWORK, "retransmits_per_s")
    evidence = [
        Evidence("active_share", active, "of sessions in flight", ACTIVE_BELOW, "<", corroborates=True),
        Evidence("rtt_of_latency", rtt_part, "of a transaction's time", RTT_OF_LATENCY,
                 corroborates=wire and rtt_part is not None and rtt_part >= RTT_OF_LATENCY,
                 note=f"round trip {rtt} ms x {per_tx:.1f} statements a transaction" + not_wire),
        Evidence("link_busy", busy, "of the link's speed", LINK_BUSY,
                 corroborates=busy is not None and busy >= LINK_BUSY),
    ]
    if retrans is not None:
        evidence.append(Evidence("network.retransmits_per_s", retrans, "/s", 0.0, corroborates=retrans > 0))
    if not any(e.corroborates for e in evidence[1:3]):
        return RuledOut(CLASS, "rtt_of_latency", rtt_part, "of a transaction's time", "not the network: round trips "
                        f"were {pct(rtt_part)} of a transaction's time", f"the network (round trips {pct(rtt_part)})",
                        RTT_OF_LATENCY)
    return Finding(CLASS, outside, tuple(evidence),
                   f"the network (round trips {pct(rtt_part)} of a transaction's time)")


RULE = Rule(CLASS, "the network", judge)
