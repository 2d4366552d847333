"""Scenario -> the phases the run will go through. Pure: no clock, no database."""

from __future__ import annotations

import math
from dataclasses import dataclass

from bench_dsl import model as m
from bench_dsl.dsn import redact
from bench_dsl.workloads.registry import plan_lines


@dataclass(frozen=True, slots=True)
class Phase:
    kind: str  # warmup | settle | hold | ramp
    step: int | None  # 1-based step number; None for warmup
    users: int  # users at the start of the phase
    users_end: int  # users at its end (differs only for a linear ramp)
    seconds: float
    # when this phase's conditions without `for D` are judged: "step" at the end of its hold (a
    # constant or step ramp), "interval" at each report interval (a linear ramp, which has no steps
    # to compare), None: not judged (warmup, settle). `for D` conditions are judged at every
    # measured tick whatever this says.
    judge: str | None = None

    @property
    def measured(self) -> bool:
        return self.kind in ("hold", "ramp")


@dataclass(frozen=True, slots=True)
class Plan:
    phases: tuple[Phase, ...]
    steps: int

    @property
    def seconds(self) -> float:
        return sum(p.seconds for p in self.phases)

    @property
    def judged_per_interval(self) -> bool:
        return any(p.judge == "interval" for p in self.phases)

    @property
    def max_users(self) -> int:
        return max(max(p.users, p.users_end) for p in self.phases)


def _whole(seconds: float, scale: float) -> float:
    """Phases last whole seconds (the engine's tick); scaled runs keep at least one."""
    if seconds <= 0:
        return 0.0
    return float(max(1, math.ceil(seconds * scale - 1e-9)))


def plan(sc: m.Scenario, time_scale: float = 1.0, max_steps: int | None = None) -> Plan:
    """The phases of a run. time_scale shrinks every duration (a smoke run); max_steps caps a ramp."""
    r = sc.ramp
    phases: list[Phase] = []
    first = r.users if isinstance(r, m.ConstantRamp) else r.start
    if sc.warmup > 0:
        phases.append(Phase("warmup", None, first, first, _whole(sc.warmup, time_scale), None))
    match r:
        case m.ConstantRamp():
            phases.append(Phase("hold", 1, r.users, r.users, _whole(r.duration, time_scale), "step"))
            steps = 1
        case m.StepRamp():
            counts = r.user_counts()
            if max_steps is not None:
                counts = counts[:max_steps]
            settle, hold = _whole(r.settle, time_scale), _whole(r.hold, time_scale)
            for i, users in enumerate(counts, start=1):
                if i > 1 and r.settle > 0:
                    phases.append(Phase("settle", i, users, users, settle, None))
                phases.append(Phase("hold", i, users, users, hold, "step"))
            steps = len(counts)
        case m.LinearRamp():
            over = _whole(r.over, time_scale)
            phases.append(Phase("ramp", 1, r.start, r.end, over, "interval"))
            rest = _whole(r.duration, time_scale) - over
            if rest > 0:
                phases.append(Phase("hold", 1, r.end, r.end, rest, "interval"))
            steps = 1
    return Plan(tuple(phases), steps)


def step_count(r: m.StepRamp) -> int:
    """How many steps a step ramp makes, counted without listing them (+1 up to 100,000 users)."""
    if r.add is not None:
        return (r.max - r.start) // r.add + 1
    return len(r.user_counts())


def planned_seconds(sc: m.Scenario, time_scale: float = 1.0, max_steps: int | None = None) -> float:
    """plan(sc, time_scale, max_steps).seconds, without building a phase per step: what a study's
    --plan adds up over a thousand configurations of a ramp of 10,000 steps."""
    r = sc.ramp
    total = _whole(sc.warmup, time_scale) if sc.warmup > 0 else 0.0
    match r:
        case m.ConstantRamp():
            return total + _whole(r.duration, time_scale)
        case m.StepRamp():
            n = step_count(r) if max_steps is None else min(step_count(r), max_steps)
            settles = (n - 1) * _whole(r.settle, time_scale) if r.settle > 0 else 0.0
            return total + settles + n * _whole(r.hold, time_scale)
        case m.LinearRamp():
            return total + max(_whole(r.over, time_scale), _whole(r.duration, time_scale))
    raise AssertionError(r)


SHOWN_STEPS = 3  # a ramp of more steps than twice this is shown by its first and last steps, and a summary


def describe(sc: m.Scenario, p: Plan) -> str:
    """The plan as `bench check --plan` prints it."""
    lines = [f'scenario "{sc.name}"']
    lines.append("  target:   " + _target_line(sc))
    lines.extend(plan_lines(sc.workload))
    if sc.server_settings:
        lines.append("  server:   " + ", ".join(f"{s.name}={s.text}" for s in sc.server_settings))
    if sc.server_dir:
        lines.append(f"  files:    in {sc.server_dir} (the throwaway server's directory: the disk under test)")
    if sc.replicas:
        lines.append(f"  replicas: {sc.replicas} throwaway replica{'s' if sc.replicas > 1 else ''}, attached with GTIDs; "
                     "lag measured by a heartbeat")
    for d in sc.replica_dsns:
        lines.append(f"  replica:  {d.redacted()} (lag measured by a heartbeat)")
    if sc.monitor:
        lines.append(f"  monitor:  {redact(sc.monitor)} (the server host's CPU and disks, from its node_exporter)")
    lines.append("  workers:  " + (f"{sc.workers} process(es)" if sc.workers else "auto (one process per core)"))
    lines.append(f"  seed:     {sc.seed}" if sc.seed is not None else
                 "  seed:     random, drawn when the run starts and recorded with it (set 'seed' to repeat a run)")
    lines.append("  prepare:  load the data unless it is already there (--force-prepare reloads)")
    t = 0.0
    first_hidden, last_hidden = SHOWN_STEPS + 1, p.steps - SHOWN_STEPS
    summarised = False
    for ph in p.phases:
        if p.steps > 2 * SHOWN_STEPS and ph.step is not None and first_hidden <= ph.step <= last_hidden:
            if not summarised:  # one line stands for every hidden step
                summarised = True
                lines.append(f"  {_clock(t)}  steps {first_hidden}-{last_hidden} of {p.steps}: alike, "
                             f"{_step_words(sc.ramp, p, first_hidden)} each")
            t += ph.seconds
            continue
        who = f"{ph.users} users" if ph.users == ph.users_end else f"{ph.users} -> {ph.users_end} users"
        label = ph.kind if ph.step is None else f"step {ph.step}/{p.steps} {ph.kind}"
        note = "measured" if ph.measured else "not measured"
        lines.append(f"  {_clock(t)}  {label:<22} {who:<18} {ph.seconds:>6g}s  {note}")
        t += ph.seconds
    lines.append(f"  {_clock(t)}  end (at the latest)")
    if sc.stop:
        lines.append("  stop when:")
        for c in sc.stop:
            when = f"live, over a {c.window:g}s window" if c.window else (
                "at each step's end" if c.kind != "threshold" or isinstance(sc.ramp, m.StepRamp)
                else "at each report interval" if p.judged_per_interval else "at the end")
            lines.append(f"    {c.resolved:<36} ({when})")
    if sc.expect:
        lines.append("  expect:   " + "; ".join(c.resolved for c in sc.expect))
    lines.append(f"  report every {sc.report_every:g}s" + (f'; output "{sc.output}"' if sc.output else ""))
    lines.extend(d.render(sc.text) for d in sc.warnings)
    return "\n".join(lines)


def _step_words(r: m.Ramp, p: Plan, step: int) -> str:
    """What each step of a ramp does, as a line for the steps --plan does not list one by one."""
    assert isinstance(r, m.StepRamp)
    phases = {ph.kind: ph.seconds for ph in p.phases if ph.step == step}
    settle = f"a {phases['settle']:g}s settle (not measured), " if "settle" in phases else ""
    more = f"+{r.add} users" if r.add is not None else f"x{r.mul:g} users"
    return f"{more}, {settle}a {phases['hold']:g}s hold (measured)"


def _target_line(sc: m.Scenario) -> str:
    if sc.target is None:
        extra = f" ({sc.target_from} is not set)" if sc.target_from else ""
        return "an embedded throwaway server" + extra
    return redact(sc.target)


def _clock(t: float) -> str:
    t = int(t)
    return f"{t // 3600:d}:{t % 3600 // 60:02d}:{t % 60:02d}"
