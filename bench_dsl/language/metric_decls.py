"""Every metric, declared once: the word a condition, `bench compare` and the result use, what it
measures, its unit, what it takes in brackets, how it is judged and how it is shown.

    MetricDecl        one metric (a frozen dataclass)
    CORE              the metrics every workload has, in the order messages list them
    Table             the metrics a reader knows: CORE and the workload kinds' own (Table.of)

Readers iterate the table or look a name up, and keep no list of their own: the conditions
(conditions.py), the grammar's unit words (parser.py builds RATE_UNIT from the throughput units),
the values of environment variables (values.py), the measurements (measure/metrics.py), the server
side's disk readings (server/side.py), the summary's fold (results/fold.py), `bench compare` and its
--help (results/comparison.py, cli/compare.py) and the live screen's headline (tui/render.py). Two
keep names of their own: the result's checks (results/conformance.py) follow schema/result-v1.json, and
the replay (results/replay.py) reads a file without the workloads, hence without their metrics.

A workload kind declares the metrics of its own in its plugin (WorkloadPlugin.metrics: TPC-C's
`nopm`); the language is handed the kinds, and with them their metrics (validate.load), like the
kinds themselves: it never imports the workloads built on it. The floors above the workloads read
the whole table from bench_dsl.workloads.registry.METRICS.

A plugin (bench_dsl.core.plugins) declares metrics too: its METRICS, a figure of the server's derived
from its status among them (MetricDecl.status and .derive: whole from its declaration, like a
throughput). The language is handed them with the kinds.

Adding a metric: a MetricDecl here (or in a plugin), and its computing where its figures are made
(measure/metrics.py: Aggregate.value, and Aggregate.summary for a figure of the result). A
throughput (a count of transactions, statements or committed ones of one transaction, per second
or per minute) needs no more than its declaration: it is computed from it. One that counts
transactions (not statements) is a unit an open-loop rate may be written in too (`rate 20000
nopm`): bench_dsl/language/rate.py turns it into the rate of all transactions by its `per` and the
share of them it counts (its `transaction`, committed or not), which the workload's kind says for
the scenario's mix (WorkloadPlugin.share).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Literal, Protocol

from bench_dsl.language.comparisons import CORE_COMPARISONS, Comparison

# What a metric measures. throughput: transactions or statements per second or minute (a plateau
# judges it; its limit is a plain number or its own unit word, "tps < 100 tps"); latency: a
# transaction's time (a kink judges it); share: a percentage from 0 to 100; time: a duration;
# gauge: a reading of the server or its disks; users: a users count; cost: CPU per transaction
# (a figure of results, no condition names it).
Measures = Literal["throughput", "latency", "share", "time", "gauge", "users", "cost"]
# What a condition writes in its brackets: an optional transaction of the workload, one of `sources`
# (required), any name (status(NAME)), or nothing.
Arg = Literal["transaction", "source", "name", "none"]
# What a condition's limit is: a duration (any time unit, kept as seconds x `seconds_to`), a
# percentage from 0% to 100%, a plain number, a plain number or the metric's own unit word, a users count.
Limit = Literal["time", "percent", "plain", "own", "users", "power"]  # power: W or kW, or a plain number of W


class Energy(Protocol):
    """What the server's machine drew over a window, as its power source read it (bench_dsl.server.power)."""

    @property
    def seconds(self) -> float: ...  # the span the readings cover

    @property
    def joules(self) -> float: ...

    @property
    def max_w(self) -> float: ...  # the highest power read in it


class StatusWindow(Protocol):
    """What a metric derived from the server's status (MetricDecl.derive) is computed over: a
    tick, an interval, a step, the run. Names are the variables' as SHOW GLOBAL STATUS gives them, in
    any case."""

    @property
    def transactions(self) -> float: ...  # completed in its span, every kind (a count scaled to the span)

    def grew(self, name: str) -> float | None: ...  # how much a counter grew in it (None: not read)

    def value(self, name: str) -> float | None: ...  # a variable's value at its end

    def per_second(self, name: str) -> float | None: ...  # a counter's growth per second of it

    def throughput(self, name: str) -> float | None: ...  # a declared throughput over it ("tps", "nopm")

    def energy(self) -> Energy | None: ...  # the server machine's power over it (None: not read)


def watts(w: StatusWindow) -> float | None:
    """The mean power over a window: its energy over the seconds it covers."""
    e = w.energy()
    return e.joules / e.seconds if e is not None and e.seconds > 0 else None


def per_watt(throughput: str) -> Callable[[StatusWindow], float | None]:
    """A throughput per watt of the server's machine (tps per watt is transactions per joule)."""
    def derive(w: StatusWindow) -> float | None:
        rate, power = w.throughput(throughput), watts(w)
        return rate / power if rate is not None and power else None
    return derive


@dataclass(frozen=True, slots=True)
class MetricDecl:
    name: str  # the word a condition and compare's gates write, and the result's key: "tps", "p95", "cpu"
    measures: Measures
    unit: str  # a condition's limit and value: "ms", "tps", "%", "s", "iops", "users", ""
    limit: Limit
    title: str = ""  # a table's row or the live screen's label ("NOPM", "p95 ms"); default: the name
    # the words a message suggests (str.format with label, name, op, left: the condition before its
    # comparison, value): "{left} {op} 250ms", "stall > 1s"
    example: str = "{label} {op} 1000"
    sample: str = ""  # a limit it takes, for a message about an env() holding something else ("20ms")
    # --- what a condition writes ------------------------------------------------------------------
    arg: Arg = "transaction"
    sources: tuple[str, ...] = ()  # arg "source": the ones it takes
    # (message, hint) for a missing or wrong (arg); str.format(name, arg)
    arg_error: tuple[str, str] = ("{name} takes no (name)", "write {name} without brackets")
    # a transaction the workload must have (nopm: new_order), and (message, hint) when it has not
    needs: str | None = None
    needs_error: tuple[str, str] = ("", "")
    condition: bool = True  # False: a figure of results only (compare's CPU per transaction)
    expect_only: bool = False  # judged on the whole run (saturation): in `expect`, never `stop when`
    open_loop: bool = False  # a figure of an open-loop rate's arrivals: a scenario with a `rate` only
    per_second_ok: bool = False  # NAME(x)/s: a server counter as a rate (status)
    # --- what it is in the model (bench_dsl.language.model.Metric) --------------------------------
    metric: str = ""  # Metric.name; default: the name ("latency" for p95, avg ...)
    # Metric.stat: fixed ("p", "avg" ...), or by how the condition is written: "/s" (rate with /s,
    # else value: status), "for" (min over a `for` window, else the last value: replication_lag)
    stat: str | None = None
    percentile: float | None = None
    seconds_to: float = 1.0  # limit "time": seconds times this (disk_await's figure is in ms)
    reads: Literal["", "disks", "power"] = ""  # what the server's side must read: the server host's disks, its power
    wording: str | None = None  # a limit "percent" or "plain" that is wrong: this instead of the usual words
    # --- a throughput, computed from its declaration ---------------------------------------------
    counts: Literal["transactions", "statements", "committed"] = "transactions"  # committed: less rollbacks
    per: float = 1.0  # seconds: 1 per second, 60 per minute
    transaction: str | None = None  # always this transaction's (nopm: new_order): not per transaction
    live: bool = False  # a headline of the live screen's figures
    # --- the results ----------------------------------------------------------------------------
    figure: str = ""  # its name in summary.json's figures and compare's rows; default: the name
    at: tuple[str, ...] = ()  # where a summary's by_users entry holds it; default: (figure,)
    higher_is_better: bool | None = None
    summarized: bool = False  # summary.json folds it over repeats, by users count (at `path`)
    noise: bool = True  # summarized with its noise, which compare judges its differences by
    compared: bool = False  # a row of bench compare's table at each users count
    gated: bool = False  # bench compare --fail-if can name it
    compare_unit: str = ""  # its unit in compare's rows ("tx/s"); default: the unit
    charted: bool = False  # bench report draws it against the load axis (a figure derived from the status is)
    # the report's exhibits per configuration (a study's headline, as the storage brief shows it): the
    # throughput at saturation, and that throughput per watt (TPC-C's nopm, nopm_per_watt)
    exhibit: Literal["", "throughput", "per_watt"] = ""
    # --- a figure of the server's, derived from its status over a window -------------------------
    # The variables it reads (the server's side reads them at every tick) and how it is computed
    # from them: with these, a metric is whole from its declaration, as a throughput is. Every row
    # (interval, step, summary) then holds it under its figure's name, a condition may name it, and
    # the displays that read the table show it (bench_dsl.measure.figures.derived_figure).
    status: tuple[str, ...] = ()
    derive: Callable[[StatusWindow], float | None] | None = None
    description: str = ""  # what it is, for the result's catalog

    @property
    def model_name(self) -> str:
        return self.metric or self.name

    @property
    def figure_name(self) -> str:
        return self.figure or self.name

    @property
    def path(self) -> tuple[str, ...]:
        return self.at or (self.figure_name,)

    @property
    def heading(self) -> str:
        return self.title or self.name

    @property
    def row_unit(self) -> str:
        return self.compare_unit or self.unit


def _latency(name: str, stat: str, percentile: float | None = None, *, summarized: bool = False,
             compared: bool = False) -> MetricDecl:
    return MetricDecl(name, "latency", "ms", "time", title=f"{name} ms", example="{left} {op} 250ms", metric="latency",
                      stat=stat, percentile=percentile, figure=name.replace(".", "_"), higher_is_better=False,
                      at=("latency_ms", name.replace(".", "_")),
                      summarized=summarized, compared=compared, gated=summarized)


def _throughput(name: str, compare_unit: str, per: float = 1.0, **kw: object) -> MetricDecl:
    return MetricDecl(name, "throughput", name, "own", example="{label} {op} {value} {name}", per=per,
                      higher_is_better=True, summarized=True, compare_unit=compare_unit, **kw)  # type: ignore[arg-type]


_DISKS = ("{name}({arg}): the disks of the server's host: {name}(server)", "{name}(server)")

CORE: tuple[MetricDecl, ...] = (
    _latency("p50", "p", 50.0, summarized=True, compared=True),
    _latency("p90", "p", 90.0, summarized=True),
    _latency("p95", "p", 95.0, summarized=True, compared=True),
    _latency("p99", "p", 99.0, summarized=True, compared=True),
    _latency("p99.9", "p", 99.9),
    _latency("avg", "avg"),
    _latency("max", "max"),
    _latency("min", "min"),
    _throughput("tps", "tx/s", live=True, compared=True, gated=True),
    _throughput("tpm", "tx/min", 60.0, live=True, compared=True, gated=True),
    _throughput("qps", "statements/s", counts="statements"),
    MetricDecl("error_rate", "share", "%", "percent", title="errors %", example="{label} {op} 80%",
               figure="error_rate_pct", higher_is_better=False, summarized=True, compared=True, noise=False),
    MetricDecl("cpu", "share", "%", "percent", example="{label} {op} 80%", arg="source",
               sources=("server", "host", "client"),
               arg_error=("cpu({arg}): say whose CPU", "cpu(server), cpu(host) or cpu(client)")),
    MetricDecl("status", "gauge", "", "plain", example="{label} {op} 32", arg="name", per_second_ok=True, stat="/s",
               arg_error=("status(NAME): say which server status variable",
                          "status(Threads_running) > 32, or a counter as a rate: "
                          "status(Innodb_buffer_pool_reads)/s > 5000")),
    MetricDecl("replication_lag", "time", "s", "time", example="replication_lag > 5s", arg="none", stat="for",
               arg_error=("replication_lag is the worst replica's: it takes no (name)", "replication_lag > 5s")),
    MetricDecl("disk_util", "share", "%", "percent", example="disk_util(server) > 90%", arg="source", reads="disks",
               sources=("server",), arg_error=_DISKS,
               wording="disk_util(server) is a percentage from 0% to 100% (of the time the disk was busy)"),
    MetricDecl("disk_iops", "gauge", "iops", "plain", example="disk_iops(server) > 5000", arg="source", reads="disks",
               sources=("server",), arg_error=_DISKS),
    MetricDecl("disk_await", "time", "ms", "time", example="disk_await(server) > 20ms", sample="20ms", arg="source",
               sources=("server",), arg_error=_DISKS, seconds_to=1000.0, reads="disks"),
    MetricDecl("stall", "time", "s", "time", example="stall > 1s", arg="none",
               arg_error=("stall is the whole run's (no user finished a transaction): it takes no (name)",
                          "stall > 1s")),
    # an open-loop rate's arrivals (bench_dsl.measure.arrivals): the share of the rate asked that ran,
    # the share of arrivals that found no free user, the p99 of how late a transaction was sent after
    # it was due, and the share of the pool's users inside a transaction
    MetricDecl("achieved", "share", "%", "percent", title="achieved %", figure="achieved_pct",
               example="achieved < 95%", arg="none", open_loop=True, higher_is_better=True,
               arg_error=("achieved is the whole rate's: it takes no (name)", "achieved < 95%")),
    MetricDecl("dropped", "share", "%", "percent", title="dropped %", figure="dropped_pct",
               example="dropped > 1%", arg="none", open_loop=True, higher_is_better=False,
               arg_error=("dropped counts every arrival: it takes no (name)", "dropped > 1%")),
    MetricDecl("lag", "time", "ms", "time", title="lag p99 ms", example="lag > 5ms", sample="5ms", arg="none",
               open_loop=True, seconds_to=1000.0, higher_is_better=False,
               arg_error=("lag is every arrival's: it takes no (name)", "lag > 5ms")),
    MetricDecl("busy", "share", "%", "percent", title="busy %", figure="busy_pct", example="busy > 90%", arg="none",
               open_loop=True, higher_is_better=False,
               arg_error=("busy is the pool's: it takes no (name)", "busy > 90%")),
    MetricDecl("saturation", "users", "users", "users", title="saturation (users)", example="saturation >= 32 users",
               arg="none", expect_only=True, higher_is_better=True, gated=True,
               arg_error=("saturation is the whole run's (the load at which it saturated): it takes no (name)",
                          "saturation >= 32 users")),
    # figures of results only: response-time consistency (bench_dsl.measure.consistency), lower is better
    MetricDecl("latency_stddev", "time", "ms", "time", title="latency stddev ms", condition=False,
               description="The standard deviation of every transaction's response time",
               figure="latency_stddev_ms", higher_is_better=False, summarized=True, compared=True, charted=True),
    MetricDecl("p99_p50", "gauge", "x", "plain", title="p99/p50", condition=False, figure="p99_p50_ratio",
               description="p99 over p50 of the response time: how far the tail stands from the middle",
               higher_is_better=False, summarized=True, compared=True, charted=True),
    MetricDecl("tps_cv", "share", "%", "percent", title="tps CV %", condition=False, figure="tps_cv_pct",
               description="The coefficient of variation of throughput across the step's seconds (its jitter)",
               higher_is_better=False, summarized=True, compared=True, charted=True),
    # the power the server's machine drew (bench_dsl.server.power, the scenario's `power`): derived over
    # every window from the energy its source read, absent (never 0 W) where none was read
    MetricDecl("power", "gauge", "W", "power", title="power W", example="power(server) > 400W", sample="400W",
               arg="source", sources=("server",), reads="power", figure="power_w", live=True,
               arg_error=("{name}({arg}): the power of the server's machine: {name}(server)", "power(server) > 400W"),
               derive=watts, description="The mean power the server's machine drew, in W", higher_is_better=False,
               summarized=True, compared=True, charted=True),
    MetricDecl("power_max", "gauge", "W", "power", title="power max W", condition=False, reads="power",
               figure="power_max_w", derive=lambda w: None if (e := w.energy()) is None else e.max_w,
               description="The highest power the server's machine drew, as read (a reading's mean over its span), W",
               higher_is_better=False),
    MetricDecl("energy", "gauge", "J", "plain", title="energy J", condition=False, reads="power", figure="energy_j",
               derive=lambda w: None if (e := w.energy()) is None else e.joules,
               description="The energy the server's machine drew over the window, in J"),
    MetricDecl("tx_per_joule", "gauge", "tx/J", "plain", title="tx per joule", condition=False, reads="power",
               derive=per_watt("tps"), description="Transactions per joule the server's machine drew (tps per W)",
               higher_is_better=True, summarized=True, compared=True, charted=True),
    # figures of results only: the CPU each transaction cost (bench_dsl.results.fold.cpu_us_per_tx)
    MetricDecl("server_cpu_us_per_tx", "cost", "µs", "plain", title="server CPU µs/tx", condition=False,
               at=("cpu_us_per_tx", "server"),
               higher_is_better=False, summarized=True, compared=True, compare_unit="µs CPU/tx"),
    MetricDecl("client_cpu_us_per_tx", "cost", "µs", "plain", title="client CPU µs/tx", condition=False,
               at=("cpu_us_per_tx", "client"),
               higher_is_better=False, summarized=True, compared=True, compare_unit="µs CPU/tx"),
)


class Table:
    """Metrics by name, in the order messages list them. A kind's own metric goes after the last of
    the same kind of measure (nopm after qps), so that lists read by kind whoever declared them. With
    the comparisons a condition may write after a metric (plateau, kink, a plugin's own)."""

    __slots__ = ("_all", "_by_name", "comparisons")

    def __init__(self, decls: Iterable[MetricDecl], comparisons: Iterable[Comparison] = CORE_COMPARISONS) -> None:
        self._all = tuple(decls)
        self._by_name = {d.name: d for d in self._all}
        if len(self._by_name) != len(self._all):
            dup = sorted({d.name for d in self._all if sum(e.name == d.name for e in self._all) > 1})
            raise ValueError(f"metrics declared twice: {', '.join(dup)}")
        given = tuple(comparisons)
        self.comparisons = {c.name: c for c in given}
        clash = [c for c in self.comparisons if c in self._by_name or c == "for"]
        if clash or len(self.comparisons) != len(given):
            raise ValueError(f"comparisons declared twice, or named as a metric: {', '.join(clash)}")

    @classmethod
    def of(cls, *extra: Iterable[MetricDecl], core: Iterable[MetricDecl] = CORE,
           comparisons: Iterable[Comparison] = ()) -> Table:
        out = list(core)
        for decl in (d for group in extra for d in group):
            same = [i for i, d in enumerate(out) if d.measures == decl.measures]
            out.insert(same[-1] + 1 if same else len(out), decl)
        return cls(out, (*CORE_COMPARISONS, *comparisons))

    def comparison_words(self) -> list[str]:
        """The words a condition may write after its metric (plateau, kink ...): the grammar's @COMPARISONS@."""
        return list(self.comparisons)

    def __iter__(self) -> Iterator[MetricDecl]:
        return iter(self._all)

    def get(self, name: str) -> MetricDecl | None:
        return self._by_name.get(name)

    def of_model(self, name: str) -> MetricDecl | None:
        """The declaration of a model Metric's name ("tps"; "latency" has several: None)."""
        found = [d for d in self._all if d.model_name == name]
        return found[0] if len(found) == 1 else None

    def figure(self, name: str) -> MetricDecl | None:
        """By the name summary.json and compare give it ("error_rate_pct")."""
        return next((d for d in self._all if d.figure_name == name), None)

    def names(self, *, expect: bool = True) -> list[str]:
        """What a condition can name (in `stop when` when expect is False)."""
        return [d.name for d in self._all if d.condition and (expect or not d.expect_only)]

    def measuring(self, *kinds: Measures) -> list[MetricDecl]:
        return [d for d in self._all if d.measures in kinds]

    def shown(self, flag: Literal["compared", "gated"]) -> dict[str, MetricDecl]:
        """The metrics `bench compare` shows in its table (compared) or lets --fail-if name (gated),
        by their figure's name: throughput first, then latency, cost, shares and users counts."""
        order = ("throughput", "latency", "cost", "share", "users")
        decls = sorted((d for d in self._all if getattr(d, flag)),
                       key=lambda d: order.index(d.measures) if d.measures in order else len(order))
        return {d.figure_name: d for d in decls}

    def throughput_units(self) -> list[str]:
        """The unit words a limit may take after a space ("100 tps"): the grammar's RATE_UNIT."""
        return [d.unit for d in self._all if d.limit == "own"]


CORE_TABLE = Table(CORE)
