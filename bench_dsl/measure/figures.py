"""The client's figures (bench_dsl.core.figures), declared by what measures them (metrics.py): each
transaction's counts, what every row and the summary hold beside them, and each throughput a
MetricDecl declares (a workload kind's own among them). Latencies (latency_ms) are objects of
percentiles, the schema's "latency"."""

from __future__ import annotations

from bench_dsl.core.figures import Figure, Kind, Side
from bench_dsl.language.metric_decls import CORE_TABLE, MetricDecl, Table

STEP = ("step",)  # Figure.live: a step so far carries it

FIGURES = (
    Figure("count", "", "count", "sum", "client", "tx", "transactions completed", integer=True, required=True,
           live=STEP),
    Figure("errors", "", "count", "sum", "client", "tx", "transactions that failed", integer=True, required=True,
           live=STEP),
    Figure("retries", "", "count", "sum", "client", "tx", "transactions run again after a deadlock or a lock wait "
           "timeout", integer=True, required=True, live=STEP),
    Figure("rollbacks", "", "count", "sum", "workload", "tx", "transactions the workload rolled back on purpose "
           "(TPC-C's 1% of new orders)", integer=True),
    Figure("seconds", "s", "count", "sum", "client", "figures", "the time the figures cover", digits=3, required=True,
           live=STEP),
    Figure("users", "users", "gauge", "max", "client", "figures", "the most users that had a connection in it",
           integer=True, required=True, live=STEP),
    Figure("stall_s", "s", "gauge", "max", "client", "figures", "the longest time, in s, in which some user was "
           "inside a transaction and none of them finished one (gaps between completions, and spans in which no "
           "user was inside, are recorded from 50 ms up); absent when the users' processes did not say", digits=3,
           live=STEP),
    Figure("stall_total_s", "s", "count", "sum", "client", "figures", "the stalls' total: the spans of stall_s's "
           "kind that lasted 1 s or more", digits=3),
    # response-time consistency (bench_dsl.measure.consistency)
    Figure("latency_stddev_ms", "ms", "latency", "recompute", "client", "figures", "the standard deviation, in ms, "
           "of every transaction's response time in it; null when none completed", digits=3, nullable=True,
           title="latency stddev ms"),
    Figure("p99_p50_ratio", "x", "ratio", "recompute", "client", "figures", "p99 over p50 of every transaction's "
           "response time in it: how far the tail stands from the middle; null when none completed", digits=3,
           nullable=True, title="p99/p50"),
    Figure("tps_cv_pct", "%", "ratio", "recompute", "client", "figures", "the coefficient of variation of throughput "
           "across its seconds (each tick of 0.5 s or more): their standard deviation over their mean, in %; null "
           "with fewer than two", digits=2, nullable=True, title="tps CV %"),
)



def client_figures(table: Table) -> tuple[Figure, ...]:
    """What the client measures: FIGURES, and each throughput of `table` (a workload kind's own, as
    the workload's side)."""
    core = {d.name for d in CORE_TABLE}
    return (*FIGURES, *(throughput_figure(d, "client" if d.name in core else "workload")
                        for d in table.measuring("throughput")))


def table_figures(table: Table, unread: tuple[str, ...] = ()) -> tuple[Figure, ...]:
    """Every figure the rows hold by `table`'s declarations: the client's, and each derived from the
    server's status (a plugin's among them); not those derived from what a run does not read
    (`unread`, of MetricDecl.reads: "power" without a power source)."""
    return (*client_figures(table), *(derived_figure(d) for d in table
                                      if d.derive is not None and d.reads not in unread))


def derived_figure(d: MetricDecl) -> Figure:
    """A metric derived from the server's status as a figure of every row: recomputed from the
    merged counters, never summed; null where they do not give it (no transaction, no counter)."""
    kind: Kind = "ratio" if d.measures == "share" else "latency" if d.measures == "latency" else "gauge"
    # the power's are the server machine's (read from its power source), the others the server's own
    return Figure(d.figure_name, d.unit, kind, "recompute", "host" if d.reads == "power" else "server", "figures",
                  d.description or f"{d.heading}, from the server's status ({', '.join(d.status)})", digits=3,
                  nullable=True, title=d.heading, signed=True, live=("tick", "step") if d.live else ())


def throughput_figure(d: MetricDecl, side: Side = "client") -> Figure:
    """A declared throughput as a figure: in every transaction's figures, or, counting one
    transaction always (TPC-C's nopm), in the row's."""
    what = {"transactions": "transactions", "statements": "statements", "committed": "committed transactions"}[d.counts]
    of = f" of {d.transaction}" if d.transaction else ""
    return Figure(d.name, d.unit, "rate", "recompute", side, "figures" if d.transaction else "tx",
                  f"{what}{of} per {'minute' if d.per == 60 else f'{d.per:g} s' if d.per != 1 else 'second'}",
                  digits=1 if d.per >= 60 else 3, required=d.transaction is None, title=d.heading,
                  live=("tick", "step"))
