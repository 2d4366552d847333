"""Every load profile, by the ramp kind of the model it plans (`m.Scenario.ramp.kind`)."""

from __future__ import annotations

from typing import Any

from bench_dsl.core import plugins
from bench_dsl.core.axis import LoadAxis
from bench_dsl.engine.profiles.base import LoadProfile
from bench_dsl.engine.profiles.closed_loop import USERS_PROFILES
from bench_dsl.engine.profiles.open_loop import RATE_PROFILES
from bench_dsl.language.loads import LoadKind

# A plugin's (bench_dsl.core.plugins: LOAD_PROFILES) after bench-dsl's own.
PROFILES: dict[str, LoadProfile] = {p.kind: p for p in (*USERS_PROFILES, *RATE_PROFILES,
                                                         *plugins.contributions("LOAD_PROFILES"))}

# those of a syntax of their own (`load NAME { }`), by that name: the language is handed them
LOAD_KINDS: dict[str, LoadKind] = {p.syntax.name: p.syntax for p in PROFILES.values() if p.syntax is not None}

# every load axis a result may be on, by its name; the first profile's is a result's that names none
AXES: dict[str, LoadAxis] = {p.axis.name: p.axis for p in PROFILES.values()}
DEFAULT_AXIS = next(iter(AXES.values()))


def profile_of(ramp: Any) -> LoadProfile:
    """The profile of a scenario's ramp (any model object with a `kind` a profile is registered for)."""
    return PROFILES[ramp.kind].bound(ramp)


def axis_named(name: str | None) -> LoadAxis:
    """The load axis a scenario names (its `load_axis`); the default where it names none known."""
    return AXES.get(name or "", DEFAULT_AXIS)


def axis_of(doc: Any) -> LoadAxis:
    """The load axis of a result document (or of its saturation alone): as its saturation or its
    scenario names it; in one written before they did, the axis whose own key (a step's rate_tps) or
    offered figure (every open-loop row's offered_tps) its rows carry, else the default (users)."""
    if not isinstance(doc, dict):
        return DEFAULT_AXIS
    sat = doc["saturation"] if isinstance(doc.get("saturation"), dict) else {}
    named = sat.get("axis") or (doc.get("scenario") or {}).get("load_axis")
    if named in AXES:
        return AXES[named]
    rows = [sat, *(doc.get("steps") or []), doc.get("summary") or {}, *(doc.get("intervals") or [])]
    for ax in AXES.values():
        if ax is not DEFAULT_AXIS and any(isinstance(r, dict) and (ax.key in r or (ax.offered or ax.key) in r)
                                          for r in rows):
            return ax
    return DEFAULT_AXIS
