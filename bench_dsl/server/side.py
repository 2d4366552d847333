"""What a run reads of the server's side, beside the users' own figures: its status variables and
counters (counters.py), its replicas' lag (replication.py) and its host's CPU and disks
(hostwatch.py). Each is checked before the data is loaded (a condition on a figure that cannot be
read is the scenario's error, said then), read in the background, and folded into every tick.
The run drives all of it through ServerSide: the counters are its own."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import asyncmy

from bench_dsl.core.dsn import Dsn
from bench_dsl.core.figures import Counted
from bench_dsl.language import model as m
from bench_dsl.measure.metrics import TickStats
from bench_dsl.server.counters import STATUS_DEFAULT, ServerCounters, unknown_status
from bench_dsl.server.hostwatch import FIRST_TRIES, HostReading, HostWatch
from bench_dsl.server.power import PowerWatch
from bench_dsl.server.replication import Heartbeat


def _disks(c: m.Condition) -> bool:
    """Whether the condition's metric is read from the server host's disks (MetricDecl.reads)."""
    return (d := c.metric.declaration) is not None and d.reads == "disks"


def _missing(reading: HostReading, needs: list[m.Condition]) -> tuple[str, str] | None:
    """A condition the monitor's page has no figure for at all (its collector turned off): the
    condition and the figure it lacks."""
    for c in needs:
        if c.metric.name == "cpu" and reading.cpu_total is None:
            return c.text, "node_cpu_seconds_total"
        if _disks(c) and not reading.disks:
            return c.text, "node_disk_io_time_seconds_total"
    return None


class ServerSide:
    def __init__(self, sc: m.Scenario, workload_counters: Callable[[asyncmy.Connection], Awaitable[dict[str, int]]],
                 log: Callable[..., None], counted: tuple[Counted, ...] = (), derived: tuple[str, ...] = ()) -> None:
        self.sc = sc
        self.derived = derived  # the status variables the declared figures derived from it read (MetricDecl.status)
        self.counters = ServerCounters(workload_counters, lambda msg: log(msg, "warning"), counted)
        self.log = log
        self.heartbeat: Heartbeat | None = None
        self.host: HostWatch | None = None
        self.power: PowerWatch | None = None

    def _conditions(self) -> tuple[m.Condition, ...]:
        return self.sc.stop + self.sc.expect

    async def check(self, dsn: Dsn, data_dir: str | None, server_pid: int | None) -> str | None:
        """Before the data is loaded: every figure a condition names can be read. Returns the
        problem (each said as an error) or None."""
        named = list(dict.fromkeys(c.metric.source for c in self._conditions()
                                   if c.metric.name == "status" and c.metric.source))
        unknown = await unknown_status(dsn, list(dict.fromkeys((*named, *self.derived))))
        for name in [n for n in unknown if n not in named]:  # a declared figure's: it stays empty, the run goes on
            self.log(f"status {name}, which a declared figure reads: the server has no such status variable, "
                     f"{unknown.pop(name)}; that figure stays empty", "warning")
        for name, instead in unknown.items():
            self.log(f"status({name}): the server has no such status variable; {instead}", "error")
        if unknown:
            return "unknown status variable: " + ", ".join(unknown)
        known = {n.lower() for n in STATUS_DEFAULT}
        more = (n for n in dict.fromkeys((*named, *self.derived)) if n.lower() not in known)
        self.counters.status_names = STATUS_DEFAULT + tuple(more)

        url = self.sc.monitor
        if data_dir is None and server_pid is not None and dsn.reaches is not None:  # a server of your own here
            data_dir = dsn.reaches.datadir
        self.host = HostWatch(url, data_dir if server_pid is not None else None, lambda msg: self.log(msg, "warning"))
        disk_conditions = [c for c in self._conditions() if _disks(c)]
        # with a monitor, the server's CPU and disks come from it alone (fill), on this machine too
        needs = [c for c in self._conditions() if _disks(c)
                 or (c.metric.name == "cpu" and c.metric.source == "server")] if url is not None else []
        if self.host.active:
            reading = await self.host.first(tries=FIRST_TRIES if needs else 1)
            if url is not None and reading is None:
                bad = self.host.not_counters  # it answered, with figures no counter can have
                what = "answered with figures that are not counters" if bad else "did not answer"
                if needs:  # a figure a condition needs that cannot be read at all: never a run that cannot stop
                    fix = "correct what serves that page" if bad else "start its node_exporter or correct the address"
                    self.log(f"{needs[0].text}: monitor {url} {what} in {FIRST_TRIES} tries "
                             f"({self.host.last_error}): the server host's figures cannot be read; {fix}", "error")
                    return f"monitor {url} {what}"
                self.log(f"monitor {url} {what} ({self.host.last_error}); the host's figures start when it answers"
                         + (" with counters" if bad else ""), "warning")
            elif url is not None and reading is not None and (missing := _missing(reading, needs)):
                self.log(f"{missing[0]}: monitor {url} has no {missing[1]} on its page: the condition could never "
                         "be judged; turn on the node_exporter's collector of it", "error")
                return f"monitor {url} has no {missing[1]}"
        if (problem := await self._power(server_pid)) is not None:
            return problem
        blind = [c for c in self._conditions() if c.metric.name == "cpu" and c.metric.source == "server"]
        if blind and server_pid is None and url is None:
            self.log(f"{blind[0].text}: the server's CPU cannot be read: it runs on another machine; give its host's "
                     "node_exporter with monitor \"http://host:9100/metrics\"", "error")
            return "the server's CPU cannot be read"
        if disk_conditions and not self.host.active:
            where = ("the server runs on another machine: give its node_exporter with monitor \"http://host:9100/metrics\""
                     if server_pid is None else f"its data directory {data_dir} is on no disk of its own (tmpfs?)")
            self.log(f"{disk_conditions[0].text}: the server's disks cannot be read: {where}", "error")
            return "the server's disks cannot be read"
        return None

    async def _power(self, server_pid: int | None) -> str | None:
        """The power source answers, when a condition needs it (else a warning, and the result
        says why it has no power figure). RAPL reads this machine: a server elsewhere is the error."""
        src = self.sc.power
        needs = [c for c in self._conditions() if (d := c.metric.declaration) is not None and d.reads == "power"]
        if src is None:
            return None
        if src.kind == "rapl" and server_pid is None:
            self.log(f"power {src.describe()} reads this machine's RAPL counters, and the server does not run on "
                     "this machine: read its machine's power where it runs: power node_exporter (with its monitor), "
                     "power prometheus \"URL\" \"METRIC\" or power command \"...\"", "error")
            return "power rapl reads another machine than the server's"
        page = self.host.page if self.host is not None and src.kind == "node_exporter" else None
        self.power = PowerWatch(src, lambda msg: self.log(msg, "warning"), page)
        if await self.power.first(tries=FIRST_TRIES if needs else 1) is not None:
            return None
        if needs:  # a condition that could never be judged: never a run that cannot stop
            self.log(f"{needs[0].text}: the power cannot be read: {self.power.reason}", "error")
            return f"power: {self.power.last_error}"
        self.log(f"no power figure yet: {self.power.reason}; the power figures start when it answers", "warning")
        return None

    async def start(self, dsn: Dsn, replicas: list[Dsn]) -> None:
        """The users are about to run: bench-dsl's own connection, the replicas' heartbeat, the host."""
        await self.counters.open(dsn)
        if replicas:
            self.heartbeat = Heartbeat(dsn, replicas, lambda msg: self.log(msg, "warning"))
            await self.heartbeat.start()
        if self.host is not None:
            self.host.start()
        if self.power is not None:
            self.power.start()

    def silent_s(self) -> float:
        """Seconds the server has answered nothing on bench-dsl's own connection."""
        return self.counters.silent_s()

    def poke(self) -> None:
        """Once a tick: the ping that tells a hung server (ServerCounters.poke)."""
        self.counters.poke()

    async def phase_begins(self, new_step: bool, measured: bool) -> None:
        """A step's counters start with its first measured phase; a measured phase's status
        figures start where it starts."""
        if new_step:
            await self.counters.begin_step()
        if measured:
            await self.counters.rebase_status()

    async def step_last_tick(self) -> None:
        """The last tick of a measured phase: the server's counters at the same moment as the client's."""
        await self.counters.end_step()
        await self.counters.refresh_status()

    async def step_figures(self) -> dict[str, Any] | None:
        """The server's own count of the step (ServerCounters.step_figures)."""
        return await self.counters.step_figures()

    def fill(self, tick: TickStats) -> None:
        tick.status = self.counters.take_status()
        if self.power is not None:
            tick.power = self.power.take()
        if self.heartbeat is not None:
            tick.lag = self.heartbeat.worst()
            tick.replicas = [{"lag_s": r.lag_s, "seconds_behind_master": r.seconds_behind_master,
                              "io_running": r.io_running, "sql_running": r.sql_running, "status": r.status}
                             for r in self.heartbeat.snapshot()]
        if self.host is None:
            return
        sample = self.host.take()
        tick.host = sample
        if self.sc.monitor is not None:  # the server's host, as its node_exporter says; no reading: a gap
            tick.cpu["server"] = sample.cpu_pct if sample is not None else None

    async def stop(self) -> None:
        self.counters.close(final=True)
        if self.heartbeat is not None:
            await self.heartbeat.stop()
        if self.host is not None:
            await self.host.stop()
        if self.power is not None:
            await self.power.stop()

    def power_figure(self) -> tuple[str | None, str | None]:
        """The power source, and why the run has no power figure (None: it has one)."""
        if self.sc.power is None:
            return None, ("no power source: the scenario has no `power` (power rapl, power node_exporter, "
                          "power prometheus or power command)")
        if self.power is None:
            return self.sc.power.describe(), "the power source was not read (the run stopped before its users started)"
        return self.sc.power.describe(), self.power.reason
