"""The run: target, prepare, virtual users, ticks, ramp, stop conditions, saturation point.
Emits events to sinks; never imports a user interface."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import time
import traceback
from collections import Counter
from dataclasses import dataclass
from typing import Any

import asyncmy

from bench_dsl import model as m
from bench_dsl import native
from bench_dsl import results
from bench_dsl.conditions import Verdict, WindowedConditions, judge, show, show_limit
from bench_dsl.cpu import CpuSampler
from bench_dsl.dsn import Dsn, redact
from bench_dsl.errors import ExitCode, TargetError
from bench_dsl.events import Event, Sink
from bench_dsl.fleet import Fleet, LocalFleet, ProcessFleet, WorkerFailed, worker_count
from bench_dsl.metrics import Aggregate, Tick
from bench_dsl.planner import Phase, Plan
from bench_dsl.server import CONNECTION_LOST, EmbeddedServer, apply_settings, connect, ensure_database, facts, open_target
from bench_dsl.workloads import make_workload
from bench_dsl.users import SCENARIO_ERRORS, Health
from bench_dsl.workloads.base import Progress, error_code

TARGET_TIMEOUT = 10.0  # seconds without a connection before the target counts as lost
# seconds some users may fail to connect while the others run before the run stops: a step with
# fewer users than planned is not the step that was asked for (e.g. max_connections reached)
CONNECT_GRACE = 5.0
# Ctrl-C, kill, and a closed terminal or ssh session: each stops the run and writes what was measured.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)



@dataclass
class Options:
    time_scale: float = 1.0
    max_steps: int | None = None
    keep_server: bool = False
    force_prepare: bool = False
    prepare_only: bool = False
    target: str | None = None  # --target overrides the file
    workers: int | None = None  # --workers overrides the file (0: auto); None: the file's setting
    # Users never share the event loop of a live screen: with one worker, it is still a process
    isolate_users: bool = False


class Run:
    def __init__(self, sc: m.Scenario, plan: Plan, sinks: list[Sink], options: Options | None = None) -> None:
        self.sc = sc
        self.plan = plan
        self.sinks = sinks
        self.opt = options or Options()
        self.workload = make_workload(sc)
        self.names = self.workload.names
        self.stop_reason: dict[str, Any] | None = None
        self.status = "running"
        self.exit_code = ExitCode.OK
        self._wake = asyncio.Event()
        self._interrupts = 0
        self.t0 = 0.0
        self.run_agg = Aggregate(self.names)
        self.steps: list[dict[str, Any]] = []
        self.intervals: list[dict[str, Any]] = []
        self.saturation_users: int | None = None
        self.saturation_step: int | None = None
        self.prev_step: Aggregate | None = None
        self.step_agg = Aggregate(self.names)
        self.step_of_agg: int | None = None
        self.step_started = 0.0
        self.windowed = WindowedConditions(sc.stop, self.names)
        self.errors: Counter[int] = Counter()
        self.error_messages: dict[int, str] = {}
        self.executors: set[str] = set()  # how the users sent statements, over the whole run
        self.warnings: list[str] = []
        self.server: EmbeddedServer | None = None
        self.fleet: Fleet | None = None
        self.ctl: asyncmy.Connection | None = None  # the coordinator's own connection: server counters
        self.step_counters: tuple[float, dict[str, int]] | None = None
        self.doc: dict[str, Any] = {}
        self.secrets: list[str] = []
        self._prep_t0: float | None = None
        self._prepare_task: asyncio.Task[dict[str, object]] | None = None
        self._phase_now: Phase | None = None
        self.holding = False
        self._skip = False
        self._refused_since: float | None = None  # since when some users could not connect
        self._skip_step: int | None = None
        self._prep_last = 0.0

    # events ------------------------------------------------------------------------------------
    def emit(self, type_: str, **data: Any) -> None:
        ev = Event(type_, data)
        for s in list(self.sinks):
            try:
                s.emit(ev)
            except Exception as exc:  # a sink (a closed pipe, a full disk) must never end the run
                self.sinks.remove(s)
                self.log(f"{type(s).__name__} stopped: {type(exc).__name__}: {exc}", "warning")

    def log(self, message: str, level: str = "info") -> None:
        message = self._scrub(message)
        if level == "warning":
            self.warnings.append(message)
        self.emit("log", level=level, message=message, t=round(self.elapsed(), 3))

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
        self._wake.set()

    # What a front end may ask while the run goes on (the terminal UI's keys). Each takes effect at
    # the next tick and is announced with a "control" event.
    def request_stop(self) -> None:
        """Stop and save what was measured, as Ctrl-C does."""
        self._interrupts += 1
        if self.stop_reason is None:
            self.stop_reason = {"reason": "interrupted", "signal": "user"}
            self.log("stop requested: stopping and saving what was measured", "warning")
            self.emit("control", action="stop", holding=self.holding, t=round(self.elapsed(), 3))
        if self._prepare_task is not None and not self._prepare_task.done():
            self._prepare_task.cancel()
        self._wake.set()

    def next_step(self) -> None:
        """End the current step (or the warmup) now: a hold ends and is judged on what it measured."""
        self._skip = True
        self.holding = False
        self.emit("control", action="next", holding=False, t=round(self.elapsed(), 3))
        self._wake.set()

    def toggle_hold(self) -> bool:
        """Hold the current phase at its users until called again (the phase's clock stops)."""
        self.holding = not self.holding
        self.log("holding at the current users (press again to go on)" if self.holding else "hold released")
        self.emit("control", action="hold", holding=self.holding, t=round(self.elapsed(), 3))
        self._wake.set()
        return self.holding

    async def execute(self) -> int:
        loop = asyncio.get_running_loop()
        # a signal this process was started to ignore (`nohup`, a shell's background job) stays ignored
        signals = [sig for sig in STOP_SIGNALS if signal.getsignal(sig) != signal.SIG_IGN]
        for sig in signals:
            try:
                loop.add_signal_handler(sig, self.interrupt, sig)
            except (NotImplementedError, RuntimeError):
                pass
        self.t0 = time.monotonic()
        started = results.now()
        # the target read once, its password known before the document quotes the scenario; a bad
        # address fails inside the run's handling below
        given: Dsn | None = None
        bad_target: TargetError | None = None
        try:
            given, _ = open_target(self.opt.target or self.sc.target)
        except TargetError as exc:
            bad_target = exc
        if given is not None and given.password:
            self.secrets.append(given.password)
        self.doc = self._document(started)
        try:
            if bad_target is not None:
                raise bad_target
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
            if self.ctl is not None:
                with contextlib.suppress(Exception):
                    self.ctl.close()
            if self.server is not None:
                try:
                    await asyncio.to_thread(self.server.stop)  # up to 30 s: never on the event loop
                except Exception as exc:  # the results are still to be finished and written
                    self.log(f"could not stop the throwaway server: {type(exc).__name__}: {exc}", "warning")
                if self.opt.keep_server and self.server.basedir:
                    self.log(f"kept the throwaway server's files in {self.server.basedir}")
            for sig in signals:  # from here on the results are being written: see _while_saving
                try:
                    loop.add_signal_handler(sig, self._while_saving, sig)
                except (NotImplementedError, RuntimeError):
                    pass
            self._finish()
        return int(self.exit_code)

    def _while_saving(self, signum: int) -> None:
        """A signal after the run, while its results are written (the front end closes its sinks
        before the event loop ends): the first one waits for them, the next one is obeyed."""
        loop = asyncio.get_running_loop()
        for sig in STOP_SIGNALS:
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.remove_signal_handler(sig)
        print(f"bench: {signal.Signals(signum).name} while writing the results: finishing them first "
              "(again to abandon them)", file=sys.stderr, flush=True)

    async def _execute(self, dsn: Dsn | None) -> None:
        """The run against `dsn`, or against a throwaway server when it is None."""
        sc = self.sc
        if dsn is None:
            self.server = EmbeddedServer(sc.server_settings, keep=self.opt.keep_server,
                                         max_connections=self.plan.max_users + 50)
            self.log("starting a throwaway server")
            t = time.monotonic()
            dsn = await self.server.start()
            self.log(f"throwaway server up in {time.monotonic() - t:.2f}s on 127.0.0.1:{dsn.port}"
                     + (f" (files in {self.server.basedir})" if self.opt.keep_server else ""))
        else:
            await ensure_database(dsn)
        self.dsn = dsn
        info = await facts(dsn, self.server.pid if self.server else None)
        applied = await apply_settings(dsn, sc.server_settings, embedded=self.server is not None)
        for a in applied:
            if not a.applied:
                self.log(f"server setting {a.name} = {a.requested}: {a.note} (server has {a.after})", "warning")
        if info.pid is None:
            self.log("cpu(server) cannot be measured: the server does not run on this machine", "warning")
        max_conn = int(info.variables.get("max_connections", "0") or 0)
        if max_conn and self.plan.max_users > max_conn - 5:
            self.log(f"the plan goes to {self.plan.max_users} users but max_connections is {max_conn}", "warning")
        self.doc["server"] = {
            "target": dsn.redacted(), "embedded": self.server is not None, "version": info.version,
            "pid_visible": info.pid is not None, "variables": info.variables,
            "settings": [a.to_json() for a in applied],
        }
        self.emit("started", scenario=sc.name, target=dsn.redacted(), server_version=info.version,
                  embedded=self.server is not None, plan=results.plan_json(self.plan, self.opt.time_scale, self.opt.max_steps), transactions=list(self.names),
                  conditions=[c.text for c in sc.stop],
                  condition_specs=[{"text": c.text, "resolved": c.resolved, "kind": c.kind, "metric": c.metric.label(),
                                    "op": c.op, "limit": show_limit(c), "unit": c.unit, "window_s": c.window}
                                   for c in sc.stop])
        self._checkpoint()
        if self.stop_reason:  # interrupted while the server started: no loading to sit through
            return

        # prepare -----------------------------------------------------------------------------------
        self.emit("phase", phase="prepare", step=None, steps=self.plan.steps, users=0, seconds=None)
        self._prepare_task = asyncio.create_task(
            self.workload.prepare(dsn, Progress(self.log, self._prepare_rows), force=self.opt.force_prepare))
        try:
            prep = await self._prepare_task
        except asyncmy.errors.MySQLError as exc:
            code = error_code(exc)
            if code in CONNECTION_LOST:
                raise TargetError(f"lost the server while loading the data: {self._scrub(str(exc))}") from None
            if code in SCENARIO_ERRORS:
                self.stop_reason = {"reason": "scenario_error", "code": code, "transaction": None,
                                    "message": self._scrub(str(exc.args[1]) if len(exc.args) > 1 else str(exc))}
                self.log(f"loading the data failed with error {code}: {self.stop_reason['message']}; "
                         "the scenario cannot run as written", "error")
                return
            raise
        self.doc["prepare"] = prep
        if self.opt.prepare_only:
            self.status = "prepared"
            return
        if self.stop_reason:
            return

        self.cpu = CpuSampler(info.pid)
        requested = self.opt.workers if self.opt.workers is not None else sc.workers
        light = self.workload.raw and native.raw_executor
        workers = worker_count(requested, self.plan.max_users, server_local=info.pid is not None, light=light)
        if workers == 1 and not self.opt.isolate_users:
            self.fleet = LocalFleet(dsn, self.workload, sc.seed)
        else:
            self.fleet = ProcessFleet(sc, dsn, self.names, workers, lambda msg, level: self.log(msg, level))
        await self.fleet.start()
        self.doc["workers"] = workers
        why = "" if requested else (" (workers auto: half the cores, the server runs here)"
                                    if info.pid is not None and not light else " (workers auto: one per core)")
        self.log(f"virtual users run in {workers} process{'es' if workers > 1 else ''}{why}")
        with contextlib.suppress(Exception):
            self.ctl = await connect(dsn, dsn.database)
        for ph in self.plan.phases:
            if self.stop_reason:  # also one that came while the workers started
                break
            if ph.step is not None and ph.step == self._skip_step:
                continue
            await self._phase(ph)

    def _prepare_rows(self, done: int, total: int) -> None:
        now = time.monotonic()
        if self._prep_t0 is None:
            self._prep_t0 = now
        if done < total and now - self._prep_last < 0.25:
            return  # a progress bar needs a few updates a second, not one per batch
        self._prep_last = now
        secs = now - self._prep_t0
        rate = done / secs if secs > 0 else 0.0
        eta = (total - done) / rate if rate > 0 else None
        self.emit("prepare", done=done, total=total, rows_per_s=round(rate, 1),
                  eta_s=None if eta is None else round(eta, 1), t=round(self.elapsed(), 3))

    # the tick loop -------------------------------------------------------------------------------
    async def _phase(self, ph: Phase) -> None:
        fleet = self.fleet
        assert fleet is not None
        label = "warmup" if ph.step is None else f"step {ph.step}/{self.plan.steps} {ph.kind}"
        self.log(f"{label}: {ph.users if ph.users == ph.users_end else f'{ph.users} -> {ph.users_end}'} users "
                 f"for {ph.seconds:g}s")
        await fleet.resize(ph.users)
        new_step = ph.measured and ph.step != self.step_of_agg
        if new_step:
            # a step's figures start with its first measured phase: a linear ramp's ramp and hold are one step
            self.windowed.reset()
            self.step_agg = Aggregate(self.names)
            self.step_of_agg = ph.step
        self.emit("phase", phase=ph.kind, step=ph.step, steps=self.plan.steps, users=ph.users,
                  users_end=ph.users_end, seconds=ph.seconds, t=round(self.elapsed(), 3))
        self.interval_agg = Aggregate(self.names)
        self._phase_now = ph  # from here on, an error inside the phase keeps what it measured (_salvage)
        if new_step:
            self.step_counters = await self._server_counters()
        await fleet.collect()  # connecting, and all before this moment, is not measured
        start = time.monotonic()
        self.interval_start = self.elapsed()
        if new_step:
            self.step_started = self.interval_start
        end = start + ph.seconds
        last = start
        held = 0.0  # seconds the phase's clock stood still (toggle_hold)
        end_counters: tuple[float, dict[str, int]] | None = None
        k = 1
        while True:
            at = min(start + k, end + held) if not self.holding else start + k
            self._wake.clear()
            delay = at - time.monotonic()
            if delay > 0:
                try:
                    await asyncio.wait_for(self._wake.wait(), delay)
                except asyncio.TimeoutError:
                    pass
            now = time.monotonic()
            if self.stop_reason is None and now < at - 1e-3:
                continue  # woken early without a reason
            if self.holding:
                held += now - last  # the phase's clock stands still while held
            users = fleet.active  # the users asked for; those that ran are known after the collect
            try:
                stats = await fleet.collect()
            except WorkerFailed as exc:
                if exc.partial is not None:  # the surviving workers' last second: measured, so kept
                    # (timed at `now`: they answered then, the failure may have taken REPLY_TIMEOUT)
                    self._count(Tick(round(now - self.t0, 3), now - last, ph.kind, ph.step, users, exc.partial,
                                     self.cpu.sample()), ph, end + held - now)
                raise
            final = not self.holding and now >= end + held - 1e-3  # the phase's last tick
            if ph.measured and final:
                # the step's last tick: the server's counters at the same moment as the client's
                end_counters = await self._server_counters()
            users = min(users, fleet.health().connected)
            tick = Tick(round(self.elapsed(), 3), now - last, ph.kind, ph.step, users, stats, self.cpu.sample())
            last = now
            self._count(tick, ph, end + held - now)
            self._watch_target(ending=ph.measured and final)
            if self.stop_reason is not None or self._skip or final:
                break
            k += 1
            if ph.kind == "ramp" and not self.holding:
                frac = min(1.0, (now - start - held) / ph.seconds)
                await fleet.resize(round(ph.users + (ph.users_end - ph.users) * frac), wait=False)
        server = await self._server_figures(end_counters) if ph.measured and ph.kind in ("hold", "ramp") else None
        self._phase_now = None
        self._flush_interval(ph)
        if self._skip and ph.kind == "settle":
            self._skip_step = ph.step  # `n` during a settle skips that step's hold too
        self._skip = False
        if ph.measured and ph.kind == "hold" and self.stop_reason is None:
            self._step_end(ph, server)
        elif ph.measured and self.stop_reason is not None and ph.kind in ("hold", "ramp"):
            self._record_step(ph, complete=False, verdicts=[], server=server)

    def _count(self, tick: Tick, ph: Phase, remaining_s: float) -> None:
        """A tick into the figures, then to the sinks."""
        self._tick(tick, ph)
        self.emit("tick", t=tick.t, phase=ph.kind, step=ph.step, users=tick.users, holding=self.holding,
                  remaining_s=None if self.holding else round(max(0.0, remaining_s), 1), **_tick_figures(tick))

    def _tick(self, tick: Tick, ph: Phase) -> None:
        for st in tick.tx.values():
            self.errors.update(st.errors)
        self.interval_agg.add(tick)
        if tick.measured:
            self.step_agg.add(tick)
            self.run_agg.add(tick)
            for v in self.windowed.add(tick):
                if v.fired and self.stop_reason is None:
                    self._fire(v, ph)
        if self.interval_agg.ticks >= int(self.sc.report_every):
            self._flush_interval(ph)

    def _flush_interval(self, ph: Phase) -> None:
        agg = self.interval_agg
        if agg.ticks == 0:
            return
        row = {"type": "interval", "t": round(self.elapsed(), 3), "start_s": round(self.interval_start, 3),
               "phase": ph.kind, "step": ph.step, "measured": ph.measured, **agg.summary()}  # users: those that ran
        self.intervals.append(row)
        live = dict(row)
        if ph.measured and self.step_agg.ticks:
            # for live displays: the step so far beside this interval (percentiles are not additive)
            step = self.step_agg.summary()
            live["step_so_far"] = {k: step[k] for k in ("seconds", "users", "count", "tps", "tpm", "qps", "nopm",
                                                        "errors", "retries", "latency_ms", "cpu") if k in step} | {
                                  "transactions": {n: {k: t[k] for k in ("count", "tps", "errors", "latency_ms")}
                                                   for n, t in step["transactions"].items()}}  # type: ignore[attr-defined]
        self.emit("interval", **live)
        self.interval_agg = Aggregate(self.names)
        self.interval_start = self.elapsed()
        # a linear ramp has no steps: its thresholds are judged on every measured interval
        if isinstance(self.sc.ramp, m.LinearRamp) and ph.measured and self.stop_reason is None:
            verdicts = [judge(c, agg) for c in self.sc.stop if not c.window and c.kind == "threshold"]
            fired = next((v for v in verdicts if v.fired), None)
            if fired is not None:
                self._fire(fired, ph)
            elif agg.all.count:
                self.saturation_users = agg.users_max
                self.saturation_step = ph.step
        self._checkpoint()

    def _step_end(self, ph: Phase, server: dict[str, Any] | None) -> None:
        agg = self.step_agg
        # `for D` conditions are judged live, tick by tick; a linear ramp's thresholds at each interval
        linear = isinstance(self.sc.ramp, m.LinearRamp)
        verdicts = [] if linear else [judge(c, agg, self.prev_step) for c in self.sc.stop if not c.window]
        self._record_step(ph, complete=True, verdicts=verdicts, server=server)
        fired = next((v for v in verdicts if v.fired), None)
        if fired is not None:
            self._fire(fired, ph)
        elif not linear:
            self.saturation_users = ph.users
            self.saturation_step = ph.step
        self.prev_step = agg

    def _record_step(self, ph: Phase, complete: bool, verdicts: list[Verdict], server: dict[str, Any] | None) -> None:
        agg = self.step_agg
        if agg.ticks == 0:
            return
        summary = agg.summary()
        if server is not None and "nopm" in server and summary.get("nopm"):
            server["nopm_client_vs_server_pct"] = round(100.0 * (summary["nopm"] - server["nopm"])  # type: ignore[operator]
                                                        / server["nopm"], 2) if server["nopm"] else None
        row = {"type": "step", "step": ph.step, "users": ph.users if ph.kind == "hold" else agg.users_max,
               "complete": complete, "start_s": round(self.step_started, 3), **summary,
               "server": server, "conditions": [v.to_json() for v in verdicts], "histograms": agg.histograms()}
        self.steps.append(row)
        self.emit("step", **{k: v for k, v in row.items() if k != "histograms"})

    def _fire(self, v: Verdict, ph: Phase) -> None:
        c = v.condition
        self.stop_reason = {"reason": "stop_condition", **v.to_json(), "step": ph.step,
                            "users": self.fleet.active if self.fleet else None, "at_s": round(self.elapsed(), 3)}
        if c.kind == "threshold":
            unit = "ms" if c.metric.name == "latency" else c.unit
            detail = f"measured {show(v.value, c)}{unit} against {show_limit(c)}{unit}"
        else:  # plateau / kink: the figure of this step and of the one before
            unit = "ms" if c.metric.name == "latency" else f" {c.metric.name}"
            detail = f"this step {show(v.value, c)}{unit}, the step before {show(v.reference, c)}{unit}"
        quoted = c.text if c.resolved == c.text else f"{c.text} [{c.resolved}]"  # $refs: say what they held
        self.log(f"stop condition fired: {quoted}  ({detail})", "warning")
        self.emit("fired", **self.stop_reason)

    def _watch_target(self, ending: bool = False) -> None:
        """`ending`: the last tick of a measured phase, whose users must all have run for it to count."""
        assert self.fleet is not None
        health = self.fleet.health()
        self.error_messages.update({k: v for k, v in health.error_messages.items() if k not in self.error_messages})
        if self.stop_reason is not None:
            return
        # some users cannot connect while others run (none running: the target is lost, below)
        now = time.monotonic()
        if not (health.refused and health.connected):
            self._refused_since = None
        elif self._refused_since is None:
            self._refused_since = now
        if self.server is not None and not self.server.alive():
            self._lost("the throwaway server process exited")
        elif health.connect_failures and health.idle_s > TARGET_TIMEOUT:
            msg = next(iter(health.error_messages.values()), "no connection")
            self._lost(f"no connection to the server for {TARGET_TIMEOUT:g}s: {msg}")
        elif self._refused_since is not None and (ending or now - self._refused_since >= CONNECT_GRACE):
            self._refused(health)
        elif health.fatal is not None:
            code, msg, tx = health.fatal
            if code == -1:  # not a MySQL error: the workload's code or bench-dsl's failed
                raise WorkerFailed(f"a virtual user failed running {tx}: {msg}")
            self.stop_reason = {"reason": "scenario_error", "code": code, "message": self._scrub(msg),
                                "transaction": tx}
            self.log(f"transaction {tx} failed with error {code}: {msg}; the scenario cannot run as written", "error")

    async def _server_counters(self) -> tuple[float, dict[str, int]] | None:
        """The server's own count of what happened, read at step boundaries (None when unreadable)."""
        if self.ctl is None:
            return None
        ctl = self.ctl

        async def read() -> dict[str, int]:
            async with ctl.cursor() as cur:
                await cur.execute("SHOW GLOBAL STATUS WHERE Variable_name IN ('Com_commit', 'Com_rollback')")
                counters = {"commits_rollbacks": sum(int(v) for _, v in await cur.fetchall())}
            return counters | await self.workload.server_counters(ctl)
        try:
            # a server that stops answering (a host gone without a reset) must not hold the run
            # for the kernel's retransmission timeout: the counters are given up instead
            counters = await asyncio.wait_for(read(), TARGET_TIMEOUT)
        except Exception as exc:
            why = f"no answer in {TARGET_TIMEOUT:g}s" if isinstance(exc, TimeoutError) else self._scrub(str(exc))
            self.log(f"could not read the server's counters: {why}", "warning")
            self.ctl.close()
            self.ctl = None
            return None
        return time.monotonic(), counters

    async def _server_figures(self, after: tuple[float, dict[str, int]] | None) -> dict[str, Any] | None:
        """Per minute over the step, from the server's counters: TPM as HammerDB computes it
        (Com_commit + Com_rollback) and, for TPC-C, NOPM from the districts' next order ids."""
        before = self.step_counters  # read when the step's first measured phase began
        after = after or await self._server_counters()  # a run that ends early reads them now
        if before is None or after is None or after[0] <= before[0]:
            return None
        minutes = (after[0] - before[0]) / 60
        out: dict[str, Any] = {"seconds": round(after[0] - before[0], 3)}
        for key, name in (("commits_rollbacks", "tpm"), ("new_orders", "nopm")):
            if key in after[1] and key in before[1]:
                out[name] = round((after[1][key] - before[1][key]) / minutes, 1)
        return out

    def _salvage(self) -> None:
        """The run ends by an error inside a phase: keep its last interval and its step so far."""
        ph = self._phase_now
        if ph is None:
            return
        with contextlib.suppress(Exception):
            self._flush_interval(ph)
            if ph.measured:
                self._record_step(ph, complete=False, verdicts=[], server=None)
        self._phase_now = None

    def _refused(self, health: Health) -> None:
        """The server would not take all the users planned (max_connections, max_user_connections,
        a full accept queue): the step at hand is not the one asked for, so the run ends there,
        and the last complete step is the saturation point, as when a stop condition fires."""
        code, message = health.connect_error or (0, "unknown error")
        asked = self.fleet.active if self.fleet else 0
        ph = self._phase_now
        self.stop_reason = {"reason": "connections_refused", "condition": "connections refused",
                            "code": code, "message": self._scrub(f"({code}) {message}"), "users": asked,
                            "connected": health.connected, "step": ph.step if ph else None,
                            "at_s": round(self.elapsed(), 3)}
        self.log(f"the server refused connections: {asked - health.connected} of {asked} users could not connect: "
                 f"({code}) {message}", "warning")
        self.emit("fired", **self.stop_reason)

    def _lost(self, why: str) -> None:
        self.stop_reason = {"reason": "target_failed", "message": self._scrub(why)}
        self.log(f"target lost: {why}", "error")

    # results -----------------------------------------------------------------------------------
    def _document(self, started: str) -> dict[str, Any]:
        return results.new_document(self.sc, self.workload.description(), self.names, self.plan, self.opt.time_scale,
                                    self.opt.max_steps, started, self._scrub)

    def _fill_document(self) -> None:
        if self.fleet is not None:
            self.executors.update(self.fleet.health().executors)
        results.fill(self.doc, status=self.status, elapsed_s=self.elapsed(), steps=self.steps,
                     intervals=self.intervals, stop_reason=self.stop_reason, errors=self.errors,
                     error_messages=self.error_messages, warnings=self.warnings, run_agg=self.run_agg,
                     saturation_users=self.saturation_users, saturation_step=self.saturation_step,
                     executor="+".join(sorted(self.executors)) or None)

    def _log_report(self, report: dict[str, Any]) -> None:
        if "mix" in report:
            self.log("mix run: " + ", ".join(f"{n} {_fmt_pct(m['run_pct'])} (asked {_fmt_pct(m['asked_pct'])})"
                                              for n, m in report["mix"].items()))
        if "p90_limits" in report:
            self.log("p90 against the specification: " + ", ".join(
                f"{n} {p['p90_ms']} ms / {p['limit_ms']:g} ms {'ok' if p['within'] else 'OVER'}"
                for n, p in report["p90_limits"].items()))

    def _checkpoint(self) -> None:
        self._fill_document()
        self.emit("checkpoint", document=self.doc)

    def _finish(self) -> None:
        reason = (self.stop_reason or {}).get("reason")
        if self.status == "running":
            self.status = {"interrupted": "interrupted", "target_failed": "target_failed",
                           "scenario_error": "scenario_error", "stop_condition": "completed"}.get(reason, "completed")
        expect_results = results.expectations(self.sc.expect, self.saturation_users, self.run_agg)
        self.doc["expect"] = expect_results
        code = results.exit_code(self.status, self.stop_reason, expect_results)
        if code is not None:
            self.exit_code = code
        if self.exit_code == ExitCode.EXPECT_FAILED:
            for e in expect_results:
                if not e["passed"]:
                    self.log(f"expectation failed: {e['expect']} (measured {e['value']})", "error")
        self._fill_document()
        if self.doc["summary"] is not None:
            report = self.workload.report(self.doc["summary"])
            if report is not None:
                self.doc["workload_report"] = report
                self._log_report(report)
        self.doc["exit_code"] = int(self.exit_code)
        self.doc["finished_at"] = results.now()
        self.emit("checkpoint", document=self.doc)
        self.emit("finished", status=self.status, exit_code=int(self.exit_code), saturation=self.doc["saturation"],
                  stop=self.stop_reason, expect=expect_results, summary=results.light(self.doc["summary"]),
                  elapsed_s=self.doc["elapsed_s"])


def _fmt_pct(v: float) -> str:
    return f"{v:g}%"


def _tick_figures(tick: Tick) -> dict[str, Any]:
    """A tick's figures for a live display: cheap (no percentiles), computed once a second."""
    secs = tick.seconds or 1.0
    count = sum(st.count for st in tick.tx.values())
    out: dict[str, Any] = {
        "tps": round(count / secs, 1), "tpm": round(count * 60 / secs, 1),
        "qps": round(sum(st.queries for st in tick.tx.values()) / secs, 1),
        "errors_per_s": round(sum(st.error_count for st in tick.tx.values()) / secs, 2),
        "retries_per_s": round(sum(st.retries for st in tick.tx.values()) / secs, 2),
        "cpu": {k: (None if v is None else round(v, 1)) for k, v in tick.cpu.items()},
        "transactions": {n: {"count": st.count, "tps": round(st.count / secs, 1), "errors": st.error_count}
                         for n, st in tick.tx.items()},
    }
    no = tick.tx.get("new_order")
    if no is not None:
        out["nopm"] = round((no.count - no.rollbacks) * 60 / secs, 1)
    return out
