"""Kinds from outside bench-dsl: a load profile, a fleet, a workload, a metric (a figure a condition
may name), a comparison (a condition that holds a step against the step before). A plugin is a
module named in the environment variable BENCH_DSL_PLUGINS (comma-separated:
the tests' toys, a kind being tried; as PYTHONPATH, it runs the code it names) or an installed
package's entry point in the group "bench_dsl.plugins". It declares what it adds as module
attributes, each a sequence, read by the registry that owns them:

    LOAD_PROFILES    bench_dsl.engine.profiles.base.LoadProfile  bench_dsl.engine.profiles.registry
    FLEET_KINDS      bench_dsl.fleet.kinds.FleetKind            bench_dsl.fleet.registry
    WORKLOADS        bench_dsl.workloads.plugin.WorkloadPlugin   bench_dsl.workloads.registry
    METRICS          bench_dsl.language.metric_decls.MetricDecl  bench_dsl.workloads.registry.METRICS
    COMPARISONS      bench_dsl.language.comparisons.Comparison   bench_dsl.workloads.registry.METRICS

A plugin imports the floors it builds on and never a registry: a registry reads its plugins when it
is first imported, so a plugin that imported one would be read half-built. This module imports no
plugin until a registry asks (`contributions`); one that cannot be imported is said by `problems`,
which the command reads before it does anything (bench_dsl.cli.main), and contributes nothing."""

from __future__ import annotations

import importlib
import os
from importlib import metadata
from types import ModuleType
from typing import Any

ENV = "BENCH_DSL_PLUGINS"
GROUP = "bench_dsl.plugins"

_loaded: tuple[ModuleType, ...] | None = None
_problems: list[str] = []


def _names() -> list[tuple[str, str]]:
    """(where it was named, module) for each plugin, the environment's first."""
    named = [("BENCH_DSL_PLUGINS", n.strip()) for n in os.environ.get(ENV, "").split(",") if n.strip()]
    for ep in metadata.entry_points(group=GROUP):
        named.append((f"entry point {ep.name} of {ep.dist.name if ep.dist else 'a package'}", ep.value))
    return named


def modules() -> tuple[ModuleType, ...]:
    """Every plugin module, imported once, in the order named."""
    global _loaded
    if _loaded is None:
        got: list[ModuleType] = []
        for where, name in dict.fromkeys(_names()):
            try:
                got.append(importlib.import_module(name.split(":")[0]))
            except Exception as e:  # a plugin's own bug or a wrong name: said by problems(), never a traceback
                _problems.append(f"plugin {name!r} ({where}) cannot be imported: {type(e).__name__}: {e}")
        _loaded = tuple(got)
    return _loaded


def contributions(attribute: str) -> list[Any]:
    """What the plugins add to one registry: each module's `attribute`, in order."""
    return [item for module in modules() for item in getattr(module, attribute, ())]


def problems() -> list[str]:
    """The plugins named that could not be imported, in words."""
    modules()
    return list(_problems)
