"""The run: from a scenario and its plan to events, and an exit status.

It sets the stage (bench_dsl.engine.stage: target, data, fleet), lets the scheduler walk the phases, folds
the ticks it gets into intervals and steps, asks the judge about each, watches the target, and says
all of it in events (bench_dsl.engine.events). It keeps no result document: a sink builds that from the
events. Signals (Ctrl-C, kill, a closed terminal) stop it; what was measured is always said.
Never imports a user interface."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
import traceback
from dataclasses import dataclass
from typing import Any

from bench_dsl import __version__
from bench_dsl.engine import events as ev
from bench_dsl.language import model as m
from bench_dsl.engine import outcome as results
from bench_dsl.measure.cpu import CpuSampler
from bench_dsl.server.counters import ServerCounters
from bench_dsl.server.side import ServerSide
from bench_dsl.core.dsn import Dsn, redact
from bench_dsl.core.errors import ExitCode, TargetError
from bench_dsl.fleet.base import Fleet, WorkerFailed
from bench_dsl.engine.judge import CLIENT_LAG_MS, CUT_SHORT, Judge, Verdict, expectations, step_warnings
from bench_dsl.measure.metrics import Aggregate, Tick
from bench_dsl.engine.plan import Phase, Plan
from bench_dsl.measure.schedlag import LagWindow
from bench_dsl.engine.scheduler import UsersScheduler
from bench_dsl.engine.signals import StopSignals
from bench_dsl.engine.stage import Stage
from bench_dsl.engine.watch import TargetWatch
from bench_dsl.workloads.registry import make_workload


@dataclass
class Options:
    time_scale: float = 1.0
    max_steps: int | None = None
    keep_server: bool = False
    force_prepare: bool = False
    prepare_only: bool = False
    target: Dsn | None = None  # --target overrides the file
    workers: int | None = None  # --workers overrides the file (0: auto); None: the file's setting
    # Users never share the event loop of a live screen: with one worker, it is still a process
    isolate_users: bool = False
    configuration: dict[str, Any] | None = None  # a study's run: which configuration and repeat


class Run:
    def __init__(self, sc: m.Scenario, plan: Plan, sinks: list[ev.Sink], options: Options | None = None) -> None:
        sc = sc.seeded()
        self.sc = sc
        self.plan = plan
        self.bus = ev.Bus(sinks, clock=self.elapsed)
        self.opt = options or Options()
        self.workload = make_workload(sc)
        self.names = self.workload.names
        self.judge = Judge(sc.stop, self.names)
        self.scheduler = UsersScheduler(plan, self)
        self.stop_reason: dict[str, Any] | None = None
        self.status = "running"
        self.exit_code = ExitCode.OK
        self._interrupts = 0
        self.t0 = 0.0
        self.secrets: list[str] = []
        self.run_agg = Aggregate(self.names)
        self.step_agg = Aggregate(self.names)
        self.interval_agg = Aggregate(self.names)
        # the client's scheduling lag beside them (fleet.lag): the judge reads the step's
        self.lag_run, self.lag_step, self.lag_interval = LagWindow(), LagWindow(), LagWindow()
        self.interval_start = 0.0
        self.step_started = 0.0
        self.steps: list[dict[str, Any]] = []  # what the judge's saturation point counts
        self.executors: set[str] = set()  # how the users sent statements, over the whole run
        self.error_messages: dict[int, str] = {}
        self.stage = Stage(sc, plan, self.workload, self.publish, self.log, self.elapsed, self._scrub)
        self.fleet: Fleet | None = None
        self.cpu: CpuSampler | None = None
        self.counters = ServerCounters(self.workload.server_counters, lambda msg: self.log(msg, "warning"))
        self.server_side = ServerSide(sc, self.counters, self.log)
        self.watch = TargetWatch(self._scrub, None)
        self._prepare_task: asyncio.Task[dict[str, object]] | None = None
        self._phase_now: Phase | None = None

    @property
    def sinks(self) -> list[ev.Sink]:
        return self.bus.sinks

    @property
    def holding(self) -> bool:
        return self.scheduler.holding

    # events ------------------------------------------------------------------------------------
    def publish(self, event: ev.Event) -> None:
        self.bus.publish(event)

    def log(self, message: str, level: str = "info") -> None:
        self.publish(ev.Log(level, self._scrub(message), round(self.elapsed(), 3)))

    def _scrub(self, text: str) -> str:
        for s in self.secrets:  # first: a password is found whatever surrounds it
            text = text.replace(s, "***")
        return redact(text)

    def elapsed(self) -> float:
        return time.monotonic() - self.t0 if self.t0 else 0.0

    # control -----------------------------------------------------------------------------------
    def interrupt(self, signum: int) -> None:
        self._interrupts += 1
        name = signal.Signals(signum).name
        if self.stop_reason is None:
            self.stop_reason = {"reason": "interrupted", "signal": name}
            self.log(f"{name}: stopping and saving what was measured (again to stop at once)", "warning")
        else:
            if self.stop_reason.get("reason") == "interrupted" and signum != signal.SIGINT:
                self.stop_reason["signal"] = name  # a TERM or HUP after a Ctrl-C: the exit status says so
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
            self.stop_reason = {"reason": "interrupted", "signal": "user"}
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
        signals = StopSignals(self.interrupt)
        signals.install()
        self.t0 = time.monotonic()
        # the target as validation (or the command line) parsed it; its password known before the
        # scenario is quoted
        given = self.opt.target or self.sc.target_dsn
        for d in (self.opt.target, self.sc.target_dsn):  # the file's too, when --target overrides it
            if d is not None and d.password:
                self.secrets.append(d.password)
        self.publish(ev.Begin(__version__, results.now(), results.scenario_json(
            self.sc, self.workload.description(), self.names, self.plan, self.opt.time_scale, self.opt.max_steps,
            self._scrub), results.machine_info(), self.opt.configuration))
        try:
            await self._execute(given)
        except TargetError as exc:
            self._salvage()
            self.status = "target_failed"
            self.exit_code = ExitCode.TARGET_FAILED
            self.stop_reason = self.stop_reason or {"reason": "target_failed", "message": self._scrub(str(exc))}
            self.log(str(exc), "error")
        except WorkerFailed as exc:
            self._salvage()
            if (self.stop_reason or {}).get("reason") == "interrupted":
                # the signal that stopped the run reached the workers too: the run was interrupted
                self.log(f"{exc} while stopping; what was measured so far is kept", "warning")
            else:
                self.status = "failed"
                self.exit_code = ExitCode.FAILURE
                self.stop_reason = self.stop_reason or {"reason": "worker_failed", "message": self._scrub(str(exc))}
                self.log(f"{exc}: bench-dsl itself failed; what was measured so far is kept", "error")
        except asyncio.CancelledError:
            if self.stop_reason is None or self._prepare_task is None or not self._prepare_task.cancelled():
                raise
            self.log("loading stopped: the data is incomplete and will be loaded again by the next run", "warning")
        except Exception as exc:
            # a defect of bench-dsl's own: still write what was measured, and say it failed
            self._salvage()
            self.status = "failed"
            self.exit_code = ExitCode.FAILURE
            self.stop_reason = self.stop_reason or {"reason": "internal_error",
                                                    "message": self._scrub(f"{type(exc).__name__}: {exc}")}
            self.log(f"internal error: {type(exc).__name__}: {exc} (BENCH_DEBUG=1 shows where)", "error")
            if os.environ.get("BENCH_DEBUG"):
                traceback.print_exc()
        finally:
            if self.fleet is not None:
                with contextlib.suppress(Exception):
                    await self.fleet.stop()
            self.counters.close(final=True)
            await self.server_side.stop()
            await self.stage.stop_server(self.opt.keep_server)
            signals.saving()
            self.finish()
        return int(self.exit_code)

    async def _execute(self, dsn: Dsn | None) -> None:
        """The run against `dsn`, or against a throwaway server when it is None."""
        stage = self.stage
        dsn = await stage.target(dsn, self.opt.time_scale, self.opt.max_steps, self.judge.specs(),
                                 self.opt.keep_server)
        for d in (dsn, *stage.replica_dsns):
            if d.password and d.password not in self.secrets:
                self.secrets.append(d.password)  # the throwaway servers' own: never quoted in any output
        if stage.server is not None:
            self.watch.server_alive = stage.server.alive
        if self.stop_reason:  # interrupted while the server started: no loading to sit through
            return
        data_dir = str(stage.server.basedir / "data") if stage.server and stage.server.basedir else None
        problem = await self.server_side.check(dsn, data_dir, stage.server_pid)
        if problem is not None:
            self.stop_reason = {"reason": "scenario_error", "code": None, "transaction": None, "message": problem}
            return
        self._prepare_task = await stage.prepare(dsn, self.opt.force_prepare)
        failed = await stage.prepared(self._prepare_task)
        if failed is not None:
            self.stop_reason = failed
            return
        if self.opt.prepare_only:
            self.status = "prepared"
            return
        if self.stop_reason:
            return
        requested = self.opt.workers if self.opt.workers is not None else self.sc.workers
        fleet = stage.fleet(dsn, requested, self.opt.isolate_users)
        self.fleet = fleet  # stopped in execute() whatever happens from here on
        ncpu = os.cpu_count() or 1
        self.judge.client_capacity_pct = 100.0 * min(getattr(fleet, "count", 1) + 1, ncpu) / ncpu
        await fleet.start()
        await self.counters.open(dsn)
        self.watch.silent_s = self.counters.silent_s
        await self.server_side.start(dsn, stage.replica_dsns)
        await self.measure(fleet, CpuSampler(stage.server_pid))

    async def measure(self, fleet: Fleet, cpu: CpuSampler) -> None:
        """The plan's phases on a started fleet: what follows the stage (tests run it on a fake fleet)."""
        self.fleet, self.cpu = fleet, cpu
        if not self.t0:
            self.t0 = time.monotonic()
        await self.scheduler.run(fleet)

    # the scheduler's consumer -------------------------------------------------------------------
    def stopping(self) -> bool:
        return self.stop_reason is not None

    async def phase_begins(self, ph: Phase, new_step: bool) -> None:
        label = "warmup" if ph.step is None else f"step {ph.step}/{self.plan.steps} {ph.kind}"
        self.log(f"{label}: {ph.users if ph.users == ph.users_end else f'{ph.users} -> {ph.users_end}'} users "
                 f"for {ph.seconds:g}s")
        if new_step:
            self.judge.new_step()
            self.step_agg = Aggregate(self.names)
            self.lag_step = LagWindow()
        self.publish(ev.Phase(ph.kind, ph.step, self.plan.steps, ph.users, ph.seconds, ph.users_end,
                              round(self.elapsed(), 3)))
        self.interval_agg = Aggregate(self.names)
        self.lag_interval = LagWindow()
        self._phase_now = ph  # from here on, an error inside the phase keeps what it measured (_salvage)
        if new_step:
            await self.counters.begin_step()
        if ph.measured:
            await self.counters.rebase_status()
        self.interval_start = self.elapsed()
        if new_step:
            self.step_started = self.interval_start

    async def step_last_tick(self, ph: Phase) -> None:
        await self.counters.end_step()
        await self.counters.refresh_status()

    def lost_tick(self, tick: Tick, ph: Phase) -> None:
        self.tick(tick, ph, None, False, watch=False)

    def tick(self, tick: Tick, ph: Phase, remaining_s: float | None, final: bool, watch: bool = True) -> None:
        """A tick into the figures, then to the sinks."""
        assert self.cpu is not None
        tick.cpu = self.cpu.sample()
        self.server_side.fill(tick)
        self.interval_agg.add(tick)
        lag = self.fleet.lag() if self.fleet is not None else {}
        self.lag_interval.add(lag)
        if tick.measured:
            self.step_agg.add(tick)
            self.run_agg.add(tick)
            self.lag_step.add(lag)
            self.lag_run.add(lag)
            fired = self.judge.tick(tick, judging=self.stop_reason is None)
            if fired is not None:
                self._fire(fired, ph)
        # the worst process's scheduling lag over the step so far (the interval's outside the steps),
        # with the bound the judge holds it to: the live screen shows it while the run goes on
        worst = (self.lag_step if tick.measured else self.lag_interval).worst_p90()
        if self.interval_agg.ticks >= int(self.sc.report_every):
            self._flush_interval(ph)
        figures = tick.figures()
        if tick.measured and (stalls := self.step_agg.stalls()) is not None and stalls.stalls:
            figures["stall_s"] = round(stalls.longest_s, 1)  # the step's longest stall so far
        if worst is not None:
            figures["client_lag"] = {"p90_ms": worst, "bound_ms": CLIENT_LAG_MS}
        self.publish(ev.Tick(tick.t, ph.kind, ph.step, tick.users, self.holding, remaining_s, figures))
        if self.judge.changed:
            self.publish(ev.Conditions(tick.t, self.judge.states()))
        if watch:
            self._watch_target(ending=ph.measured and final, hold_end=ph.kind == "hold" and final)

    async def phase_ends(self, ph: Phase) -> None:
        server = await self.counters.step_figures() if ph.measured else None
        self._phase_now = None
        self._flush_interval(ph)
        if ph.kind == "hold" and self.stop_reason is None:
            verdicts, fired, stalled = self.judge.step_end(ph, self.step_agg)
            for said in step_warnings(verdicts, stalled):
                self.log(f"s{ph.step}: {said}", "warning")
            self._record_step(ph, verdicts, server, stalled)
            if fired is not None:
                self._fire(fired, ph)
        elif ph.measured and self.stop_reason is not None:
            self._record_step(ph, self.judge.conditions(self.step_agg), server, CUT_SHORT)
        if self.judge.changed:
            self.publish(ev.Conditions(round(self.elapsed(), 3), self.judge.states()))
        if ph.measured:
            self._totals()  # the step and its verdict written now, not after the fleet and server stop

    # figures -----------------------------------------------------------------------------------
    def _figures(self, agg: Aggregate) -> dict[str, Any]:
        """An aggregate's figures, with the statements per second by kind the workload knows."""
        out = agg.summary()
        rates = self.workload.rates(out["tps"])  # type: ignore[arg-type]
        return out | {"statements": rates} if rates is not None else out

    def _flush_interval(self, ph: Phase) -> None:
        agg = self.interval_agg
        if agg.ticks == 0:
            return
        row = {"type": "interval", "t": round(self.elapsed(), 3), "start_s": round(self.interval_start, 3),
               "phase": ph.kind, "step": ph.step, "measured": ph.measured, **self._figures(agg),  # users: those that ran
               **self.lag_interval.to_json()}
        # for live displays: the step so far beside this interval (percentiles are not additive)
        so_far = self.step_agg.so_far() if ph.measured and self.step_agg.ticks else None
        self.publish(ev.Interval(row, so_far))
        self.interval_agg = Aggregate(self.names)
        self.lag_interval = LagWindow()
        self.interval_start = self.elapsed()
        fired = self.judge.interval(ph, agg, self.step_agg, judging=self.stop_reason is None)
        if fired is not None:
            self._fire(fired, ph)
        self._totals()

    def _record_step(self, ph: Phase, verdicts: list[Verdict], server: dict[str, Any] | None, why: str | None) -> None:
        agg = self.step_agg
        if agg.ticks == 0:
            return
        summary = agg.summary()
        if server is not None and "nopm" in server and summary.get("nopm"):
            server["nopm_client_vs_server_pct"] = round(100.0 * (summary["nopm"] - server["nopm"])  # type: ignore[operator]
                                                        / server["nopm"], 2) if server["nopm"] else None
        row = {"type": "step", "step": ph.step, "users": ph.users if ph.kind == "hold" else agg.users_max,
               "complete": why is None, **({"incomplete_reason": why} if why else {}), "start_s": round(self.step_started, 3),
               **summary, **self.lag_step.to_json(),
               **({"statements": r} if (r := self.workload.rates(summary["tps"])) is not None else {}),
               "server": server, "conditions": [v.to_json() for v in verdicts], "histograms": agg.histograms()}
        self.steps.append(row)
        self.publish(ev.Step(row))

    def _fire(self, v: Verdict, ph: Phase) -> None:
        self.stop_reason = {"reason": "stop_condition", **v.to_json(), "step": ph.step,
                            "users": self.fleet.active if self.fleet else None, "at_s": round(self.elapsed(), 3)}
        self.log(f"stop condition fired: {v.describe()}", "warning")
        self.publish(ev.Fired(self.stop_reason))

    def _totals(self) -> None:
        """The run so far, for a result that must stand whenever the run is cut off."""
        if self.fleet is not None:
            self.executors.update(self.fleet.health().executors)
        self.publish(ev.Saturation(self.judge.saturation(self.stop_reason, self.steps)))
        summary = self.run_agg.summary() | self.lag_run.to_json() | {"histograms": self.run_agg.histograms()} \
            if self.run_agg.ticks else None
        self.publish(ev.Totals(summary, "+".join(sorted(self.executors)) or None, self.stop_reason, self.elapsed()))

    def _watch_target(self, ending: bool = False, hold_end: bool = False) -> None:
        """`ending`: the last tick of a measured phase, whose users must all have run for it to count."""
        assert self.fleet is not None
        health = self.fleet.health()
        new = {k: v for k, v in health.error_messages.items() if k not in self.error_messages}
        if new:
            self.error_messages.update(new)
            self.publish(ev.ErrorMessages(new))
        if self.stop_reason is not None:
            return
        self.counters.poke()
        ph = self._phase_now
        stop = self.watch.check(health, self.fleet.active, ph.step if ph else None, self.elapsed(), ending, hold_end)
        if stop is not None:
            self.stop_reason = stop.reason
            self.log(stop.message, stop.level)
            if stop.fired:
                self.publish(ev.Fired(stop.reason))

    def _salvage(self) -> None:
        """The run ends by an error inside a phase: keep its last interval and its step so far."""
        ph = self._phase_now
        if ph is None:
            return
        with contextlib.suppress(Exception):
            self._flush_interval(ph)
            if ph.measured:
                self._record_step(ph, self.judge.conditions(self.step_agg), None, CUT_SHORT)
        self._phase_now = None

    # the end -----------------------------------------------------------------------------------
    def finish(self) -> None:
        """The run's end: its status, exit code, expectations and verdict, said in events."""
        reason = (self.stop_reason or {}).get("reason")
        if self.status == "running":
            self.status = {"interrupted": "interrupted", "target_failed": "target_failed",
                           "scenario_error": "scenario_error", "stop_condition": "completed"}.get(reason, "completed")
        expect = expectations(self.sc.expect, self.judge.saturation_users, self.run_agg,
                              self.judge.client_limited(self.steps))
        code = results.exit_code(self.status, self.stop_reason, expect)
        if code is not None:
            self.exit_code = code
        if self.exit_code == ExitCode.EXPECT_FAILED:
            for e in expect:
                if not e["passed"]:
                    why = f": {e['reason']}" if e.get("reason") else ""
                    self.log(f"expectation failed: {e['expect']} (measured {e['value']}){why}", "error")
        summary = self.run_agg.summary() | self.lag_run.to_json() if self.run_agg.ticks else None
        report = self.workload.report(summary) if summary is not None else None
        for line in self.workload.report_lines(report) if report is not None else []:
            self.log(line)
        self._totals()
        saturation = self.judge.saturation(self.stop_reason, self.steps)
        self.publish(ev.Finished(self.status, int(self.exit_code), saturation, self.stop_reason, expect, summary,
                                 round(self.elapsed(), 3), results.now(), "+".join(sorted(self.executors)) or None,
                                 report))
