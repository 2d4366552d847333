"""An open-loop rate's figures at its edges, from synthetic rows and reports: what the verdict says
of a rate no condition judged, the saturation reason when no step was clean, the console's line of a
rate below 1 tps, a lost worker's share of the rate (the coordinator's arithmetic, on a clock the
test moves), the ticks around a slow loss, and what `bench replay` shows of a rate."""

from __future__ import annotations

import asyncio
import io
import itertools
from typing import Any

import pytest
from rich.console import Console

from bench_dsl.engine import events as ev
from bench_dsl.engine.phases import Phase, Plan
from bench_dsl.engine.rows import IntervalRow, StepRow
from bench_dsl.engine.scheduler import Scheduler, Ticked, TickLost
from bench_dsl.fleet import coordinator
from bench_dsl.fleet.base import Health, WorkerFailed, WorkerLostError, WorkerReport
from bench_dsl.fleet.coordinator import WorkerFleet, WorkerHandle, due_between
from bench_dsl.measure.arrivals import ArrivalStats
from bench_dsl.measure.metrics import Aggregate
from bench_dsl.measure.stalls import Quiet
from bench_dsl.results import verdict
from bench_dsl.results.sinks import ConsoleSink
from tests.fakes import judge_of

from ..fakes import VirtualClock


def _rate_step(figures: dict[str, object], why: str | None = None) -> StepRow:
    return StepRow(1, 4, why is None, why, 1.0, figures, None, [], {}, {"rate_tps": 1e7})


def test_a_rate_no_condition_judged_says_what_it_achieved_not_that_it_met_every_condition() -> None:
    """`rate 10000000 tps`, users max 4, no stop condition: 98.5% dropped is the finding."""
    judge = judge_of((), ("point",), "rate_step")
    judge.step_end(Phase("hold", 1, 4, 4, 5.0, "step", 1e7, 1e7), Aggregate(("point",)))
    sat = judge.saturation(None, [_rate_step({"achieved_tps": 150000.0, "dropped_pct": 98.5})]).to_json()
    assert (sat["rate_tps"], sat["stop_condition_count"], sat["achieved_tps"]) == (1e7, 0, 150000.0)
    assert sat["reason"].startswith("no stop condition judged the rate")
    said = verdict.text(verdict.verdict_lines(sat, None)[0])
    assert "met every condition" not in said
    assert said == ("no stop condition judged the rate: 10,000,000 tps offered, 150,000 tps achieved "
                    "(98.5% dropped) (step 1)")


def test_when_the_only_step_stalled_the_reason_says_so_not_that_no_condition_fired() -> None:
    judge = judge_of((), ("point",), "rate_step")
    stalled = "the server answered nothing for 11.0 s in 6 stalls"
    sat = judge.saturation(None, [_rate_step({}, stalled)]).to_json()
    assert "no stop condition fired" not in sat["reason"]
    assert sat["reason"] == f"no step was a clean measurement: step 1: {stalled}"


def test_the_console_says_a_rate_below_one_a_second() -> None:
    figures = {"seconds": 2.0, "users": 2, "tps": 0.5, "qps": 0.5, "errors": 0, "retries": 0, "cpu": {},
               "latency_ms": {"p50": 0.3, "p95": 0.3, "p99": 0.3}, "offered_tps": 0.5, "dropped_per_s": 0.0,
               "busy": 0.0, "service_ms": {"p99": 0.2}}
    out = io.StringIO()
    sink = ConsoleSink(Console(file=out, width=400, color_system=None))
    sink.emit(ev.Begin("test", "now", ev.ScenarioInfo("rate", load_axis="rate"), ev.Machine.from_json({})))
    sink.emit(ev.Interval(IntervalRow(2.0, 0.0, "hold", 1, True, figures), None))
    assert " offered 0.5/s " in out.getvalue(), out.getvalue()


# a lost worker's share of the rate --------------------------------------------------------------

class _Clock:
    """The coordinator's monotonic clock, moved by the test: due arrivals are counted on it."""

    def __init__(self, now: float) -> None:
        self.now = now

    def monotonic(self) -> float:
        return self.now


class _Fleet(WorkerFleet):
    """Two workers answering from the test: each report offers, and starts, what `offered` says;
    worker 2's reports fail once `dead`."""

    def __init__(self, clock: _Clock) -> None:
        self.clock = clock
        self.offered = {0: 0, 1: 0}
        self.waiting = {0: 0, 1: 0}
        self.dead = False
        fake = type("Sc", (), {"seed": 1})()
        super().__init__(fake, None, ("point",), 2, lambda text, level: None)  # type: ignore[arg-type]
        self.procs = [WorkerHandle(0), WorkerHandle(1)]

    def _send(self, p: Any, msg: dict[str, Any]) -> asyncio.Future[dict[str, Any]]:
        fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        if msg["op"] != "report":
            fut.set_result({})
        elif p.index == 1 and self.dead:
            fut.set_exception(WorkerLostError("worker 2 lost"))
        else:
            n = self.offered[p.index]
            report = WorkerReport({}, Health(0, 0.0, None, {}, connected=4), 4, [Quiet((), None, self.clock.now)],
                                  {}, ArrivalStats(offered=n, started=n, waiting=self.waiting[p.index]))
            fut.set_result(report.to_wire())
        return fut


def test_due_arrivals_of_a_timeline_add_up_over_its_pieces() -> None:
    assert due_between(100.0, 0.5, 10.0, 11.0) == 100
    assert sum(due_between(100.0, 0.5, 10.0 + k / 7, 10.0 + (k + 1) / 7) for k in range(7)) == 100
    assert due_between(0.5, 0.0, 0.0, 2.0) == 1 and due_between(0.0, 0.0, 0.0, 2.0) == 0


async def test_a_lost_workers_share_of_the_rate_is_offered_and_dropped_until_the_rate_is_regrouped(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """200 tps on 2 workers; worker 2 lost in the second from 101 to 102; the rate regrouped 2.4 s
    later (Ray's time to call an actor dead): its 100 a second, due with no user to start them,
    are offered and dropped in the loss's second and in the one after, then no more."""
    clock = _Clock(100.0)
    monkeypatch.setattr(coordinator, "time", clock)
    fleet = _Fleet(clock)
    await fleet.pace(200.0, False, 0)
    fleet.offered = {0: 100, 1: 100}
    fleet.waiting = {0: 0, 1: 5}  # worker 2 ends its last report with 5 arrivals waiting for a user
    clock.now = 101.0
    whole = (await fleet.collect()).arrivals
    assert whole is not None and (whole.offered, whole.dropped, whole.waiting) == (200, 0, 5)
    fleet.dead, clock.now = True, 102.0
    with pytest.raises(WorkerFailed) as lost:
        await fleet.collect()
    partial = lost.value.partial
    assert partial is not None and partial.arrivals is not None
    a = partial.arrivals
    assert (a.offered, a.started, a.dropped, a.waiting_start - a.waiting) == (200, 100, 105, 5)
    assert fleet.lose() == ["worker 2 lost"]
    clock.now = 104.4
    await fleet.pace(200.0, False, 0)  # the regroup: worker 1 takes all of it from here
    fleet.offered = {0: 360}  # 100 a second for 2.4 s, 200 for 0.6 s
    clock.now = 105.0
    after = (await fleet.collect()).arrivals
    assert after is not None and (after.offered, after.dropped) == (360 + 240, 240)
    fleet.offered = {0: 200}
    clock.now = 106.0
    last = (await fleet.collect()).arrivals
    assert last is not None and (last.offered, last.dropped) == (200, 0)


class _SlowLoss:
    """A fleet of two whose third collect takes 0.5 s to find worker 2 lost (as Ray takes to call an
    actor dead) after worker 1 answered at once; the run goes on with worker 1."""

    def __init__(self, clock: VirtualClock) -> None:
        self.clock = clock
        self.collects = 0
        self.workers = 2
        self.active = 4

    def _report(self) -> WorkerReport:
        at = self.clock.now()
        return WorkerReport({}, Health(0, 0.0, None, {}, connected=self.active), self.active, [Quiet((), at, at)])

    async def collect(self) -> WorkerReport:
        self.collects += 1
        report = self._report()
        if self.collects == 3:
            await self.clock.sleep(0.5)
            raise WorkerFailed("worker 2 lost", partial=report)
        return report

    def lose(self) -> list[str]:
        self.workers, self.active = 1, 2
        return ["worker 2 lost"]


class _Steady(Scheduler):
    async def enter(self, fleet: Any, ph: Phase) -> None:
        pass


def _steady(clock: VirtualClock) -> _Steady:
    """A 12 s hold of 4 users on `clock`, a second of it lasting 0.1 s."""
    t0 = clock.now()
    return _Steady(Plan((Phase("hold", 1, 4, 4, 12.0, "step"),), 1), lambda: clock.now() - t0, lambda: False,
                   second=0.1, clock=clock)


async def test_the_ticks_around_a_slow_loss_follow_each_other() -> None:
    """Each tick covers (t - seconds, t]: the loss's ends where worker 1's counts end, not 0.5 s
    later when the collect gave up on worker 2, so that the next one does not overlap it."""
    clock = VirtualClock()
    sched = _steady(clock)
    sched.on_worker_loss = "continue"
    ticks = [m.tick for m in [m async for m in sched.run(_SlowLoss(clock))] if isinstance(m, Ticked)]  # type: ignore[arg-type]
    assert len(ticks) >= 4
    # the loss's collect took 0.5 s: a tick ending there overlapped the next by that much (t is rounded
    # to the ms)
    for before, tick in itertools.pairwise(ticks):
        assert tick.t - tick.seconds * sched.second == pytest.approx(before.t, abs=1e-3), \
            [(k.t, k.seconds * sched.second) for k in ticks]


# bench replay of a rate ---------------------------------------------------------------------------

def _rate_row(t: float, stalls: list[list[float]]) -> IntervalRow:
    figures = {"seconds": 2.0, "users": 8, "count": 380, "tps": 190.0, "qps": 190.0, "errors": 0, "retries": 0,
               "cpu": {}, "latency_ms": {"p50": 1.0, "p95": 2.0, "p99": 3.0}, "offered_tps": 200.0,
               "achieved_tps": 190.0, "dropped": 20, "dropped_per_s": 10.0, "busy": 5.0, "queued_max": 3,
               "service_ms": {"p99": 1.5}, "stalls": stalls,
               "stall_s": max((b - a for a, b in stalls), default=0.0)}
    return IntervalRow(t, t - 2.0, "hold", 1, True, figures)


def test_a_replayed_rate_shows_the_open_loop_headline_and_the_steps_stall() -> None:
    """The live ticks carried offered, achieved, dropped and busy, and the step's longest stall so
    far: the replay's ticks, made from the interval rows, carry them too."""
    from bench_dsl.results.replay import fill_in
    from bench_dsl.tui import render
    from bench_dsl.tui.state import LiveState

    evs: list[tuple[float, ev.Event]] = [
        (0.0, ev.Begin("", "", ev.ScenarioInfo(load_axis="rate"), ev.Machine.from_json({}))),
        (1.0, ev.PhaseBegan("hold", 1, 1, 8, 4.0, 8, 1.0)),
        (3.0, ev.Interval(_rate_row(3.0, [[1.5, 3.0]]), None)),
        (5.0, ev.Interval(_rate_row(5.0, [[3.0, 3.4]]), None)),
    ]
    ticks = [e for _, e in fill_in(evs) if isinstance(e, ev.LiveTick)]
    last = ticks[-1].figures
    assert {k: last.declared.get(k) for k in ("offered_tps", "achieved_tps", "dropped_per_s", "busy")} == {
        "offered_tps": 200.0, "achieved_tps": 190.0, "dropped_per_s": 10.0, "busy": 5.0}
    assert last.stall_s == 1.9  # the stall across both intervals, as the live step so far joined it
    st = LiveState()
    for _, e in fill_in(evs):
        st.apply(e)
    out = io.StringIO()
    Console(file=out, width=160, color_system=None).print(render.figures(st, 160))
    headline = out.getvalue()
    assert "offered" in headline and "dropped/s" in headline and "stall" in headline, headline


async def test_the_tick_a_lost_worker_fails_the_run_in_keeps_its_arrivals() -> None:
    """Without `on worker loss continue`: the survivors' last second, and the lost worker's share,
    are measured with their arrival figures, or its completions stand against no offered arrival
    (achieved 116.6%)."""

    class _Lost(_SlowLoss):
        def _report(self) -> WorkerReport:
            report = super()._report()
            report.arrivals = ArrivalStats(offered=200, started=100, dropped=100)
            return report

    clock = VirtualClock()
    sched = _steady(clock)
    moments = []
    with pytest.raises(WorkerFailed):
        async for m in sched.run(_Lost(clock)):  # type: ignore[arg-type]
            moments.append(m)
    (lost,) = [m for m in moments if isinstance(m, TickLost)]
    assert lost.tick.arrivals is not None and lost.tick.arrivals.offered == 200
