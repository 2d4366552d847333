"""Before any user runs: the target (a throwaway server started, or a remote one checked), its facts
and settings, the data loaded, and the fleet that will run the users. Each step says what it did in
events (through the run's Voice) and returns what it made: the Target, the prepare task, the
FleetChoice. It never reads the run's state."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

import asyncmy

from bench_dsl import native
from bench_dsl.core.dsn import Dsn, ServerIdentity
from bench_dsl.core.errors import TargetError, error_reason
from bench_dsl.core.mysql_errors import CONNECTION_LOST, SCENARIO_ERRORS
from bench_dsl.core.prepare_report import PrepareReport
from bench_dsl.core.server_info import ServerInfo
from bench_dsl.engine import events as ev
from bench_dsl.engine.phases import Plan, PlannedRun
from bench_dsl.engine.stopping import StopReason
from bench_dsl.engine.voice import Voice
from bench_dsl.fleet import registry
from bench_dsl.fleet.base import Fleet, worker_count
from bench_dsl.fleet.kinds import FleetSetup
from bench_dsl.language import model as m
from bench_dsl.native import loader
from bench_dsl.server.connect import connect_explained, ensure_database, identify
from bench_dsl.server.embedded import EmbeddedServer
from bench_dsl.server.facts import apply_settings, facts
from bench_dsl.server.replication import start_replicas
from bench_dsl.workloads.base import Progress, Workload, error_code


@dataclass(frozen=True, slots=True)
class Target:
    """The server the run measures, as the stage found or started it."""

    dsn: Dsn
    replicas: list[Dsn]
    server_pid: int | None  # when it runs on this machine (its CPU can be read)
    server_alive: Callable[[], bool] | None  # a throwaway server's process is still there
    data_dir: str | None  # a throwaway server's data directory


@dataclass(frozen=True, slots=True)
class FleetChoice:
    fleet: Fleet
    kind: str  # its name in bench_dsl.fleet.registry
    why: str  # how many workers, said when auto chose it


class Stage:
    def __init__(self, sc: m.Scenario, plan: Plan, workload: Workload, voice: Voice) -> None:
        self.sc = sc
        self.plan = plan
        self.workload = workload
        self.voice = voice
        self.publish = voice.publish
        self.log = voice.log
        self.server: EmbeddedServer | None = None
        self.replica_servers: list[EmbeddedServer] = []
        self._prep_t0: float | None = None
        self._prep_last = 0.0

    async def target(self, dsn: Dsn | None, time_scale: float, max_steps: int | None,
                     specs: tuple[ev.ConditionSpec, ...],
                     keep_server: bool) -> Target:
        """The server the run measures (a throwaway one when `dsn` is None), announced with Started."""
        sc = self.sc
        replica_dsns = list(sc.replica_dsns)
        if dsn is None:
            self.server = EmbeddedServer(sc.server_settings, keep=keep_server,
                                         max_connections=self.plan.max_users + 50, parent=sc.server_dir,
                                         role="primary" if sc.replicas else "alone")
            self.log("starting a throwaway server")
            t = time.monotonic()
            dsn = await self.server.start()
            self.log(f"throwaway server up in {time.monotonic() - t:.2f}s on 127.0.0.1:{dsn.port}"
                     + (f" (files in {self.server.basedir})" if keep_server or sc.server_dir else ""))
            if sc.replicas:
                self.replica_servers = await start_replicas(self.server, sc.replicas, sc.server_settings,
                                                            keep_server, self.log)
                replica_dsns = [r.dsn for r in self.replica_servers if r.dsn is not None]
        else:
            await ensure_database(dsn)
        info = await facts(dsn, self.server.pid if self.server else None)
        # from here on every connection made with the address, the users' included, must reach this
        # server: `localhost:PORT` read as "the default socket" by one client library once measured
        # another server than the one the result named (issue 38)
        dsn = replace(dsn, reaches=info.identity)
        replica_dsns = await self._pin_replicas(info.identity, replica_dsns)
        for note in dsn.notes():  # TLS and compress options that do less than a person may expect
            self.log(note, "warning")
        applied = await apply_settings(dsn, sc.server_settings, embedded=self.server is not None)
        for a in applied:
            if not a.applied:
                self.log(f"server setting {a.name} = {a.requested}: {a.note} (server has {a.after})", "warning")
        if info.pid is None and sc.monitor is None:
            self.log("cpu(server) cannot be measured: the server does not run on this machine "
                     "(monitor \"http://host:9100/metrics\" reads its host's node_exporter)", "warning")
        max_conn = int(info.variables.get("max_connections", "0") or 0)
        if max_conn and self.plan.max_users > max_conn - 5:
            self.log(f"the plan goes to {self.plan.max_users} users but max_connections is {max_conn}", "warning")
        server = ServerInfo(dsn.redacted(), self.server is not None, info.version, info.pid is not None,
                            info.variables, tuple(applied), str(self.server.basedir) if self.server else None,
                            tuple(d.redacted() for d in replica_dsns),
                            # where cpu(server) comes from: the server process here, or its host's node_exporter
                            "node_exporter" if sc.monitor else ("process" if info.pid is not None else None),
                            sc.monitor, info.tls, info.identity)
        self.publish(ev.Started(sc.name, dsn.redacted(), info.version, self.server is not None,
                                PlannedRun(self.plan, time_scale, max_steps), list(self.workload.names),
                                [c.text for c in sc.stop], specs, server))
        embedded = self.server
        return Target(dsn, replica_dsns, info.pid, embedded.alive if embedded is not None else None,
                      str(embedded.basedir / "data") if embedded is not None and embedded.basedir else None)

    async def _pin_replicas(self, primary: ServerIdentity, replicas: list[Dsn]) -> list[Dsn]:
        """Each replica's address bound to the server it reached first, which must be neither the
        primary nor another replica: the lag of a server to itself is no lag."""
        pinned: list[Dsn] = []
        seen = {primary: "the primary"}
        for i, r in enumerate(replicas):
            conn = await connect_explained(r, None)
            try:
                async with conn.cursor() as cur:
                    found = await identify(cur)
            finally:
                conn.close()
            if found in seen:
                raise TargetError(f"replica {i + 1} ({r.redacted()}) reached {found}, which is {seen[found]}: "
                                  "a replica must be a server of its own")
            seen[found] = f"replica {len(pinned) + 1}"
            pinned.append(replace(r, reaches=found))
        return pinned

    async def prepare(self, dsn: Dsn, force: bool) -> asyncio.Task[PrepareReport]:
        """The load, as a task the run can cancel (a Ctrl-C while loading stops at once)."""
        self.publish(ev.PhaseBegan("prepare", None, self.plan.steps, 0, None))
        return asyncio.create_task(self.workload.prepare(dsn, Progress(self.log, self._rows), force=force,
                                                         bulk=loader.bulk()))

    async def prepared(self, task: asyncio.Task[PrepareReport]) -> StopReason | None:
        """The load done and said (None), or why the scenario cannot run as written."""
        try:
            report = await task
        except asyncmy.errors.MySQLError as exc:
            code = error_code(exc)
            if code in CONNECTION_LOST:
                raise TargetError(f"lost the server while loading the data: {self.voice.scrub(str(exc))}") from None
            if code in SCENARIO_ERRORS:
                message = self.voice.scrub(str(exc.args[1]) if len(exc.args) > 1 else str(exc))
                self.log(f"loading the data failed with error {code}: {message}; "
                         "the scenario cannot run as written", "error")
                return StopReason("scenario_error", code=code, message=message)
            raise
        self.publish(ev.Prepared(report))
        return None

    def _rows(self, done: int, total: int) -> None:
        now = time.monotonic()
        if self._prep_t0 is None:
            self._prep_t0 = now
        if done < total and now - self._prep_last < 0.25:
            return  # a progress bar needs a few updates a second, not one per batch
        self._prep_last = now
        secs = now - self._prep_t0
        rate = done / secs if secs > 0 else 0.0
        eta = (total - done) / rate if rate > 0 else None
        self.publish(ev.Prepare(done, total, round(rate, 1), None if eta is None else round(eta, 1),
                                round(self.voice.elapsed(), 3)))

    def fleet(self, target: Target, requested: int | None, isolate_users: bool, named: str | None = None,
              options: Mapping[str, str] | None = None) -> FleetChoice:
        """Where the users run: this process, worker processes (`workers`, or auto), or the workers of
        the fleet the scenario names (`workers ray`: how many is known once it started)."""
        if native.problem is not None:
            self.log(native.problem, "warning")
        if named is not None:
            kind = registry.pick(named, requested or 0, isolate_users)
            return FleetChoice(kind.build(FleetSetup(self.sc, target.dsn, self.workload, requested or 0, self.log,
                                                     self.plan.max_users, options or {})), kind.name, "")
        local = target.server_pid is not None
        light = self.workload.raw and native.raw_executor
        workers = worker_count(requested, self.plan.max_users, server_local=local, light=light)
        kind = registry.pick(None, workers, isolate_users)
        fleet = kind.build(FleetSetup(self.sc, target.dsn, self.workload, workers, self.log))
        why = "" if requested else (" (workers auto: half the cores, the server runs here)"
                                    if local and not light else " (workers auto: one per core)")
        return FleetChoice(fleet, kind.name, why)

    async def start_fleet(self, chosen: FleetChoice) -> None:
        """Starts the users' processes (or a cluster's actors) and says where they run."""
        await chosen.fleet.start()
        workers = chosen.fleet.workers
        self.publish(ev.Workers(workers, chosen.kind))
        cluster = chosen.fleet.cluster()
        if cluster is not None:
            self.publish(ev.Cluster(cluster))
            hosts = len({n.host for n in cluster.nodes})
            self.log(f"virtual users run in {workers} {chosen.kind} actor{'s' if workers > 1 else ''} on "
                     f"{len(cluster.nodes)} node{'s' if len(cluster.nodes) > 1 else ''} "
                     f"({hosts} host{'s' if hosts > 1 else ''})")
        else:
            self.log(f"virtual users run in {workers} process{'es' if workers > 1 else ''}{chosen.why}")

    async def stop_server(self, keep: bool) -> None:
        for r in self.replica_servers:
            try:
                await asyncio.to_thread(r.stop)
            except Exception as exc:
                self.log(f"could not stop a throwaway replica: {error_reason(exc)}", "warning")
        if self.server is None:
            return
        try:
            await asyncio.to_thread(self.server.stop)  # up to 30 s: never on the event loop
        except Exception as exc:  # the results are still to be finished and written
            self.log(f"could not stop the throwaway server: {error_reason(exc)}", "warning")
        if keep and self.server.basedir:
            self.log(f"kept the throwaway server's files in {self.server.basedir}")
