"""The run: from a scenario and its plan to events, and an exit status.

It goes down the floors and is asked nothing back: the stage (bench_dsl.engine.stage) makes the
target, the data and the fleet; the scenario's load profile (bench_dsl.engine.profiles) gives the
scheduler that walks the phases on that fleet; each moment the scheduler yields goes to the tally
(bench_dsl.engine.tally), which folds the figures, asks the judge and the server side, watches the
target and says it all in events (bench_dsl.engine.events). The run keeps no result document: a
sink builds that from the events. Signals (Ctrl-C, kill, a closed terminal) stop it; what was
measured is always said. Never imports a user interface, nor names a profile or a fleet."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import gc
import os
import signal
import traceback
from collections.abc import Mapping
from dataclasses import dataclass, field

from bench_dsl import __version__
from bench_dsl.core.clock import MONOTONIC, Clock
from bench_dsl.core.dsn import Dsn
from bench_dsl.core.errors import ExitCode, TargetError
from bench_dsl.core.prepare_report import PrepareReport
from bench_dsl.engine import events as ev
from bench_dsl.engine import outcome
from bench_dsl.engine.bottleneck import RunFacts
from bench_dsl.engine.judge import Judge
from bench_dsl.engine.phases import Plan
from bench_dsl.engine.profiles.registry import profile_of
from bench_dsl.engine.signals import StopSignals
from bench_dsl.engine.stage import FleetChoice, Stage
from bench_dsl.engine.stopping import Stop, StopReason
from bench_dsl.engine.study_configuration import StudyConfiguration
from bench_dsl.engine.tally import Tally
from bench_dsl.engine.voice import Voice
from bench_dsl.engine.watch import TargetWatch
from bench_dsl.fleet.base import ClusterError, Fleet, WorkerFailed, WorkerLostError
from bench_dsl.fleet.registry import KINDS
from bench_dsl.language import model as m
from bench_dsl.measure.cpu import CpuSampler
from bench_dsl.server.side import ServerSide
from bench_dsl.workloads.registry import METRICS, PLUGINS, make_workload


@dataclass
class Options:
    time_scale: float = 1.0
    max_steps: int | None = None
    keep_server: bool = False
    force_prepare: bool = False
    prepare_only: bool = False
    target: Dsn | None = None  # --target overrides the file
    workers: int | None = None  # --workers overrides the file (0: auto), with `cluster`; None: the file's setting
    cluster: str | None = None  # with workers: a named fleet's (bench_dsl.fleet.registry.NAMED), None: this machine
    fleet_options: Mapping[str, str] = field(default_factory=dict)  # its own options given (FleetOption.key)
    # Users never share the event loop of a live screen: with one worker, it is still a process
    isolate_users: bool = False
    configuration: StudyConfiguration | None = None  # a study's run: which configuration and repeat


class Run:
    def __init__(self, sc: m.Scenario, plan: Plan, sinks: list[ev.Sink], options: Options | None = None,
                 clock: Clock = MONOTONIC) -> None:
        sc = sc.seeded()
        self.sc = sc
        self.plan = plan
        self.clock = clock  # what the run is timed on: the machine's, or a test's virtual one
        self.voice = Voice(sinks, clock)
        self.bus = self.voice.bus
        self.opt = options or Options()
        self.workload = make_workload(sc)
        self.names = self.workload.names
        profile = profile_of(sc.ramp)
        self.judge = Judge(sc.stop, self.names, profile.axis, profile.point)
        self.stop = Stop()
        self.scheduler = profile.scheduler(plan, self.voice.elapsed, self.stop.stopping, load=sc.ramp, clock=clock)
        self.scheduler.on_worker_loss = sc.on_worker_loss
        self.status = "running"
        self.exit_code = ExitCode.OK
        self._interrupts = 0
        self.stage = Stage(sc, plan, self.workload, self.voice)
        self.fleet: Fleet | None = None
        self.server_side = ServerSide(sc, self.workload.server_counters, self.voice.log,
                                      PLUGINS[sc.workload.kind].counted, tuple(n for d in METRICS for n in d.status))
        self.watch = TargetWatch(self.voice.scrub, None, clock)
        self.tally = Tally(plan, sc.report_every, self.workload, profile, self.judge, self.voice, self.server_side,
                           self.watch, self.stop)
        self._prepare_task: asyncio.Task[PrepareReport] | None = None

    @property
    def sinks(self) -> list[ev.Sink]:
        return self.bus.sinks

    @property
    def holding(self) -> bool:
        return self.scheduler.holding

    @property
    def t0(self) -> float:
        """When the run began (on its clock); 0 before it does."""
        return self.voice.t0

    @t0.setter
    def t0(self, value: float) -> None:
        self.voice.t0 = value

    @property
    def stop_reason(self) -> StopReason | None:
        return self.stop.reason

    @stop_reason.setter
    def stop_reason(self, value: StopReason | None) -> None:
        self.stop.reason = value

    # events ------------------------------------------------------------------------------------
    def publish(self, event: ev.Event) -> None:
        self.voice.publish(event)

    def log(self, message: str, level: str = "info") -> None:
        self.voice.log(message, level)

    def _scrub(self, text: str) -> str:
        return self.voice.scrub(text)

    def elapsed(self) -> float:
        return self.voice.elapsed()

    # control -----------------------------------------------------------------------------------
    def interrupt(self, signum: int) -> None:
        self._interrupts += 1
        name = signal.Signals(signum).name
        if self.stop_reason is None:
            self.stop_reason = StopReason("interrupted", signal=name)
            self.log(f"{name}: stopping and saving what was measured (again to stop at once)", "warning")
        else:
            if self.stop_reason.kind == "interrupted" and signum != signal.SIGINT:
                # a TERM or HUP after a Ctrl-C: the exit status says so
                self.stop_reason = dataclasses.replace(self.stop_reason, signal=name)
            if self._interrupts > 1 and self.fleet is not None:
                self.fleet.cancel_in_flight()  # again: cancel in-flight transactions too
        if self._prepare_task is not None and not self._prepare_task.done():
            self._prepare_task.cancel()  # nothing is measured while loading: stop at once
        self.scheduler.wake()

    # What a front end may ask while the run goes on (the terminal UI's keys). Each takes effect at
    # the next tick and is announced with a Control event.
    def request_stop(self) -> None:
        """Stop and save what was measured, as Ctrl-C does."""
        self._interrupts += 1
        if self.stop_reason is None:
            self.stop_reason = StopReason("interrupted", signal="user")
            self.log("stop requested: stopping and saving what was measured", "warning")
            self.publish(ev.Control("stop", self.holding, round(self.elapsed(), 3)))
        if self._prepare_task is not None and not self._prepare_task.done():
            self._prepare_task.cancel()
        self.scheduler.wake()

    def next_step(self) -> None:
        """End the current step (or the warmup) now: a hold ends and is judged on what it measured."""
        self.scheduler.next_step()
        self.publish(ev.Control("next", False, round(self.elapsed(), 3)))

    def toggle_hold(self) -> bool:
        """Hold the current phase at its users until called again (the phase's clock stops)."""
        holding = self.scheduler.toggle_hold()
        self.log("holding at the current users (press again to go on)" if holding else "hold released")
        self.publish(ev.Control("hold", holding, round(self.elapsed(), 3)))
        return holding

    # the run -----------------------------------------------------------------------------------
    async def execute(self) -> int:
        self.signals = signals = StopSignals(self.interrupt)
        signals.install()
        self.t0 = self.clock.now()
        # the target as validation (or the command line) parsed it; its password known before the
        # scenario is quoted
        given = self.opt.target or self.sc.target_dsn
        for d in (self.opt.target, self.sc.target_dsn):  # the file's too, when --target overrides it
            if d is not None:
                self.voice.secret(d.password)
        self.publish(ev.Begin(__version__, outcome.now(), outcome.scenario_info(
            self.sc, self.workload.description(), self.names, self.plan, self.opt.time_scale, self.opt.max_steps,
            self._scrub), outcome.this_machine(), self.opt.configuration,
            outcome.figures(self.sc, self.server_side.counters.figures())))
        try:
            await self._execute(given)
        except TargetError as exc:
            self.tally.salvage()
            self.status = "target_failed"
            self.exit_code = ExitCode.TARGET_FAILED
            self.stop_reason = self.stop_reason or StopReason("target_failed", message=self._scrub(str(exc)))
            self.log(str(exc), "error")
        except WorkerFailed as exc:
            self.tally.salvage()
            if self.stop_reason is not None and self.stop_reason.kind == "interrupted":
                # the signal that stopped the run reached the workers too: the run was interrupted
                self.log(f"{exc} while stopping; what was measured so far is kept", "warning")
            else:
                self.status = "failed"
                self.exit_code = ExitCode.FAILURE
                self.stop_reason = self.stop_reason or StopReason("worker_failed", message=self._scrub(str(exc)))
                if isinstance(exc, ClusterError):
                    said = str(exc)
                elif isinstance(exc, WorkerLostError):
                    said = f"{exc}; what was measured so far is kept (`on worker loss continue` goes on without it)"
                else:
                    said = f"{exc}: bench-dsl itself failed; what was measured so far is kept"
                self.log(said, "error")
        except asyncio.CancelledError:
            if self.stop_reason is None or self._prepare_task is None or not self._prepare_task.cancelled():
                raise
            self.log("loading stopped: the data is incomplete and will be loaded again by the next run", "warning")
        except Exception as exc:
            # a defect of bench-dsl's own: still write what was measured, and say it failed
            self.tally.salvage()
            self.status = "failed"
            self.exit_code = ExitCode.FAILURE
            self.stop_reason = self.stop_reason or StopReason("internal_error",
                                                              message=self._scrub(f"{type(exc).__name__}: {exc}"))
            self.log(f"internal error: {type(exc).__name__}: {exc} (BENCH_DEBUG=1 shows where)", "error")
            if os.environ.get("BENCH_DEBUG"):
                traceback.print_exc()
        finally:
            if self.fleet is not None:
                with contextlib.suppress(Exception):
                    await self.fleet.stop()
                if (cluster := self.fleet.cluster()) is not None:  # now with the users each node ran
                    self.voice.publish(ev.Cluster(cluster))
            await self.server_side.stop()
            await self.stage.stop_server(self.opt.keep_server)
            signals.saving()
            self.finish()
        return int(self.exit_code)

    async def _execute(self, dsn: Dsn | None) -> None:
        """The run against `dsn`, or against a throwaway server when it is None."""
        stage = self.stage
        target = await stage.target(dsn, self.opt.time_scale, self.opt.max_steps, self.judge.specs(),
                                    self.opt.keep_server)
        for d in (target.dsn, *target.replicas):
            self.voice.secret(d.password)  # the throwaway servers' own: never quoted in any output
        self.watch.server_alive = target.server_alive
        if self.stop_reason:  # interrupted while the server started: no loading to sit through
            return
        problem = await self.server_side.check(target.dsn, target.data_dir, target.server_pid)
        if problem is not None:
            self.stop_reason = StopReason("scenario_error", message=problem)
            return
        given = self.opt.workers is not None
        cluster, requested = (self.opt.cluster, self.opt.workers) if given else (self.sc.cluster, self.sc.workers)
        chosen: FleetChoice | None = None
        if cluster is not None and not self.opt.prepare_only:
            # joined before the data is loaded: a cluster that cannot run the users says so now, not
            # after the load (which may take an hour); this machine's fleets have nothing to find
            chosen = stage.fleet(target, requested, self.opt.isolate_users, cluster, self.opt.fleet_options)
            self.fleet = chosen.fleet  # stopped in execute() whatever happens from here on
            await chosen.fleet.reach()
            if self.stop_reason:
                return
        self._prepare_task = await stage.prepare(target.dsn, self.opt.force_prepare)
        failed = await stage.prepared(self._prepare_task)
        if failed is not None:
            self.stop_reason = failed
            return
        if self.opt.prepare_only:
            self.status = "prepared"
            return
        if self.stop_reason:
            return
        if chosen is None:
            chosen = stage.fleet(target, requested, self.opt.isolate_users, cluster, self.opt.fleet_options)
            self.fleet = chosen.fleet  # stopped in execute() whatever happens from here on
        await stage.start_fleet(chosen)
        # again: a fleet's engine may have put its own handlers in their place (Ray's core worker
        # installs a C++ one for SIGTERM that prints a stack and aborts, losing the run's last words)
        self.signals.install()
        self.judge.client_capacity_pct = chosen.fleet.capacity_pct()
        await self.server_side.start(target.dsn, target.replicas)
        self.watch.silent_s = self.server_side.silent_s
        cpu = CpuSampler(target.server_pid)
        self.tally.bottleneck.facts = self._facts(target.server_pid, chosen, cpu)
        await self.measure(chosen.fleet, cpu)

    def _facts(self, server_pid: int | None, chosen: FleetChoice, cpu: CpuSampler) -> RunFacts:
        """What the bottleneck's rules need to know of the machines: cpu(server) is a % of this
        machine's cores when the server runs here (of its host's, read by node_exporter, with a
        monitor); a fleet that no scenario names runs on this machine."""
        here = server_pid is not None and self.sc.monitor is None
        local_fleet = not KINDS[chosen.kind].named
        capacity = chosen.fleet.capacity_pct()
        return RunFacts(server_cores=float(cpu.ncpu) if here else None,
                        allowed_cores=cpu.allowed_cores() if here else None,
                        shared_machine=(server_pid is not None) if local_fleet else None,
                        client_capacity_pct=capacity,
                        client_cores=capacity / 100 * cpu.ncpu if local_fleet else None)

    async def measure(self, fleet: Fleet, cpu: CpuSampler) -> None:
        """The plan's phases on a started fleet: what follows the stage (tests run it on a fake
        fleet). The scheduler's moments go to the tally, one by one."""
        self.fleet = fleet
        self.tally.begin(fleet, cpu)
        if not self.t0:
            self.t0 = self.clock.now()
        # what the run holds by now (the scenario, the workload, the modules: most of the heap) is
        # left out of the collector's passes, which the ticks' garbage starts every second: at 1,000
        # workers those passes cost more than the tally
        gc.collect()
        gc.freeze()
        try:
            async with contextlib.aclosing(self.scheduler.run(fleet)) as moments:
                async for moment in moments:
                    await self.tally.take(moment)
        finally:
            gc.unfreeze()  # a study's next run frees this one's

    # the end -----------------------------------------------------------------------------------
    def finish(self) -> None:
        """The run's end: its status, exit code, expectations and verdict, said in events."""
        if self.status == "running":
            self.status = self.stop_reason.status if self.stop_reason is not None else "completed"
        tally = self.tally
        saturation, expect = self.judge.verdict(self.stop_reason, tally.steps, self.sc.expect, tally.run_agg)
        code = outcome.exit_code(self.status, self.stop_reason, expect)
        if code is not None:
            self.exit_code = code
        if self.exit_code == ExitCode.EXPECT_FAILED:
            for e in expect:
                if not e.passed:
                    why = f": {e.reason}" if e.reason else ""
                    self.log(f"expectation failed: {e.expect} (measured {e.value}){why}", "error")
        self.publish(ev.Power(*self.server_side.power_figure()))
        summary = tally.summary(final=True)
        report = self.workload.report(summary) if summary is not None else None
        for line in self.workload.report_lines(report) if report is not None else []:
            self.log(line)
        tally.totals(saturation, summary)
        self.publish(ev.Finished(self.status, int(self.exit_code), saturation, self.stop_reason, expect, summary,
                                 round(self.elapsed(), 3), outcome.now(), tally.executor(), report))
