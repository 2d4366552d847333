"""Scenario -> the phases the run will go through. Pure: no clock, no database. The phases of each
shape of load are its profile's (bench_dsl.engine.profiles), found by the scenario's ramp kind."""

from __future__ import annotations

from bench_dsl.engine.phases import Plan
from bench_dsl.engine.profiles.registry import profile_of
from bench_dsl.language import model as m


def plan(sc: m.Scenario, time_scale: float = 1.0, max_steps: int | None = None) -> Plan:
    """The phases of a run. time_scale shrinks every duration (a smoke run); max_steps caps a ramp."""
    return profile_of(sc.ramp).plan(sc.ramp, sc.warmup, time_scale, max_steps)


def planned_seconds(sc: m.Scenario | m.Deferred, time_scale: float = 1.0, max_steps: int | None = None) -> float:
    """plan(sc, time_scale, max_steps).seconds, without building a phase per step: what a study's
    --plan adds up over a thousand configurations of a ramp of 10,000 steps."""
    return profile_of(sc.ramp).seconds(sc.ramp, sc.warmup, time_scale, max_steps)
