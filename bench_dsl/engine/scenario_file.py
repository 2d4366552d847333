"""A .bench file read with every kind bench-dsl knows: the workloads (bench_dsl.workloads.registry)
and the fleets a scenario may name (bench_dsl.fleet.registry). The language is handed the kinds
(bench_dsl.language.validate.load) and never imports them; this is the one place that hands them in."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from bench_dsl.engine.profiles.registry import LOAD_KINDS
from bench_dsl.fleet.registry import NAMED
from bench_dsl.language.model import Scenario
from bench_dsl.workloads.registry import OWN_METRICS, PLUGINS


def load(path: str | Path, defines: Mapping[str, str] | None = None, env: Mapping[str, str] | None = None,
         text: str | None = None, study: bool = True) -> Scenario:
    """Read, parse and validate a .bench file. Raises ScenarioError with every diagnostic."""
    from bench_dsl.language import validate  # the parser and lark: not for a worker, which reads no file

    return validate.load(path, defines, env, text, study, workloads=PLUGINS, fleets=NAMED,
                          metrics=OWN_METRICS, load_kinds=LOAD_KINDS)
