"""Measurements: HDR histograms per transaction type, recorded per tick and merged into intervals,
steps and the whole run. Histograms travel as HdrHistogram's compressed base64 encoding, so the
figures of several worker processes can be merged exactly."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bench_dsl.core.live_figures import BusyDisk, Cpu, StepSoFar, TickFigures, TxFigures
from bench_dsl.language.metric_decls import CORE_TABLE, MetricDecl, Table
from bench_dsl.language.model import Metric
from bench_dsl.measure.consistency import Jitter, consistency
from bench_dsl.measure.derived import StatusOf, derived, derived_figures
from bench_dsl.measure.energy import PowerSample, merge
from bench_dsl.measure.figures import client_figures
from bench_dsl.measure.processlist import States
from bench_dsl.measure.stalls import Stalls, TimeSpan, join
from bench_dsl.measure.txstats import TxStats

# the keys of a tick's cpu that are a queue for a resource, not a CPU % (bench_dsl.measure.cpu.Waits
# reads them): a window's row holds them apart, as "pressure" ({"cpu"|"io": {"some": % of time}})
# and "server_sched" ({"run_delay_s_per_s", "throttled_s_per_s"}), what bench_dsl.attribution reads
PRESSURE_KEY = "pressure:"
SCHED_KEY = "sched:"
WAIT_KEYS = (PRESSURE_KEY, SCHED_KEY)

ALL = "*"  # the key of all transactions together


@dataclass(frozen=True, slots=True)
class StatusSample:
    """The server's SHOW GLOBAL STATUS between two readings on the coordinator's connection: how
    much each variable grew (counters) and its value at the later one (gauges)."""

    seconds: float  # between the two readings
    grew: dict[str, float]
    values: dict[str, float]
    at: float = 0.0  # when the later reading was taken (monotonic): the newest values win
    gauges: frozenset[str] = frozenset()  # of the values, those that are readings: a window keeps their mean
    states: dict[str, int] | None = None  # the processlist's sessions by state at the later reading
    rtt_ms: float | None = None  # a ping's round trip on the same connection, just before it


@dataclass(slots=True)
class TickStats:
    """One second (or less, at a phase's end) of the run, as the coordinator sees it."""

    t: float  # seconds since the run started, at the tick's end
    seconds: float
    phase: str  # warmup | settle | hold | ramp
    step: int | None
    users: int
    tx: dict[str, TxStats]
    cpu: dict[str, float | None]
    status: StatusSample | None = None  # None: no new reading since the last tick
    # the worst replica's lag (seconds), and each replica's: lag_s, seconds_behind_master, ...
    lag: float | None = None
    replicas: list[dict[str, Any]] | None = None
    host: Any = None  # hostwatch.HostSample: the server host's CPU and disks since the last reading
    # spans of the tick (elapsed s) in which a user was inside a transaction and none finished one;
    # None: not known
    stalls: list[TimeSpan] | None = None
    # an open-loop rate's schedule over the tick (bench_dsl.measure.arrivals.ArrivalStats, whose
    # module builds on this one); None: closed loop
    arrivals: Any = None
    power: PowerSample | None = None  # what the server's machine drew since the last reading (None: nothing read)

    @property
    def measured(self) -> bool:
        return self.phase in ("hold", "ramp")

    def figures(self, metrics: Table = CORE_TABLE) -> TickFigures:
        """A tick's figures for a live display: cheap (no percentiles), computed once a second; the
        throughputs of `metrics`, the declared ones (bench_dsl.workloads.registry.METRICS)."""
        secs = self.seconds or 1.0
        whole = [sum(getattr(st, k) for st in self.tx.values()) for k in ("count", "queries", "rollbacks")]
        rates = {d: n for d in metrics.measuring("throughput") if (n := counted(d, self.tx, *whole)) is not None}
        # the throughputs of every transaction first, then those of one (TPC-C's new orders a minute)
        declared: dict[str, float | None] = {d.name: round(n * d.per / secs, 1) for d, n in sorted(
            rates.items(), key=lambda dn: dn[0].transaction is not None)}
        if self.arrivals is not None:
            declared |= self.arrivals.tick_figures(secs)
            declared["achieved_tps"] = round(whole[0] / secs, 1)
        if (st := self.status) is not None or self.power is not None:
            span = st.seconds if st is not None else secs
            per = {d.name: n * d.per / secs for d, n in rates.items()}
            declared |= derived_figures(metrics, StatusOf(st.grew if st else {}, st.values if st else {}, span,
                                                          whole[0] * span / secs, self.power, per.get))
        busiest = self.host.busiest() if self.host is not None else None
        return TickFigures(
            declared, round(sum(st.error_count for st in self.tx.values()) / secs, 2),
            round(sum(st.retries for st in self.tx.values()) / secs, 2),
            Cpu.from_json({k: (None if v is None else round(v, 1)) for k, v in self.cpu.items()
                           if not k.startswith(WAIT_KEYS)}) or Cpu(),
            {n: TxFigures(st.count, round(st.count / secs, 1), st.error_count) for n, st in self.tx.items()},
            round(self.lag, 2) if self.lag is not None else None,
            BusyDisk(busiest[0], busiest[1]["util_pct"]) if busiest is not None else None)


class Aggregate:
    """Ticks merged: an interval, a step's hold, a sliding window or the whole run."""

    def __init__(self, names: tuple[str, ...], metrics: Table = CORE_TABLE) -> None:
        self.names = names
        self.metrics = metrics  # the declared ones (bench_dsl.workloads.registry.METRICS): their throughputs
        self.tx: dict[str, TxStats] = {n: TxStats() for n in names}
        self.all = TxStats()
        self.seconds = 0.0
        self.ticks = 0
        self._cpu_sum: dict[str, float] = {}
        self._cpu_n: dict[str, int] = {}
        self._cpu_secs: dict[str, float] = {}  # the seconds each figure was measured for: a gap is no 0%
        self.arrivals: Any = None  # an open-loop rate's ArrivalStats, merged (None: closed loop)
        self.users_min: int | None = None
        self.users_max: int | None = None
        self.status_seconds = 0.0
        self.status_grew: dict[str, float] = {}
        self.status_values: dict[str, float] = {}
        self.status_gauged: dict[str, float] = {}  # a gauge's readings, each weighted by the seconds it closes
        self._status_at = float("-inf")
        self.states = States()
        self.lag_last: float | None = None
        self.lag_min: float | None = None
        self.lag_max: float | None = None
        self._lag_t = float("-inf")
        self.replicas: list[dict[str, Any]] | None = None
        self._disk_secs: dict[str, float] = {}
        self._disk_sum: dict[str, dict[str, float]] = {}
        self._stall_pieces: list[TimeSpan] | None = None
        self.jitter = Jitter()  # each tick's throughput, for its spread (measure.consistency)
        self.energy: PowerSample | None = None  # what the server's machine drew, where it was read

    def add(self, tick: TickStats) -> None:
        for name, st in tick.tx.items():
            self.tx[name].merge(st)
            self.all.merge(st)
        if tick.arrivals is not None:  # a later span of the same schedule (bench_dsl.measure.arrivals)
            if self.arrivals is None:
                self.arrivals = type(tick.arrivals)()
            self.arrivals.merge(tick.arrivals)
        self.seconds += tick.seconds
        self.ticks += 1
        self.jitter.add(sum(st.count for st in tick.tx.values()), tick.seconds)
        self.energy = merge(self.energy, tick.power)
        if tick.stalls is not None:
            self._stall_pieces = join(self._stall_pieces or [], tick.stalls)
        for k, v in tick.cpu.items():
            if v is not None:
                self._cpu_sum[k] = self._cpu_sum.get(k, 0.0) + v * tick.seconds
                self._cpu_n[k] = self._cpu_n.get(k, 0) + 1
                self._cpu_secs[k] = self._cpu_secs.get(k, 0.0) + tick.seconds
        self.users_min = tick.users if self.users_min is None else min(self.users_min, tick.users)
        self.users_max = tick.users if self.users_max is None else max(self.users_max, tick.users)
        if tick.lag is not None:
            self.lag_min = tick.lag if self.lag_min is None else min(self.lag_min, tick.lag)
            self.lag_max = tick.lag if self.lag_max is None else max(self.lag_max, tick.lag)
            if tick.t >= self._lag_t:  # windows add their ticks newest first
                self._lag_t, self.lag_last, self.replicas = tick.t, tick.lag, tick.replicas
        if tick.host is not None:
            secs = tick.host.seconds
            for dev, fig in tick.host.disks.items():
                self._disk_secs[dev] = self._disk_secs.get(dev, 0.0) + secs
                sums = self._disk_sum.setdefault(dev, {})
                for k, v in fig.items():
                    sums[k] = sums.get(k, 0.0) + v * secs
        if tick.status is not None:
            self.status_seconds += tick.status.seconds
            for k, v in tick.status.grew.items():
                self.status_grew[k] = self.status_grew.get(k, 0.0) + v
            for k in tick.status.gauges:
                if (g := tick.status.values.get(k)) is not None:
                    self.status_gauged[k] = self.status_gauged.get(k, 0.0) + g * tick.status.seconds
            self.states.add(tick.status.states, tick.status.rtt_ms)
            if tick.status.at >= self._status_at:  # windows add their ticks newest first
                self._status_at = tick.status.at
                self.status_values = dict(tick.status.values)

    def status(self, name: str, rate: bool) -> float | None:
        """A status variable over this window: its growth per second, or its last value read."""
        key = name.lower()
        if not rate:
            return self.status_values.get(key)
        if key not in self.status_grew or self.status_seconds <= 0:
            return None
        return self.status_grew[key] / self.status_seconds

    def stalls(self) -> Stalls | None:  # None: its ticks did not say
        return None if self._stall_pieces is None else Stalls.of(self._stall_pieces)

    def disks(self) -> dict[str, dict[str, float]]:
        """Each disk's figures over this window (time-weighted means of the readings)."""
        return {dev: {k: round(v / self._disk_secs[dev], 3) for k, v in sums.items()}
                for dev, sums in self._disk_sum.items() if self._disk_secs.get(dev)}

    def disk(self) -> dict[str, Any] | None:
        """The busiest disk (highest util) over this window, and every disk."""
        disks = self.disks()
        if not disks:
            return None
        name, fig = max(disks.items(), key=lambda kv: kv[1].get("util_pct", 0.0))
        return {"busiest": name, **fig, "devices": disks}

    def server_status(self) -> dict[str, Any] | None:
        """Every variable read, by name: its value at the end, how much it grew, per second."""
        if not self.status_values:
            return None
        secs = self.status_seconds
        out: dict[str, Any] = {"seconds": round(secs, 3)}
        for k in sorted(self.status_values):
            grew = self.status_grew.get(k)
            out[k] = {"value": self.status_values[k], "grew": grew,
                      "per_s": round(grew / secs, 3) if grew is not None and secs > 0 else None}
            if k in self.status_gauged and secs > 0:  # a reading's mean over the window
                out[k]["mean"] = round(self.status_gauged[k] / secs, 3)
        reads, requests = self.status_grew.get("innodb_buffer_pool_reads"), self.status_grew.get(
            "innodb_buffer_pool_read_requests")
        if reads is not None and requests:
            # the share of page reads the buffer pool served without going to disk
            out["buffer_pool_hit_ratio_pct"] = round(100.0 * (1 - reads / requests), 3)
        return out

    def cpu(self, source: str) -> float | None:
        if not self._cpu_n.get(source) or self._cpu_secs.get(source, 0.0) <= 0:
            return None
        return self._cpu_sum[source] / self._cpu_secs[source]

    def stats(self, tx: str | None) -> TxStats:
        return self.all if tx is None else self.tx[tx]

    def rate(self, n: int) -> float:
        return n / self.seconds if self.seconds > 0 else 0.0

    def value(self, metric: Metric) -> float | None:
        """The metric over this aggregate, in the model's canonical units."""
        st = self.stats(metric.transaction) if metric.name != "cpu" else self.all
        if (d := metric.declared or self.metrics.of_model(metric.name)) is not None and d.measures == "throughput":
            return self.throughput(d, metric.transaction)
        if d is not None and d.derive is not None:
            return derived(d, self.status_window())
        match metric.name:  # the others, each computed its own way
            case "latency":
                if st.count == 0:
                    return None
                return (st.hist.get_value_at_percentile(metric.percentile) if metric.stat == "p" else
                        st.mean_us() if metric.stat == "avg" else
                        st.hist.get_max_value() if metric.stat == "max" else st.hist.get_min_value()) / 1e6
            case "error_rate":
                done = st.count + st.error_count
                return 100.0 * st.error_count / done if done else None
            case "cpu":
                return self.cpu(metric.source or "server")
            case "status":
                return self.status(metric.source or "", metric.stat == "rate")
            case "stall":
                return None if (stalls := self.stalls()) is None else stalls.longest_s
            case "replication_lag":
                return self.lag_min if metric.stat == "min" else self.lag_last
            case "achieved" | "dropped" | "lag" | "busy":
                return self.open_loop(metric.name)
            case "disk_util" | "disk_iops" | "disk_await":
                key = {"disk_util": "util_pct", "disk_iops": "iops", "disk_await": "await_ms"}[metric.name]
                return None if (busiest := self.disk()) is None else busiest.get(key)
        return None

    def status_window(self) -> StatusOf | None:
        """Its server status (and power) as a derived figure reads it (None: neither was read)."""
        if not self.status_values and self.energy is None:
            return None
        # the transactions of the status' own span (its readings and the ticks' counts are cut apart)
        scale = self.status_seconds / self.seconds if self.seconds > 0 else 1.0
        return StatusOf(self.status_grew, self.status_values, self.status_seconds, self.all.count * scale,
                        self.energy, self._throughput_of)

    def _throughput_of(self, name: str) -> float | None:
        d = self.metrics.get(name)
        return self.throughput(d) if d is not None and d.measures == "throughput" else None

    def open_loop(self, name: str) -> float | None:
        """An open-loop rate's figure: the share of offered arrivals that completed (achieved) or
        were dropped, the p99 of the lag behind their due times in ms, the share of the pool busy."""
        a = self.arrivals
        if a is None:
            return None
        if name == "lag":
            return a.lag.get_value_at_percentile(99.0) / 1000 if a.lag.get_total_count() else None
        if name == "busy":
            return 100.0 * a.busy / self.users_max if self.users_max else None
        if not a.offered:
            return None
        return 100.0 * (self.all.count if name == "achieved" else a.dropped) / a.offered

    def open_loop_figures(self) -> dict[str, object]:
        """An open-loop rate's figures for a result (nothing for closed loop): offered and achieved
        rates, arrivals dropped, the pool's busy users and the schedule's latencies."""
        if self.arrivals is None:
            return {}
        out = self.arrivals.figures(self.seconds)
        achieved = self.open_loop("achieved")
        return {"offered_tps": out.pop("offered_tps"), "achieved_tps": round(self.rate(self.all.count), 3),
                "achieved_pct": None if achieved is None else round(achieved, 3), **out,
                "busy_pct": None if (b := self.open_loop("busy")) is None else round(b, 1)}

    def throughput(self, d: MetricDecl, tx: str | None = None) -> float | None:
        """A declared throughput over this aggregate (None: the workload has not its transaction)."""
        n = counted(d, self.tx, *(self.all if tx is None else self.tx[tx]).counts())
        return None if n is None else self.rate(n) * d.per

    def summary(self, consistent: bool = False) -> dict[str, object]:
        """The figures every report carries: throughput, latency, errors, CPU, per transaction; with
        `consistent`, how consistent they were (measure.consistency: a step's and the run's at its end,
        not each interval's: HDR's standard deviation walks the whole histogram in Python, tens of ms
        for a run's, which every second's totals would pay)."""
        def one(st: TxStats) -> dict[str, object]:
            return {
                "count": st.count,
                # a rate per minute to 0.1, per second to 0.001
                **{d.name: round(self.rate(n) * d.per, 1 if d.per >= 60 else 3) for d in free
                   if (n := counted(d, self.tx, *st.counts())) is not None},
                "errors": st.error_count, "errors_by_code": {str(k): v for k, v in sorted(st.errors.items())},
                "retries": st.retries, "rollbacks": st.rollbacks, "latency_ms": st.latency_ms(),
            }

        free = [d for d in self.metrics.measuring("throughput") if d.transaction is None]
        return {
            "seconds": round(self.seconds, 3),
            "users": self.users_max,
            **one(self.all),
            **(consistency(self.all.hist, self.all.count, self.jitter) if consistent else {}),
            **{d.name: round(n, 1) for d in self.metrics.measuring("throughput")  # nopm: of new_order always
               if d.transaction is not None and (n := self.throughput(d)) is not None},
            **(stalls.to_json() if (stalls := self.stalls()) is not None else {}),
            **self.open_loop_figures(),
            "cpu": {k: _r(self.cpu(k)) for k in ("server", "host", "client")},
            **({"client_cpu_by_process": each} if (each := {k.removeprefix("client:"): _r(self.cpu(k))
                                                            for k in sorted(self._cpu_n) if k.startswith("client:")})
               else {}),
            # a cluster's client machines: each one's whole CPU, as its workers read it
            **({"cpu_by_client_host": each} if (each := {k.removeprefix("client_host:"): _r(self.cpu(k))
                                                         for k in sorted(self._cpu_n) if k.startswith("client_host:")})
               else {}),
            **self.waits(),
            "transactions": {n: one(self.tx[n]) for n in self.names},
            **({"server_status": st} if (st := self.server_status()) is not None else {}),
            # each figure derived from the server's status, by its declaration
            **derived_figures(self.metrics, self.status_window()),
            **({"processlist": pl} if (pl := self.states.to_json()) is not None else {}),
            **({"network": net} if (net := self.states.network()) is not None else {}),
            **({"disk": d} if (d := self.disk()) is not None else {}),
            **({"replication": {"lag_s": self.lag_last, "lag_max_s": self.lag_max, "lag_min_s": self.lag_min,
                                "replicas": self.replicas}} if self.lag_last is not None else {}),
        }

    def waits(self) -> dict[str, object]:
        """The queues for the CPU and the disks over the window (bench_dsl.measure.cpu.Waits)."""
        pressure = {k.removeprefix(PRESSURE_KEY): {"some": _r(self.cpu(k))} for k in sorted(self._cpu_n)
                    if k.startswith(PRESSURE_KEY)}
        sched = {k.removeprefix(SCHED_KEY): _r3(self.cpu(k)) for k in sorted(self._cpu_n) if k.startswith(SCHED_KEY)}
        return {**({"pressure": pressure} if pressure else {}), **({"server_sched": sched} if sched else {})}

    def so_far(self) -> StepSoFar:
        """The summary's figures a live display shows of a step still running."""
        return StepSoFar.of_row(self.summary(), (f.name for f in client_figures(self.metrics) if "step" in f.live))

    def histograms(self) -> dict[str, str | None]:
        """Per transaction, the encoded histogram: merge it with others, or read it in HdrHistogram tools."""
        return {n: (self.tx[n].hist.encode().decode("ascii") if self.tx[n].count else None) for n in self.names}


def counted(d: MetricDecl, txs: dict[str, TxStats], count: int, queries: int, rollbacks: int) -> int | None:
    """What a throughput counts: of these, or of its own transaction's (None: the workload has not it)."""
    if d.transaction is not None:
        if (st := txs.get(d.transaction)) is None:
            return None
        count, queries, rollbacks = st.count, st.queries, st.rollbacks
    return queries if d.counts == "statements" else count - rollbacks if d.counts == "committed" else count


def _r(v: float | None) -> float | None:
    return None if v is None else round(v, 2)


def _r3(v: float | None) -> float | None:
    return None if v is None else round(v, 3)
