"""The stop conditions as a person watching the run sees them: each one's current value, its limit and
a state (ok / near / FIRED), worked out from the figures the engine's events carry. Pure: no Textual.

The engine stays the judge: a step's verdicts (in its `step` event) and the `fired` event replace
anything estimated here. Between them, the live value is read from the same window the engine will
judge: the step so far for step ramps, the last interval for linear ramps, the last D seconds of
ticks for `for D` conditions.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from bench_dsl.model import Condition, Metric

# ok / near: live values; over: a live value past its limit that the engine has not judged yet (a
# step is judged at its end); FIRED: the engine's verdict, never an estimate made here.
State = Literal["ok", "near", "over", "FIRED", "-"]

# "near": the value has gone 80% of the way to its limit (or, for limits crossed from above, is
# within 25% of it). A warning a person can act on before the condition fires, and not a guess
# about the future.
NEAR = 0.8


@dataclass(frozen=True, slots=True)
class ConditionRow:
    text: str  # as written in the file
    value: str  # the current value, in the unit the file used for the limit
    limit: str
    state: State
    source: str  # which figures the value was read from: "step 3 so far", "last 3s", ...


def pct_key(p: float | None) -> str:
    """The key of a percentile in the engine's latency_ms dicts: 90 -> p90, 99.9 -> p99_9."""
    if p is None:
        return "p?"
    return "p" + (str(int(p)) if float(p).is_integer() else str(p).replace(".", "_"))


def figure(metric: Metric, fig: Mapping[str, Any]) -> float | None:
    """A metric read from an event's figures (an interval, a step, a step so far), in display units:
    latency in ms, rates per second (tpm, nopm per minute), error_rate and cpu in percent."""
    if metric.name == "cpu":
        return (fig.get("cpu") or {}).get(metric.source or "server")
    if metric.name == "nopm":
        return fig.get("nopm")
    src = fig if metric.transaction is None else (fig.get("transactions") or {}).get(metric.transaction)
    if not src:
        return None
    match metric.name:
        case "latency":
            key = pct_key(metric.percentile) if metric.stat == "p" else str(metric.stat)
            return (src.get("latency_ms") or {}).get(key)
        case "tps":
            return src.get("tps")
        case "tpm":
            tpm = src.get("tpm")
            return tpm if tpm is not None else (None if src.get("tps") is None else src["tps"] * 60)
        case "qps":
            return src.get("qps")
        case "error_rate":
            count, errors = src.get("count"), src.get("errors")
            if count is None or errors is None or count + errors == 0:
                return None
            return 100.0 * errors / (count + errors)
    return None


def canonical(c: Condition, shown: float) -> float:
    """A display value back in the model's units, to compare with `c.limit` (latency is in seconds)."""
    return shown / 1000 if c.metric.name == "latency" else shown


def limit_shown(c: Condition) -> float:
    return c.limit * 1000 if c.kind == "threshold" and c.metric.name == "latency" else c.limit


def fmt_num(v: float) -> str:
    if v == int(v):
        return f"{int(v):,}"
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    if abs(v) >= 100:
        return f"{v:.0f}"
    if abs(v) >= 10:
        return f"{v:.1f}"
    return f"{v:.2f}".rstrip("0").rstrip(".")


def fmt_latency(ms: float) -> str:
    """Milliseconds, or seconds from one second up (a `p99 > 10s` limit reads 10s, not 10,000ms)."""
    return f"{fmt_num(ms / 1000)}s" if abs(ms) >= 1000 else f"{fmt_num(ms)}ms"


def _unit(c: Condition) -> str:
    if c.metric.name == "latency":
        return "ms"
    return {"%": "%", "x": "x"}.get(c.unit, "")


def show_limit(c: Condition) -> str:
    if c.kind == "plateau":
        return f"gain < {fmt_num(c.limit)}%"
    if c.kind == "kink":
        return f"{fmt_num(c.limit)}x before"
    if c.metric.name == "latency":
        return f"{c.op} {fmt_latency(limit_shown(c))}"
    return f"{c.op} {fmt_num(limit_shown(c))}{_unit(c)}"


def show_value(c: Condition, value: float | None, before: float | None = None) -> str:
    if value is None:
        return "-"
    if c.kind == "plateau":
        if before is None or before <= 0:
            return "-"
        return f"{100.0 * (value - before) / before:+.1f}%"
    if c.kind == "kink":
        if before is None or before <= 0:
            return "-"
        return f"{value / before:.2f}x"
    if c.metric.name == "latency":
        return fmt_latency(value)
    return f"{fmt_num(value)}{_unit(c)}"


def state_of(c: Condition, value: float | None, before: float | None = None) -> State:
    """ok / near / over for a value not judged by the engine (or judged and not fired)."""
    if value is None:
        return "-"
    if c.kind == "plateau":
        if before is None or before <= 0:
            return "-"
        gain = 100.0 * (value - before) / before
        return "over" if gain < c.limit else "near" if gain < c.limit / NEAR else "ok"
    if c.kind == "kink":
        if before is None or before <= 0:
            return "-"
        return "over" if value > c.limit * before else "near" if value >= NEAR * c.limit * before else "ok"
    v = canonical(c, value)
    if c.holds(v):
        return "over"
    op, limit = c.op or ">", c.limit
    if op in (">", ">=") and limit > 0 and v >= NEAR * limit:
        return "near"
    if op in ("<", "<=") and limit > 0 and v <= limit / NEAR:
        return "near"
    return "ok"


class _StepFigures:
    """What a step's `step_so_far` lacks (qps, cpu, nopm), rebuilt from its measured intervals, so
    every metric can be read over the step so far as the engine will judge it at the step's end."""

    def __init__(self) -> None:
        self.reset(None)

    def reset(self, step: int | None) -> None:
        self.step = step
        self.seconds = 0.0
        self.sums: dict[str, float] = {}
        self.cpu: dict[str, float] = {}
        self.cpu_seconds: dict[str, float] = {}

    def add(self, interval: Mapping[str, Any]) -> None:
        if interval.get("step") != self.step:
            self.reset(interval.get("step"))
        secs = float(interval.get("seconds") or 0.0)
        self.seconds += secs
        for key in ("qps", "nopm"):
            if interval.get(key) is not None:
                self.sums[key] = self.sums.get(key, 0.0) + interval[key] * secs
        for src, v in (interval.get("cpu") or {}).items():
            if v is not None:
                self.cpu[src] = self.cpu.get(src, 0.0) + v * secs
                self.cpu_seconds[src] = self.cpu_seconds.get(src, 0.0) + secs

    def merged(self, step_so_far: Mapping[str, Any]) -> dict[str, Any]:
        out = dict(step_so_far)
        if self.seconds > 0:
            for key, total in self.sums.items():
                out[key] = total / self.seconds
            out["cpu"] = {k: self.cpu[k] / s for k, s in self.cpu_seconds.items() if s > 0}
        return out


class _TickWindow:
    """The measured ticks of the current step, for `for D` conditions (judged live over D seconds).
    A tick is about a second; its figures carry no latency, so latency windows read the last interval."""

    def __init__(self) -> None:
        self.step: int | None = None
        self.ticks: deque[Mapping[str, Any]] = deque(maxlen=3600)

    def add(self, tick: Mapping[str, Any]) -> None:
        if tick.get("step") != self.step:
            self.ticks.clear()
            self.step = tick.get("step")
        self.ticks.append(tick)

    def figures(self, seconds: float) -> tuple[dict[str, Any], int]:
        n = max(1, int(round(seconds)))
        last = list(self.ticks)[-n:]
        if not last:
            return {}, 0
        k = len(last)
        out: dict[str, Any] = {key: sum(t.get(key) or 0.0 for t in last) / k for key in ("tps", "tpm", "qps")}
        if any("nopm" in t for t in last):
            out["nopm"] = sum(t.get("nopm") or 0.0 for t in last) / k
        cpu: dict[str, float] = {}
        for src in ("server", "host", "client"):
            vals = [t["cpu"][src] for t in last if (t.get("cpu") or {}).get(src) is not None]
            if vals:
                cpu[src] = sum(vals) / len(vals)
        out["cpu"] = cpu
        out["count"] = sum(sum(x.get("count", 0) for x in (t.get("transactions") or {}).values()) for t in last)
        out["errors"] = sum(sum(x.get("errors", 0) for x in (t.get("transactions") or {}).values()) for t in last)
        txs: dict[str, dict[str, float]] = {}
        for t in last:
            for name, x in (t.get("transactions") or {}).items():
                agg = txs.setdefault(name, {"count": 0, "errors": 0, "tps": 0.0})
                agg["count"] += x.get("count", 0)
                agg["errors"] += x.get("errors", 0)
                agg["tps"] += (x.get("tps") or 0.0) / k
        out["transactions"] = txs
        return out, k


class ConditionBoard:
    """Follows the events and keeps one row per stop condition.

    `conditions` are the scenario's parsed conditions (Run.sc.stop); without them (a replay of a
    stream whose scenario is unknown) the texts of the `started` event are listed without values.
    """

    def __init__(self, conditions: tuple[Condition, ...] = (), linear: bool = False) -> None:
        self.conditions = conditions
        self.texts: list[str] = [c.text for c in conditions]
        self.linear = linear  # a linear ramp judges its thresholds on each interval, not per step
        self.step_figs = _StepFigures()
        self.window = _TickWindow()
        self.live: dict[str, Any] | None = None  # the step so far (or the last interval, linear)
        self.live_label = ""
        self.interval: Mapping[str, Any] | None = None
        self.previous: Mapping[str, Any] | None = None  # the last complete step: plateau and kink
        self.judged: dict[str, dict[str, Any]] = {}  # text -> the engine's last verdict on it
        self.judged_label = ""
        self.fired: dict[str, Any] | None = None

    def started(self, texts: list[str]) -> None:
        if not self.conditions:
            self.texts = list(texts)

    def on_tick(self, tick: Mapping[str, Any]) -> None:
        if tick.get("phase") in ("hold", "ramp"):
            self.window.add(tick)

    def on_interval(self, interval: Mapping[str, Any]) -> None:
        self.interval = interval
        if not interval.get("measured"):
            return
        if self.linear:
            self.live, self.live_label = dict(interval), "last interval"
            return
        self.step_figs.add(interval)
        so_far = interval.get("step_so_far")
        if so_far is not None:
            self.live = self.step_figs.merged(so_far)
            self.live_label = f"step {interval.get('step')} so far"

    def on_step(self, step: Mapping[str, Any]) -> None:
        self.judged = {v["condition"]: v for v in step.get("conditions") or []}
        self.judged_label = f"step {step.get('step')}"
        self.live = None
        self.window = _TickWindow()
        if step.get("complete"):
            self.previous = step

    def on_fired(self, fired: Mapping[str, Any]) -> None:
        self.fired = dict(fired)

    def rows(self) -> list[ConditionRow]:
        by_text = {c.text: c for c in self.conditions}
        return [self._row(t, by_text.get(t)) for t in self.texts]

    def _row(self, text: str, c: Condition | None) -> ConditionRow:
        fired = self.fired if self.fired and self.fired.get("condition") == text else None
        if c is None:
            if fired:
                return ConditionRow(text, _fmt(fired.get("value")), _fmt(fired.get("limit")), "FIRED", "")
            return ConditionRow(text, "-", "-", "-", "")
        limit = show_limit(c)
        if fired is not None:
            return ConditionRow(text, show_value(c, fired.get("value"), fired.get("previous")), limit, "FIRED",
                                f"step {fired.get('step')}" if fired.get("step") is not None else "")
        if c.window:
            figs, seconds = self.window.figures(c.window)
            if c.metric.name == "latency" and self.interval is not None:
                figs, src = dict(self.interval), "last interval"
            else:
                src = f"last {seconds}s" if seconds >= c.window else f"last {seconds}s of {c.window:g}s"
            if not figs:
                return ConditionRow(text, "-", limit, "-", "")
            value = figure(c.metric, figs)
            return ConditionRow(text, show_value(c, value), limit, state_of(c, value), src)
        if self.live is not None:
            before = figure(c.metric, self.previous) if self.previous is not None else None
            value = figure(c.metric, self.live)
            return ConditionRow(text, show_value(c, value, before), limit, state_of(c, value, before),
                                self.live_label)
        verdict = self.judged.get(text)
        if verdict is not None:
            value, before = verdict.get("value"), verdict.get("previous")
            state: State = "FIRED" if verdict.get("fired") else state_of(c, value, before)
            return ConditionRow(text, show_value(c, value, before), limit, state, self.judged_label)
        return ConditionRow(text, "-", limit, "-", "")


def _fmt(v: Any) -> str:
    return "-" if v is None else fmt_num(float(v)) if isinstance(v, int | float) else str(v)
