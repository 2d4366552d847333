"""Every load profile, by the ramp kind of the model it plans (`m.Scenario.ramp.kind`)."""

from __future__ import annotations

from typing import Any

from bench_dsl.engine.profiles.base import LoadProfile
from bench_dsl.engine.profiles.rate import RATE_PROFILES
from bench_dsl.engine.profiles.users import USERS_PROFILES

PROFILES: dict[str, LoadProfile] = {p.kind: p for p in (*USERS_PROFILES, *RATE_PROFILES)}


def profile_of(ramp: Any) -> LoadProfile:
    """The profile of a scenario's ramp (any model object with a `kind` a profile is registered for)."""
    return PROFILES[ramp.kind].bound(ramp)
