"""The open-loop profiles: transactions due at a rate whatever the replies, served by a pool of
users (`rate N tps`, `rate step { }`, `rate linear from A to B`), and their scheduler. A phase's
`rate` (and `rate_end`) says the arrivals per second; its `users` the pool."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bench_dsl.core.axis import LiveCell, LoadAxis
from bench_dsl.core.live_figures import TickFigures
from bench_dsl.core.numbers import fmt_num
from bench_dsl.engine.phases import Phase, Plan, whole
from bench_dsl.engine.profiles.base import LoadProfile
from bench_dsl.engine.scheduler import Scheduler
from bench_dsl.fleet.base import Fleet
from bench_dsl.language import model as m
from bench_dsl.language.values import num
from bench_dsl.measure import arrivals
from bench_dsl.measure.metrics import Aggregate

# the longest the warmup's backlog is waited for (a server that stalls the warmup's transactions
# for longer is a finding of the first step's)
DRAIN_S = 10.0


class RateScheduler(Scheduler):
    """Each phase at its rate (a linear ramp's moving with its clock, set after each tick), on a
    pool of the phase's users; the fleet splits the rate over its processes."""

    warmed = False  # the warmup ran: its backlog is drained before the first measured phase
    paced = False
    rate = 0.0  # the arrivals per second asked of the fleet last

    async def _pace(self, fleet: Fleet, rate: float) -> None:
        """The fleet's arrivals at `rate`, as the load spaces and queues them."""
        assert isinstance(self.load, m.RateLoad)
        await fleet.pace(rate, self.load.poisson, self.load.pool.queue)
        self.rate = rate

    async def regroup(self, fleet: Fleet) -> None:
        """The rate stays the step's: the workers left share all of it. Their pool is smaller, so
        more arrivals may find no free user: a finding of the step's, not a lower rate offered."""
        await self._pace(fleet, self.rate)

    async def enter(self, fleet: Fleet, ph: Phase) -> None:
        assert ph.rate is not None
        if not self.paced:  # no arrivals until the pool is connected: its users wait for them, never run free
            await self._pace(fleet, 0.0)
            self.paced = True
        await fleet.resize(ph.users)
        if ph.measured and self.warmed:
            await self._drain(fleet)
        self.warmed = ph.kind == "warmup"
        await self._pace(fleet, ph.rate)

    async def _drain(self, fleet: Fleet) -> None:
        """No arrivals until the users are done with the warmup's (those in flight, those queued):
        what the first step measures is its own load, not the warmup's left over. What the drain
        completes is collected here, and so never counted."""
        await self._pace(fleet, 0.0)
        deadline = self.clock.now() + DRAIN_S
        while self.clock.now() < deadline and not self.stopping():
            arrivals = (await fleet.collect()).arrivals
            # drained: nothing in flight, nothing waiting, and nothing started since the last look (an
            # arrival already due when the rate went to 0 is started by an idle user, never queued)
            if arrivals is None or (arrivals.busy == 0 and arrivals.queued_max == 0 and arrivals.started == 0):
                return
            await self.clock.sleep_until(self.clock.now() + 0.02)

    async def steer(self, fleet: Fleet, ph: Phase, done: float) -> None:
        if ph.rate is not None and ph.rate_end is not None and ph.rate_end != ph.rate:
            await self._pace(fleet, ph.rate + (ph.rate_end - ph.rate) * done)


def _row_words(d: Mapping[str, Any]) -> str:
    """An interval's open-loop figures in a console line: asked, dropped, the pool's busy users, the
    service time (the response time, from the due moment, is the line's latency)."""
    if d.get("offered_tps") is None:
        return ""
    serv = (d.get("service_ms") or {}).get("p99")
    return (f" offered {d['offered_tps']:.1f}/s dropped {d.get('dropped_per_s') or 0:.1f}/s"
            f" busy {d.get('busy') or 0:.0f} service p99 {'-' if serv is None else f'{serv:.2f}'}")


def _live_cells(t: TickFigures, users: int, iv: Mapping[str, Any]) -> tuple[LiveCell, ...]:
    """The headline's cells of a rate: what it offered against what ran (short of 95% of it: a
    warning), what was dropped, the pool's busy users of its size, and the last interval's p99 of the
    response time (from the due moment: a warning past twice the service time) and of the service."""
    offered, achieved = t.declared.get("offered_tps"), t.declared.get("achieved_tps")
    dropped = t.declared.get("dropped_per_s") or 0.0
    short = bool(offered and achieved is not None and achieved < 0.95 * offered)
    cells = [LiveCell("offered", offered),
             LiveCell("achieved", achieved, tone="warn" if short else "good"),
             LiveCell("dropped/s", dropped, form="decimal", tone="bad" if dropped else ""),
             LiveCell("busy", None, form="text", text=f"{t.declared.get('busy') or 0:.0f}/{users}", narrow="early")]
    resp, serv = (iv.get("latency_ms") or {}).get("p99"), (iv.get("service_ms") or {}).get("p99")
    if resp is not None:
        cells += [LiveCell("p99 resp", resp, form="ms", tone="warn" if serv and resp > 2 * serv else "", narrow="late"),
                  LiveCell("p99 serv", serv, form="ms", narrow="early")]
    return tuple(cells)


def _point_words(sat: Mapping[str, Any]) -> str:
    """What a rate no condition judged achieved: " offered, 4980 tps achieved (0.2% dropped)"."""
    achieved, dropped = sat.get("achieved_tps"), sat.get("dropped_pct")
    got = f", {fmt_num(float(achieved))} tps achieved" if isinstance(achieved, (int, float)) else ""
    lost = f" ({fmt_num(float(dropped))}% dropped)" if isinstance(dropped, (int, float)) and dropped else ""
    return f" offered{got}{lost}"


# the offered rate: a step's asked (rate_tps), an interval's or a summary's what was offered
RATE = LoadAxis("rate", "rate_tps", "tps", "offered rate (transactions/s)", "offered rate",
                "open-loop (a rate: what rate of transactions the server holds)", "rates", offered="offered_tps",
                unjudged="no stop condition judged the rate: its steps met them all whatever they achieved",
                point_figures=("achieved_tps", "dropped_pct"), row_words=_row_words, asked="offered_tps",
                point_meaning="the highest offered rate whose step met every stop condition",
                latency_from=", from the moment each was due", log_if_multiplying=True, point_words=_point_words,
                whole_run_point=("rate", "scheduled_tps", "end"), live_cells=_live_cells)


class RateProfile(LoadProfile):
    scheduler = RateScheduler
    axis = RATE
    figures = arrivals.FIGURES  # the schedule's: offered, dropped, the pool's busy users, ...

    def point(self, ph: Phase, interval: Aggregate | None = None) -> float | None:
        if interval is None or ph.rate is None:
            return ph.rate
        offered = interval.open_loop_figures().get("offered_tps")  # a moving rate: what the interval offered
        return float(offered) if isinstance(offered, (int, float)) else None

    def asked(self, ramp: m.RateLoad) -> dict[str, Any]:
        # as asked (its unit: tps, or a throughput the workload declares) and as scheduled (tps)
        return {"rate": ramp.to_json()}

    def plan(self, ramp: m.RateLoad, warmup: float, time_scale: float, max_steps: int | None) -> Plan:
        pool = ramp.pool.users
        phases: list[Phase] = []
        first = ramp.start
        if warmup > 0:
            a = ramp.warmup_from if ramp.warmup_from is not None else first
            b = ramp.warmup_to if ramp.warmup_to is not None else a
            phases.append(Phase("warmup", None, pool, pool, whole(warmup, time_scale), None, a, b))
        if ramp.shape == "fixed":
            hold = whole(ramp.duration, time_scale)
            phases.append(Phase("hold", 1, pool, pool, hold, "step", ramp.start, ramp.start))
            return Plan(tuple(phases), 1)
        if ramp.shape == "linear":
            over = whole(ramp.over, time_scale)
            phases.append(Phase("ramp", 1, pool, pool, over, "interval", ramp.start, ramp.end))
            if (rest := whole(ramp.duration, time_scale) - over) > 0:
                phases.append(Phase("hold", 1, pool, pool, rest, "interval", ramp.end, ramp.end))
            return Plan(tuple(phases), 1)
        rates = ramp.rates()[:max_steps] if max_steps is not None else ramp.rates()
        settle, hold = whole(ramp.settle, time_scale), whole(ramp.hold, time_scale)
        for i, rate in enumerate(rates, start=1):
            if i > 1 and ramp.settle > 0:
                phases.append(Phase("settle", i, pool, pool, settle, None, rate, rate))
            phases.append(Phase("hold", i, pool, pool, hold, "step", rate, rate))
        return Plan(tuple(phases), len(rates))

    def seconds(self, ramp: m.RateLoad, warmup: float, time_scale: float, max_steps: int | None) -> float:
        if ramp.shape != "step":
            return self.plan(ramp, warmup, time_scale, max_steps).seconds
        n = ramp.step_count() if max_steps is None else min(ramp.step_count(), max_steps)
        settles = (n - 1) * whole(ramp.settle, time_scale) if ramp.settle > 0 else 0.0
        return (whole(warmup, time_scale) if warmup > 0 else 0.0) + settles + n * whole(ramp.hold, time_scale)

    # the load this profile's words are of (bound): a rate asked in a throughput of the workload's
    # own (TPC-C's new orders a minute) is said in it beside the tps scheduled
    ramp: m.RateLoad | None = None

    def bound(self, ramp: m.RateLoad) -> LoadProfile:
        if ramp.unit == "tps":
            return self
        out = type(self)()
        out.ramp = ramp
        return out

    def describe(self, ramp: m.RateLoad) -> str:
        arrivals = "Poisson arrivals" if ramp.poisson else "evenly spaced arrivals"
        served = (f"served by up to {ramp.pool.users} users; "
                  + (f"up to {ramp.pool.queue} wait for a free user, more are dropped"
                     if ramp.pool.queue else "an arrival that finds none free is dropped"))
        if ramp.shape == "fixed":
            what = f"{_rate(ramp, ramp.start)} for {num(ramp.duration)}s"
        elif ramp.shape == "linear":
            what = f"{_rate(ramp, ramp.start, ramp.end)} over {num(ramp.over)}s, {num(ramp.duration)}s in all"
        else:
            what = (f"{_rate(ramp, ramp.start)}, then {_more(ramp)} a step up to {_rate(ramp, ramp.end)} "
                    f"({ramp.step_count()} steps)")
        if ramp.unit != "tps":
            what += f"; {ramp.unit} counts {100 * ramp.counted:.4g}% of the transactions the mix runs"
        return f"{what} (open loop: {arrivals}, due whatever the replies, {served})"

    def load(self, ph: Phase) -> str:
        if ph.rate is None:
            return super().load(ph)
        end = ph.rate_end if ph.rate_end not in (None, ph.rate) else None
        if self.ramp is not None:
            return f"{_rate(self.ramp, ph.rate, end)}, {ph.users} users at most"
        rate = f"{num(ph.rate)} tps" if end is None else f"{num(ph.rate)} -> {num(end)} tps"
        return f"{rate}, {ph.users} users at most"

    def step_words(self, ramp: m.RateLoad, plan: Plan, step: int) -> str:
        return f"{_more(ramp)}, {super().step_words(ramp, plan, step)}"

    def judged(self, ramp: Any, plan: Plan) -> str:
        return "at each step's end" if ramp.shape == "step" else super().judged(ramp, plan)


class FixedRate(RateProfile):
    kind = "rate_fixed"


class StepRate(RateProfile):
    kind = "rate_step"


class LinearRate(RateProfile):
    kind = "rate_linear"


def _more(ramp: m.RateLoad) -> str:
    if ramp.add is None:
        return f"x{num(ramp.mul or 1)}"
    return f"+{num(ramp.add)} tps" if ramp.unit == "tps" else f"+{_asked(ramp, ramp.add)} {ramp.unit}"


def _tps(rate: float) -> str:
    """A rate scheduled, to a tenth of a transaction a second (a rate converted from a workload's own unit has more)."""
    return num(round(rate, 1 if rate >= 10 else 3))


def _asked(ramp: m.RateLoad, tps: float) -> str:
    return num(round(ramp.asked(tps), 6))


def _rate(ramp: m.RateLoad, tps: float, end: float | None = None) -> str:
    """A rate (from tps to end) in the unit asked and, when that is not tps, in the tps scheduled:
    "20000 <the workload's unit> (748.2 tps)"."""
    if ramp.unit == "tps":
        return f"{num(tps)} tps" if end is None else f"{num(tps)} -> {num(end)} tps"
    if end is None:
        return f"{_asked(ramp, tps)} {ramp.unit} ({_tps(tps)} tps)"
    return f"{_asked(ramp, tps)} -> {_asked(ramp, end)} {ramp.unit} ({_tps(tps)} -> {_tps(end)} tps)"


RATE_PROFILES: tuple[LoadProfile, ...] = (FixedRate(), StepRate(), LinearRate())
