"""The run's figures, as its scheduler's moments come (bench_dsl.engine.scheduler): each tick folded
into the interval, the step and the run, with the server's side and the client's CPU and lag; the
judge asked about each; the target watched; all of it said in events. The tally owns the
aggregates and the steps recorded; it asks the judge, the server side and the watch, each through
its own interface, and is asked nothing back but its figures at the run's end."""

from __future__ import annotations

import contextlib
import dataclasses
from typing import Any

from bench_dsl.core.live_figures import ClientLag
from bench_dsl.engine import events as ev
from bench_dsl.engine.bottleneck import Bottleneck
from bench_dsl.engine.client_limit import CLIENT_LAG_MS
from bench_dsl.engine.judge import (
    CUT_SHORT,
    Judge,
    Verdict,
    step_warnings,
)
from bench_dsl.engine.phases import Phase, Plan
from bench_dsl.engine.profiles.base import LoadProfile
from bench_dsl.engine.rows import IntervalRow, StepRow
from bench_dsl.engine.saturation import SaturationPoint
from bench_dsl.engine.scheduler import (
    LastTick,
    Moment,
    PhaseBegins,
    PhaseEnds,
    Ticked,
    TickLost,
    WorkersLost,
)
from bench_dsl.engine.stopping import Stop, StopReason
from bench_dsl.engine.voice import Voice
from bench_dsl.engine.watch import TargetWatch
from bench_dsl.fleet.base import Fleet, WorkerReport
from bench_dsl.measure.cpu import CpuSampler
from bench_dsl.measure.metrics import Aggregate, TickStats
from bench_dsl.measure.schedlag import LagWindow
from bench_dsl.server.side import ServerSide
from bench_dsl.workloads.base import Workload
from bench_dsl.workloads.registry import METRICS


class Tally:
    def __init__(self, plan: Plan, report_every: float, workload: Workload, profile: LoadProfile, judge: Judge,
                 voice: Voice, server_side: ServerSide, watch: TargetWatch, stop: Stop) -> None:
        self.plan = plan
        self.report_every = report_every
        self.workload = workload
        self.names = workload.names
        self.profile = profile
        self.judge = judge
        self.voice = voice
        self.server_side = server_side
        self.watch = watch
        self.stop = stop
        self.run_agg = Aggregate(self.names, METRICS)
        self.step_agg = Aggregate(self.names, METRICS)
        self.interval_agg = Aggregate(self.names, METRICS)
        # the client's scheduling lag beside them (from the fleet's reports): the judge reads the step's
        self.lag_run, self.lag_step, self.lag_interval = LagWindow(), LagWindow(), LagWindow()
        self.interval_start = 0.0
        self.tick_t = 0.0  # the last tick's end: where an interval's counts end (a loss's tick ends before its collect)
        self.step_started = 0.0
        self.steps: list[StepRow] = []  # what the judge's saturation point counts
        self.executors: set[str] = set()  # how the users sent statements, over the whole run
        self.error_messages: dict[int, str] = {}
        self.fleet: Fleet | None = None
        self.cpu: CpuSampler | None = None
        self._phase_now: Phase | None = None
        self.bottleneck = Bottleneck()  # what ran out at each step (the runner tells it the machines)

    def begin(self, fleet: Fleet, cpu: CpuSampler) -> None:
        self.fleet, self.cpu = fleet, cpu

    async def take(self, moment: Moment) -> None:
        match moment:
            case PhaseBegins(ph, new_step):
                await self._phase_begins(ph, new_step)
            case LastTick():
                await self.server_side.step_last_tick()
            case Ticked(tick, ph, report, remaining_s, final, holding):
                self._tick(tick, ph, report, remaining_s, final, holding)
            case TickLost(tick, ph, report, holding):
                self._tick(tick, ph, report, None, False, holding, watch=False)
            case WorkersLost(reasons, workers, users):
                for why in reasons:
                    self.voice.log(f"{why}: the run goes on without it (on worker loss continue)", "warning")
                self.voice.publish(ev.WorkerLostEvent(round(self.voice.elapsed(), 3), reasons, workers, users))
            case PhaseEnds(ph):
                await self._phase_ends(ph)

    # the moments -------------------------------------------------------------------------------
    async def _phase_begins(self, ph: Phase, new_step: bool) -> None:
        label = ev.phase_label(ph.kind, ph.step, self.plan.steps)
        self.voice.log(f"{label}: {self.profile.load(ph)} for {ph.seconds:g}s")
        if new_step:
            self.judge.new_step()
            self.step_agg = Aggregate(self.names, METRICS)
            self.lag_step = LagWindow()
        self.voice.publish(ev.PhaseBegan(ph.kind, ph.step, self.plan.steps, ph.users, ph.seconds, ph.users_end,
                                    round(self.voice.elapsed(), 3)))
        self.interval_agg = Aggregate(self.names, METRICS)
        self.lag_interval = LagWindow()
        self._phase_now = ph  # from here on, an error inside the phase keeps what it measured (salvage)
        await self.server_side.phase_begins(new_step, ph.measured)
        self.interval_start = self.voice.elapsed()
        if new_step:
            self.step_started = self.interval_start

    def _tick(self, tick: TickStats, ph: Phase, report: WorkerReport, remaining_s: float | None, final: bool,
              holding: bool, watch: bool = True) -> None:
        """A tick into the figures, then to the sinks."""
        assert self.cpu is not None
        tick.cpu = self.cpu.sample() | report.cpu()  # the server's and the host's, then the client's own
        self.server_side.fill(tick)
        self.interval_agg.add(tick)
        self.tick_t = tick.t
        lag, waits = report.lag(), report.waits()
        self.lag_interval.add(lag)
        self.lag_interval.add_waits(waits)
        if tick.measured:
            self.step_agg.add(tick)
            self.run_agg.add(tick)
            for window in (self.lag_step, self.lag_run):
                window.add(lag)
                window.add_waits(waits)
            fired = self.judge.tick(tick, judging=not self.stop.stopping())
            if fired is not None:
                self._fire(fired, ph)
        # the worst process's scheduling lag over the step so far (the interval's outside the steps),
        # with the bound the judge holds it to: the live screen shows it while the run goes on
        worst = (self.lag_step if tick.measured else self.lag_interval).worst_p90()
        if self.interval_agg.ticks >= int(self.report_every):
            self._flush_interval(ph)
        stalls = self.step_agg.stalls() if tick.measured else None
        # with the step's longest stall so far, once there is one
        figures = dataclasses.replace(
            tick.figures(METRICS), stall_s=round(stalls.longest_s, 1) if stalls is not None and stalls.stalls else None,
            client_lag=ClientLag(worst, CLIENT_LAG_MS) if worst is not None else None)
        self.voice.publish(ev.LiveTick(tick.t, ph.kind, ph.step, tick.users, holding, remaining_s, figures))
        if self.judge.changed:
            self.voice.publish(ev.Conditions(tick.t, self.judge.states()))
        if watch:
            self._watch_target(ending=ph.measured and final, hold_end=ph.kind == "hold" and final)

    async def _phase_ends(self, ph: Phase) -> None:
        server = await self.server_side.step_figures() if ph.measured else None
        self._phase_now = None
        self._flush_interval(ph)
        if ph.kind == "hold" and not self.stop.stopping():
            verdicts, fired, stalled = self.judge.step_end(ph, self.step_agg)
            for said in step_warnings(verdicts, stalled):
                self.voice.log(f"s{ph.step}: {said}", "warning")
            self._record_step(ph, verdicts, server, stalled)
            if fired is not None:
                self._fire(fired, ph)
        elif ph.measured and self.stop.stopping():
            self._record_step(ph, self.judge.conditions(self.step_agg), server, CUT_SHORT)
        if self.judge.changed:
            self.voice.publish(ev.Conditions(round(self.voice.elapsed(), 3), self.judge.states()))
        if ph.measured:
            self.totals()  # the step and its verdict written now, not after the fleet and server stop

    # figures -----------------------------------------------------------------------------------
    def _figures(self, agg: Aggregate, lag: LagWindow, consistent: bool = False) -> dict[str, Any]:
        """An aggregate's figures, with the client's scheduling lag and the statements per second by
        kind the workload knows (`consistent`: a step's, with its consistency)."""
        out = agg.summary(consistent) | lag.to_json()
        rates = self.workload.rates(float(out["tps"]))  # type: ignore[arg-type]
        return out | {"statements": rates} if rates is not None else out

    def _flush_interval(self, ph: Phase) -> None:
        agg = self.interval_agg
        if agg.ticks == 0:
            return
        # timed by its ticks, whose counts end before the collect that took them: rows follow each other
        end = self.tick_t
        row = IntervalRow(round(end, 3), round(min(self.interval_start, end), 3), ph.kind, ph.step, ph.measured,
                          self._figures(agg, self.lag_interval))
        # for live displays: the step so far beside this interval (percentiles are not additive)
        so_far = self.step_agg.so_far() if ph.measured and self.step_agg.ticks else None
        self.voice.publish(ev.Interval(row, so_far))
        self.interval_agg = Aggregate(self.names, METRICS)
        self.lag_interval = LagWindow()
        self.interval_start = end
        fired = self.judge.interval(ph, agg, self.step_agg, judging=not self.stop.stopping())
        if fired is not None:
            self._fire(fired, ph)
        self.totals()

    def _record_step(self, ph: Phase, verdicts: list[Verdict], server: dict[str, Any] | None, why: str | None) -> None:
        agg = self.step_agg
        if agg.ticks == 0:
            return
        figures = self._figures(agg, self.lag_step, consistent=True)
        if server is not None:
            server = self.server_side.counters.compared(server, figures)
        row = StepRow(ph.step or 0, ph.users if ph.kind == "hold" else agg.users_max or 0, why is None, why,
                      round(self.step_started, 3), figures, server, [v.to_json() for v in verdicts], agg.histograms(),
                      self.profile.row_point(ph))
        refused = self.fleet.health().refused if self.fleet is not None else 0
        row = dataclasses.replace(row, bottleneck=self.bottleneck.of(row, self.steps, refused))
        self.steps.append(row)
        self.voice.publish(ev.StepEnded(row))

    def _fire(self, v: Verdict, ph: Phase) -> None:
        said = f"stop condition fired: {v.describe()}"
        reason = StopReason.condition_fired(v.to_json(), ph.step, self.fleet.active if self.fleet else None,
                                            self.voice.elapsed(), self.voice.scrub(said))
        self.stop.reason = reason
        self.voice.log(said, reason.level)
        self.voice.publish(ev.Fired(reason))

    def summary(self, final: bool = False) -> dict[str, Any] | None:
        """The measured run so far (None: nothing measured); `final`, at its end, with its consistency."""
        return self.run_agg.summary(final) | self.lag_run.to_json() if self.run_agg.ticks else None

    def totals(self, saturation: SaturationPoint | None = None, summary: dict[str, Any] | None = None) -> None:
        """The run so far, for a result that must stand whenever the run is cut off. At the run's
        end, the saturation point and the summary are given: judged once, for the end too."""
        if self.fleet is not None:
            self.executors.update(self.fleet.health().executors)
        if saturation is None:
            saturation = self.judge.saturation(self.stop.reason, self.steps)
        if summary is None:
            summary = self.summary()
        self.voice.publish(ev.Saturation(saturation))
        totals = summary | {"histograms": self.run_agg.histograms()} if summary is not None else None
        self.voice.publish(ev.Totals(totals, self.executor(), self.stop.reason, self.voice.elapsed()))

    def executor(self) -> str | None:
        return "+".join(sorted(self.executors)) or None

    def _watch_target(self, ending: bool = False, hold_end: bool = False) -> None:
        """`ending`: the last tick of a measured phase, whose users must all have run for it to count."""
        assert self.fleet is not None
        health = self.fleet.health()
        new = {k: v for k, v in health.error_messages.items() if k not in self.error_messages}
        if new:
            self.error_messages.update(new)
            self.voice.publish(ev.ErrorMessages(new))
        if self.stop.stopping():
            return
        self.server_side.poke()
        ph = self._phase_now
        reason = self.watch.check(health, self.fleet.active, ph.step if ph else None, self.voice.elapsed(), ending,
                                  hold_end)
        if reason is not None:
            self.stop.reason = reason
            self.voice.log(reason.said or reason.kind, reason.level)
            if reason.ends_climb:
                self.voice.publish(ev.Fired(reason))

    def salvage(self) -> None:
        """The run ends by an error inside a phase: keep its last interval and its step so far."""
        ph = self._phase_now
        if ph is None:
            return
        with contextlib.suppress(Exception):
            self._flush_interval(ph)
            if ph.measured:
                self._record_step(ph, self.judge.conditions(self.step_agg), None, CUT_SHORT)
        self._phase_now = None
