"""The plan as `bench check --plan` prints it: the phases (bench_dsl.engine.plan), in the words of
the scenario's load profile (bench_dsl.engine.profiles), the target, and the workload's own lines
(its plugin's). Apart from the planner so that what judges a plan (the judge, the scheduler) never
loads the workloads and their drivers."""

from __future__ import annotations

from bench_dsl.core.dsn import redact
from bench_dsl.core.numbers import num
from bench_dsl.engine.phases import Plan
from bench_dsl.engine.profiles.registry import profile_of
from bench_dsl.fleet.registry import NAMED
from bench_dsl.language import model as m
from bench_dsl.workloads.registry import plan_lines

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
        many = "s" if sc.replicas > 1 else ""
        lines.append(f"  replicas: {sc.replicas} throwaway replica{many}, attached with GTIDs; "
                     "lag measured by a heartbeat")
    for d in sc.replica_dsns:
        lines.append(f"  replica:  {d.redacted()} (lag measured by a heartbeat)")
    if sc.monitor:
        lines.append(f"  monitor:  {redact(sc.monitor)} (the server host's CPU and disks, from its node_exporter)")
    if sc.power:
        lines.append(f"  power:    {sc.power.describe()} (the server machine's power, once a second)")
    if sc.cluster is not None:  # where it runs (a cluster's address) is known when the run joins it
        lines.append(f"  workers:  {sc.cluster}: {NAMED[sc.cluster].planned(sc.workers)}"
                     f" (on worker loss: {sc.on_worker_loss})")
    else:
        lines.append("  workers:  " + (f"{sc.workers} process(es)" if sc.workers else "auto (one process per core)")
                     + (" (on worker loss: continue)" if sc.on_worker_loss == "continue" else ""))
    lines.append(f"  seed:     {sc.seed}" if sc.seed is not None else
                 "  seed:     random, drawn when the run starts and recorded with it (set 'seed' to repeat a run)")
    lines.append("  prepare:  load the data unless it is already there (--force-prepare reloads)")
    profile = profile_of(sc.ramp)
    lines.append(f"  load:     {profile.describe(sc.ramp)}")
    t = 0.0
    first_hidden, last_hidden = SHOWN_STEPS + 1, p.steps - SHOWN_STEPS
    summarised = False
    for ph in p.phases:
        if p.steps > 2 * SHOWN_STEPS and ph.step is not None and first_hidden <= ph.step <= last_hidden:
            if not summarised:  # one line stands for every hidden step
                summarised = True
                lines.append(f"  {clock(t)}  steps {first_hidden}-{last_hidden} of {p.steps}: alike, "
                             f"{profile.step_words(sc.ramp, p, first_hidden)} each")
            t += ph.seconds
            continue
        who = profile.load(ph)
        label = ph.kind if ph.step is None else f"step {ph.step}/{p.steps} {ph.kind}"
        note = "measured" if ph.measured else "not measured"
        lines.append(f"  {clock(t)}  {label:<22} {who:<18} {num(ph.seconds):>6}s  {note}")
        t += ph.seconds
    lines.append(f"  {clock(t)}  end (at the latest)")
    if sc.stop:
        lines.append("  stop when:")
        for c in sc.stop:
            when = f"live, over a {num(c.window)}s window" if c.window else (
                "at each step's end" if c.kind != "threshold" else profile.judged(sc.ramp, p))
            lines.append(f"    {c.resolved:<36} ({when})")
    if sc.expect:
        lines.append("  expect:   " + "; ".join(c.resolved for c in sc.expect))
    lines.append(f"  report every {num(sc.report_every)}s" + (f'; output "{sc.output}"' if sc.output else ""))
    lines.extend(d.render(sc.text) for d in sc.warnings)
    return "\n".join(lines)


def _target_line(sc: m.Scenario) -> str:
    if sc.target is None:
        extra = f" ({sc.target_from} is not set)" if sc.target_from else ""
        return "an embedded throwaway server" + extra
    return redact(sc.target)


def clock(seconds: float) -> str:
    """H:MM:SS, to the nearest second: when a phase begins in a plan; how long a study may take."""
    s = round(seconds)
    return f"{s // 3600:d}:{s % 3600 // 60:02d}:{s % 60:02d}"
