"""The client: bench-dsl itself out of CPU, or waiting for a core. The engine's probe
(bench_dsl.engine.client_limit) already judges that; this rule takes its verdict, as the caller
passes it, and adds the time profile's view: sessions mostly outside the server."""

from __future__ import annotations

from bench_dsl.attribution.model import Evidence, Finding, NoSignal, Outcome, RuledOut, r3
from bench_dsl.attribution.window import Rule, Window, pct

CLASS = "client"
# ATTRIBUTION.md, rules to start from (client): "... and A/N < 0.5"
ACTIVE_BELOW = 0.5


def judge(w: Window) -> Outcome:
    client, lag = w.s.cpu("client"), w.s.client_lag_p90()
    if not w.ctx.client_probed:
        return NoSignal(CLASS, "no signal: the engine's client probe (client_limit) did not run on this step")
    outside = w.profile.outside_share
    active = None if outside is None else r3(1.0 - outside)
    seen = f"CPU {client:.0f}% of the machine" if client is not None else "CPU not seen"
    if lag is not None:
        seen += f", scheduling lag p90 {lag:.1f} ms"
    if w.ctx.client_limit is None:
        return RuledOut(CLASS, "cpu.client", client, "%",
                        f"not the client: its probe found it short of nothing ({seen})", f"the client ({seen})")
    evidence = (
        Evidence("client_limit", 1.0, "", note=w.ctx.client_limit, corroborates=True),
        Evidence("active_share", active, "of sessions in flight", ACTIVE_BELOW, "<",
                 corroborates=active is not None and active < ACTIVE_BELOW,
                 note="sessions in the server (A/N): the rest of their time was the client's or the network's"),
        Evidence("cpu.client", client, "%"),
        Evidence("client_lag_ms.p90", lag, "ms"),
    )
    return Finding(CLASS, outside, evidence,
                   f"bench-dsl itself ({pct(outside)} of the sessions' time outside the server)")


RULE = Rule(CLASS, "the client", judge)
