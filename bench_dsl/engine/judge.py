"""The judge: the only code that says what a stop condition's value is, its limit, its state
(ok / near / over / fired), whether it fires, and where the saturation point stands; `expect` is
judged here too. Pure: no clock, no I/O. It reads aggregates the runner folds from ticks and never
decides when they are read: the phase does (`bench_dsl.engine.phases.Phase.judge`).

Units: conditions hold limits in the model's canonical units (latency in seconds); what the judge
hands to displays and documents is in the unit the file used for the limit (latency in ms).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from bench_dsl.core.axis import LoadAxis
from bench_dsl.engine import client_limit
from bench_dsl.engine.events import ConditionSpec, ConditionState
from bench_dsl.engine.expectation import Expectation
from bench_dsl.engine.phases import Phase
from bench_dsl.engine.rows import StepRow
from bench_dsl.engine.saturation import JUDGED_BY, SaturationPoint
from bench_dsl.engine.stopping import StopReason
from bench_dsl.language.comparisons import NEAR
from bench_dsl.language.model import Condition
from bench_dsl.measure.metrics import Aggregate, TickStats

# A step is no clean measurement of the server under its users when its stalls (bench_dsl.measure.stalls:
# a second or more in which some user was inside a transaction and none finished one) add up to more
# than this share of its measured time, or when one of them lasts STALL_LONGEST_S or more: its closed-loop percentiles
# hide the freeze (the users waited in a few transactions), and its throughput is half a measure.
STALL_SHARE = 0.25
STALL_LONGEST_S = 5.0

# why a step ended by a stop is not complete (its row's incomplete_reason): a step a reader may take
# the run's summary for, when it is the only one (bench_dsl.results.fold.measured_steps); a step left out
# for another reason (it stalled) is no measurement at all
CUT_SHORT = "the run stopped during the step"


@dataclass(frozen=True, slots=True)
class Verdict:
    condition: Condition
    value: float | None
    fired: bool
    reference: float | None = None  # a comparison's: the previous step's figure
    # it would have fired, on figures that are no clean measurement (`unclean`): not judged, said
    held_back: bool = False

    def to_json(self) -> dict[str, object]:
        c = self.condition
        return {
            "condition": c.text, "resolved": c.resolved, "kind": c.kind, "metric": c.metric.label(),
            "fired": self.fired,
            "value": show(self.value, c), "limit": show_limit(c), "unit": c.unit,
            "previous": show(self.reference, c) if self.reference is not None else None,
            "window_s": c.window,
            # a comparison's figure, by name, and the side of the limit that fires: a reader without
            # the comparison's declaration (a plugin's) words it from these
            **({"held": {"figure": c.comparison.key, "op": c.comparison.op}} if c.comparison is not None else {}),
        }

    def describe(self) -> str:
        """The condition and what it was judged on, as the log says it."""
        c = self.condition
        if c.kind == "threshold":
            unit = "ms" if c.metric.name == "latency" else c.unit
            detail = f"measured {show(self.value, c)}{unit} against {show_limit(c)}{unit}"
        else:  # a comparison: the figure of this step and of the one before
            unit = "ms" if c.metric.name == "latency" else f" {c.metric.name}"
            detail = f"this step {show(self.value, c)}{unit}, the step before {show(self.reference, c)}{unit}"
        quoted = c.text if c.resolved == c.text else f"{c.text} [{c.resolved}]"  # $refs: say what they held
        return f"{quoted}  ({detail})"


def show(value: float | None, c: Condition) -> float | None:
    """A value in the unit the file used for its limit (latency in ms)."""
    if value is None:
        return None
    if c.metric.name == "latency":  # a comparison's limit is a % or a factor: its values alone are in ms
        return round(value * 1000, 3)
    return round(value, 3)


def show_limit(c: Condition) -> float:
    return round(c.limit * 1000, 3) if c.comparison is None and c.metric.name == "latency" else c.limit


def spec(c: Condition) -> ConditionSpec:
    cmp = c.comparison
    return ConditionSpec(c.text, c.resolved, c.kind, c.metric.label(), c.op, show_limit(c), c.unit, c.window,
                         c.metric.name == "latency", (cmp.key, cmp.op) if cmp is not None else None)


def judge(c: Condition, agg: Aggregate, previous: Aggregate | None = None) -> Verdict:
    """Does `c` fire over `agg`? A comparison (plateau, kink) holds it against the step before."""
    value = agg.value(c.metric)
    if (cmp := c.comparison) is None:
        return Verdict(c, value, value is not None and c.holds(value))
    if previous is None or value is None:
        return Verdict(c, value, False)
    before = previous.value(c.metric)
    if before is None or before <= 0:
        return Verdict(c, value, False, before)
    return Verdict(c, value, cmp.fires(cmp.figure(value, before), c.limit), before)


def state_of(c: Condition, value: float | None, before: float | None = None) -> str:
    """ok / near / over for a value in canonical units that has not fired (over: past its limit,
    not judged yet: a step is judged at its end)."""
    if value is None:
        return "-"
    if (cmp := c.comparison) is not None:
        figure = cmp.figure(value, before)
        if figure is None:
            return "-"
        return "over" if cmp.fires(figure, c.limit) else "near" if cmp.near(figure, c.limit) else "ok"
    if c.holds(value):
        return "over"
    op, limit = c.op or ">", c.limit
    if op in (">", ">=") and limit > 0 and value >= NEAR * limit:
        return "near"
    if op in ("<", "<=") and limit > 0 and value <= limit / NEAR:
        return "near"
    return "ok"


def unclean(v: Verdict, why: str | None) -> Verdict:
    """`v` on an aggregate that `stalled` says is no clean measurement (`why`): only a condition on
    the stalls themselves is judged there. Any other figure of a frozen server (its throughput, a
    plateau against the step before, its latency) would blame the load for the freeze: it is kept
    as a value, and never fires."""
    if why is None or v.condition.metric.name == "stall":
        return v
    return Verdict(v.condition, v.value, False, v.reference, held_back=v.fired)


def stalled(agg: Aggregate) -> str | None:
    """Why a step (or a linear ramp's interval) is not a clean measurement, by its stalls; None
    when it is (or its stalls are not known). A stall no longer than twice the step's median
    transaction is the workload's own pace (a few users in transactions of seconds finish nothing
    for that long), not a server that answered nothing: it does not count here."""
    stalls = agg.stalls()
    if stalls is None or agg.seconds <= 0:
        return None
    usual = 2 * (agg.all.percentile_s(50) or 0.0)
    counted = [s for s in stalls.stalls if s[1] - s[0] > usual]
    if not counted:
        return None
    a, b = max(counted, key=lambda s: s[1] - s[0])
    total = sum(y - x for x, y in counted)
    if b - a >= STALL_LONGEST_S:
        return f"the server answered nothing for {b - a:.1f} s ({a:.1f}-{b:.1f} s)"
    if total > STALL_SHARE * agg.seconds:
        n = len(counted)
        return (f"the server answered nothing for {total:.1f} s in {n} stall{'s' if n > 1 else ''}, "
                f"{100 * total / agg.seconds:.0f}% of the {agg.seconds:.0f} s measured "
                f"(the longest {b - a:.1f} s, {a:.1f}-{b:.1f} s)")
    return None


def step_warnings(verdicts: list[Verdict], stalled: str | None) -> list[str]:
    """What a person must be told of a step's verdicts: that it is no clean measurement (and the
    conditions that would have fired on it, not judged), and the stops it could not judge (no
    figure in it: a monitor that failed), which could never fire."""
    blind = "; ".join(v.condition.text for v in verdicts if v.value is None)
    return ([f"{stalled}: not a clean measured step, nor the saturation point"] if stalled else []) + \
        [f"{v.describe()}: not judged, the step is not a clean measurement" for v in verdicts if v.held_back] + \
        ([f"{blind}: not judged, no figure in this step"] if blind else [])


def worse(new: Verdict, old: Verdict | None) -> bool:
    """Whether `new` came closer to firing (or further past its limit) than `old`."""
    if old is None or new.fired != old.fired:
        return old is None or new.fired
    if new.value is None or old.value is None:
        return old.value is None
    return new.value < old.value if (new.condition.op or ">") in ("<", "<=") else new.value > old.value


class WindowedConditions:
    """`for D` thresholds: judged every tick over the last D seconds of the current step."""

    def __init__(self, conditions: tuple[Condition, ...], names: tuple[str, ...]) -> None:
        self.conditions = tuple(c for c in conditions if c.window)
        self.names = names
        longest = max((c.window or 0 for c in self.conditions), default=0)
        self.ticks: deque[TickStats] = deque(maxlen=int(longest) + 2)

    def reset(self) -> None:
        self.ticks.clear()

    def windows(self, tick: TickStats) -> list[tuple[Condition, Aggregate, bool]]:
        """Each condition's last D seconds (or what the step has of them so far), and whether the
        window is full: only a full window is judged."""
        if not self.conditions:
            return []
        self.ticks.append(tick)
        out = []
        for c in self.conditions:
            agg = Aggregate(self.names)
            for t in reversed(self.ticks):
                if agg.seconds >= (c.window or 0) - 1e-6:
                    break
                agg.add(t)
            out.append((c, agg, agg.seconds >= (c.window or 0) - 1e-6))
        return out

    def add(self, tick: TickStats) -> list[Verdict]:
        return [judge(c, agg) for c, agg, full in self.windows(tick) if full]


class Judge:
    """Judges a run's stop conditions as its figures come, keeps every condition's state for
    displays, and the saturation point: the load of the last judged step that met every condition
    (a linear ramp's: of the last measured interval that did), on the load profile's axis."""

    def __init__(self, stop: tuple[Condition, ...], names: tuple[str, ...], axis: LoadAxis,
                 point: Callable[[Phase, Aggregate | None], float | None]) -> None:
        self.stop, self.names, self.windowed = stop, names, WindowedConditions(stop, names)
        self.previous: Aggregate | None = None  # the last judged step: plateau and kink compare with it
        self.previous_step: int | None = None  # its number, which displays show beside the comparison
        # the saturation point on the load profile's axis (`point`: where a phase, or an interval of
        # it, stood on it), and the users that ran there: the same on a users axis, a rate's pool
        self.axis, self.point = axis, point
        self.saturation_point: float | None = None
        self.saturation_users: int | None = None
        # % of the machine the client's processes can use (workers + the coordinator, at most every
        # core); None: not known (a fake fleet)
        self.client_capacity_pct: float | None = None
        self.saturation_step: int | None = None
        self.fired: Verdict | None = None
        self._states: dict[str, ConditionState] = {c.text: ConditionState(c.text, None, None, "-", "")
                                                   for c in stop}
        self.changed = False  # states changed since `take_states`
        # conditions judged as the step goes (`for D`, a linear ramp's per interval): the worst
        # verdict of the step so far, which its row keeps
        self._worst: dict[str, Verdict] = {}

    def specs(self) -> tuple[ConditionSpec, ...]:
        return tuple(spec(c) for c in self.stop)

    # the run's figures, as they come -----------------------------------------------------------
    def new_step(self) -> None:
        """A step's first measured phase begins: `for D` windows start again."""
        self.windowed.reset()
        self._worst = {}

    def tick(self, tick: TickStats, judging: bool = True) -> Verdict | None:
        """A measured tick: `for D` conditions over their window. Returns the one that fired;
        none fires once the run is stopping (`judging` False), their values are still shown."""
        fired = None
        for c, agg, full in self.windowed.windows(tick):
            v = unclean(judge(c, agg), stalled(agg) if full else None)
            seconds = round(agg.seconds)
            source = f"last {seconds}s" if full else f"last {seconds}s of {c.window:g}s"
            if full and v.fired and fired is None and judging:
                fired = v
            if full and worse(v, self._worst.get(c.text)):
                self._worst[c.text] = v
            self._state(c, v.value, None, source)
        if fired is not None:
            self._fire(fired)
        return fired

    def interval(self, ph: Phase, interval: Aggregate, step: Aggregate, judging: bool = True) -> Verdict | None:
        """A measured interval's end: the live values of conditions judged per step (the step so
        far), and the judging of those `ph.judge` says are judged per interval (a linear ramp)."""
        if not ph.measured or interval.ticks == 0:
            return None
        if ph.judge == "interval":
            fired = None
            why = stalled(interval)
            for c in self.stop:
                if c.window:
                    continue
                if c.comparison is not None:  # a comparison compares steps: a linear ramp has one
                    continue
                v = unclean(judge(c, interval), why)
                if v.fired and fired is None and judging:
                    fired = v
                if worse(v, self._worst.get(c.text)):
                    self._worst[c.text] = v
                self._state(c, v.value, None, "last interval")
            if fired is not None:
                self._fire(fired)
            elif interval.all.count and judging and why is None:
                self.saturation_users = interval.users_max
                self.saturation_step = ph.step
                self.saturation_point = self.point(ph, interval)
            return fired
        for c in self.stop:
            if c.window or step.ticks == 0:
                continue
            before = self.previous.value(c.metric) if self.previous is not None and c.comparison is not None else None
            self._state(c, step.value(c.metric), before, f"step {ph.step} so far")
        return None

    def step_end(self, ph: Phase, step: Aggregate) -> tuple[list[Verdict], Verdict | None, str | None]:
        """A step's hold ended whole: every condition's verdict (`conditions`), the one that fired,
        why the step is not a clean measurement (`stalled`), and the saturation point: a step that
        is not clean is none, nor what the next step's plateau or kink compares with, nor judged but
        by its stalls (`unclean`): the climb goes on past it, unless a stall condition ends it."""
        why = stalled(step)
        if ph.judge != "step":
            return self.conditions(step), None, why
        verdicts = [unclean(judge(c, step, self.previous), why) for c in self.stop if not c.window]
        fired = next((v for v in verdicts if v.fired), None)
        for v in verdicts:
            # held back: over its limit, said as such, not turned into "ok" as a judged one is
            self._state(v.condition, v.value, v.reference,
                        f"step {ph.step}" + (", not clean: not judged" if v.held_back else ""), judged=not v.held_back)
        if fired is not None:
            self._fire(fired)
        elif why is None:
            self.saturation_users = ph.users
            self.saturation_step = ph.step
            self.saturation_point = self.point(ph, None)
        if why is None:
            self.previous, self.previous_step = step, ph.step
        return self.conditions(step, verdicts), fired, why

    def conditions(self, step: Aggregate, judged: list[Verdict] | None = None) -> list[Verdict]:
        """Every stop condition of a step, for its row: those judged at its end as judged; those
        judged as it went (`for D`, a linear ramp's per interval) at the worst value they reached
        in it, fired if one fired; the others, on a step cut short, at their value over what it
        measured, not judged (fired false)."""
        done = {v.condition.text: v for v in judged or []}
        out = []
        for c in self.stop:
            if c.text in done:
                out.append(done[c.text])
            elif c.text in self._worst or c.window:
                out.append(self._worst.get(c.text) or Verdict(c, None, False))
            else:
                v = judge(c, step, self.previous)
                out.append(Verdict(c, v.value, False, v.reference))
        return out

    def _fire(self, v: Verdict) -> None:
        self.fired = v
        st = self._states[v.condition.text]
        self._states[v.condition.text] = self._said(v.condition, v.value, v.reference, "fired", st.source)
        self.changed = True

    def _state(self, c: Condition, value: float | None, before: float | None, source: str,
               judged: bool = False) -> None:
        if self.fired is not None and self.fired.condition.text == c.text:
            return  # a fired condition stays fired
        state = state_of(c, value, before)
        if judged and state == "over":  # judged and not fired: within its limit after all
            state = "ok"
        self._states[c.text] = self._said(c, value, before, state, source)
        self.changed = True

    def _said(self, c: Condition, value: float | None, before: float | None, state: str,
              source: str) -> ConditionState:
        """A state for displays, in the file's units; a comparison's figure (a plateau's gain, a kink's
        ratio) as held against the limit (over canonical figures), with the step compared with: no
        display works them out."""
        cmp = c.comparison
        held = cmp.figure(value, before) if cmp is not None else None
        return ConditionState(c.text, show(value, c), show(before, c), state, source,
                              None if held is None else round(held, 3), cmp.key if held is not None and cmp else None,
                              self.previous_step if held is not None else None)

    def states(self) -> tuple[ConditionState, ...]:
        self.changed = False
        return tuple(self._states.values())

    # the end -------------------------------------------------------------------------------------
    def verdict(self, stop_reason: StopReason | None, steps: list[StepRow], expect: Sequence[Condition],
                run: Aggregate) -> tuple[SaturationPoint, list[Expectation]]:
        """The run's end, judged once: the saturation point, and each `expect` against the run."""
        return (self.saturation(stop_reason, steps),
                expectations(expect, self.saturation_point, run, self.client_limited(steps, stop_reason)))

    def saturation(self, stop_reason: StopReason | None, steps: list[StepRow]) -> SaturationPoint:
        """The result's saturation point: who stopped the climb, and where it stood."""
        complete = [s for s in steps if s.complete]
        # the server refusing more connections ends the climb as a fired condition does
        fired = stop_reason is not None and stop_reason.ends_climb
        if stop_reason is None and not complete and steps:
            # no step is a measurement to have fired on: say why each was left out, not that nothing fired
            reason = "no step was a clean measurement: " + "; ".join(
                f"step {s.step}: {s.incomplete_reason}" for s in steps if s.incomplete_reason)
        elif stop_reason is None and self.axis.unjudged is not None and not self.stop:
            reason = self.axis.unjudged
        elif stop_reason is None:
            reason = "no stop condition fired up to the last step"
        elif fired:
            reason = f"stopped by: {stop_reason.ended_by}"
        else:
            reason = f"run ended early ({stop_reason.kind})"
        limited = self.client_limited(steps, stop_reason)
        if limited is not None:
            reason += f"; {limited}"
        # what ran out at the step that ended the climb (bench_dsl.engine.bottleneck)
        ran_out = steps[-1].bottleneck if fired and steps else None
        return SaturationPoint(self.axis.name, self.saturation_users, self.saturation_step, fired,
                               stop_reason.condition if fired and stop_reason else None, reason, len(complete),
                               "client" if limited is not None else None, ran_out,
                               {self.axis.key: self.saturation_point, **self._at_point(steps)})

    def _at_point(self, steps: list[StepRow]) -> dict[str, Any]:
        """What the axis says of its point beside it (a rate's: what it achieved), and, where a point
        that no stop condition judged says nothing (a rate's), how many judged it: the verdict then
        says so with those figures."""
        at = next((s for s in reversed(steps) if s.complete and s.step == self.saturation_step), None)
        figures = at.figures if at is not None else {}
        out: dict[str, Any] = {JUDGED_BY: len(self.stop)} if self.axis.unjudged is not None else {}
        return out | {k: figures.get(k) for k in self.axis.point_figures}

    def client_limited(self, steps: list[StepRow], stop_reason: StopReason | None = None) -> str | None:
        """Why the climb's end is bench-dsl's own limit, if it is (bench_dsl.engine.client_limit)."""
        if stop_reason is not None and stop_reason.kind == "client_limit":
            return client_limit.no_thread(stop_reason.message or "", stop_reason.connected, self.saturation_users)
        if not steps or self.saturation_users is None:
            return None
        return client_limit.why(steps[-1].figures, self.client_capacity_pct, self.saturation_users)


def expectations(expect: Sequence[Condition], saturation: float | None,
                 run: Aggregate, client_limited: str | None = None) -> list[Expectation]:
    """Each `expect` judged against the whole run's figures (or the saturation point, in users, or
    in tps for a rate: one that was the client's own limit says nothing of the server, and fails)."""
    out = []
    for c in expect:
        why = None
        if c.metric.name == "saturation":
            value: float | None = float(saturation) if saturation is not None else None
        else:
            value = run.value(c.metric) if run.ticks else None
        ok = value is not None and c.holds(value)
        if c.metric.name == "saturation" and client_limited is not None:
            ok, why = False, client_limited
        out.append(Expectation(c.text, show(value, c) if c.metric.name != "saturation" else value, show_limit(c),
                               c.unit, ok, why))
    return out
