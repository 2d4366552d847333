"""What a study will run, worked out before anything starts: the configurations --only keeps, the
scenario each one runs, where each run's result goes, and what `bench check --plan` says of it.
Loads no driver: `bench check --plan` reads it."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from pathlib import Path

from bench_dsl.core.errors import UsageError
from bench_dsl.engine.outcome import expand_output, safe_name
from bench_dsl.engine.plan import planned_seconds
from bench_dsl.engine.plan_text import clock
from bench_dsl.engine.scenario_file import load
from bench_dsl.engine.study_configuration import StudyConfiguration
from bench_dsl.language import model as m

DEFAULT_STUDY_OUTPUT = "results/{scenario}-{time}/"
SERVER_START_S = 1.0  # what a throwaway server's start adds to each run, for the estimate of --plan


def select(study: m.Study, only: list[str]) -> list[m.Configuration]:
    """The configurations --only keeps: each `--only name=v1,v2` keeps those with one of the values
    (as written, or equal as numbers: 2K and 2048 are the same); several --only must all hold."""
    chosen = list(study.configurations)
    for text in only:
        name, sep, values = text.partition("=")
        name = name.strip()
        if not sep or not name:
            raise UsageError(f"--only {text}: write --only name=value (e.g. --only innodb_io_capacity=2000)")
        keys = {k.lstrip("$"): k for k in study.keys}
        key = keys.get(name.lstrip("$"))
        if key is None:
            raise UsageError(f"--only {text}: {name} does not vary" + (f"; what varies: {', '.join(study.keys)}"
                                                                         if study.keys else " (the file has no vary)"))
        wanted = [v.strip() for v in values.split(",") if v.strip()]
        chosen = [c for c in chosen if any(_same(dict(c.values)[key], w) for w in wanted)]
        if not chosen:
            given = sorted({dict(c.values)[key] for c in study.configurations})
            raise UsageError(f"--only {text}: no configuration has it; {key} is one of {', '.join(given)}")
    return chosen


def _same(written: str, wanted: str) -> bool:
    if written == wanted:
        return True
    return bool(_numbers(written) & _numbers(wanted))


def _numbers(text: str) -> set[float]:
    """What a value may mean as a number: a K of rows is 1000, a K of a size 1024."""
    match = re.fullmatch(r"(-?[0-9]+(?:\.[0-9]+)?)([KMGT]?)", text.strip())
    if match is None:
        return set()
    n, unit = float(match.group(1)), match.group(2)
    if not unit:
        return {n}
    power = "KMGT".index(unit) + 1
    return {n * 1000 ** power, n * 1024 ** power}


def scenario_for(sc: m.Scenario, conf: m.Configuration, defines: Mapping[str, str]) -> m.Scenario:
    """The scenario one configuration runs: its `let` values given as -D would be, its settings
    added to the server's, on its directory; the study's seed, so every configuration draws the
    same keys."""
    base = sc
    if conf.lets:
        given = {**defines, **dict(conf.lets)}
        got = sc.configured.get(tuple(sorted(given.items())))
        base = (got.build() if isinstance(got, m.Deferred) else got) or load(sc.file, given, text=sc.text, study=False)
    settings = tuple(s for s in base.server_settings if s.name not in {v.name for v in conf.settings}) + conf.settings
    return dataclasses.replace(base, server_settings=settings, server_dir=conf.server_dir or base.server_dir,
                               study=None, seed=sc.seed, seed_given=sc.seed_given,
                               configured={})  # a run carries its own scenario, not the study's others


def _load_of(sc: m.Scenario, conf: m.Configuration, defines: Mapping[str, str]) -> m.Scenario | m.Deferred:
    """What a configuration's plan reads (its load and warmup), without building a scenario that
    was found valid without being built."""
    got = sc.configured.get(tuple(sorted({**defines, **dict(conf.lets)}.items()))) if conf.lets else None
    return got if isinstance(got, m.Deferred) else scenario_for(sc, conf, defines)


def study_configuration(sc: m.Scenario, conf: m.Configuration, repeat: int, study_id: str) -> StudyConfiguration:
    study = sc.study
    assert study is not None
    return StudyConfiguration(conf.id, conf.label, dict(conf.values), repeat, study.repeat, sc.name, study_id)


def output_directory(sc: m.Scenario, template: str | None) -> Path:
    """The study's directory: the file's output (or --json) as a directory; a name ending in
    .json loses it (a study writes a file per run)."""
    text = expand_output(template or sc.output or DEFAULT_STUDY_OUTPUT, sc)
    return Path(text.removesuffix(".json") if text.endswith(".json") else text)


def run_path(directory: Path, conf: m.Configuration, repeat: int) -> Path:
    slug = safe_name(conf.label)[:80] if conf.values else "as-written"
    return directory / f"{conf.id}-{slug}" / f"repeat-{repeat}.json"


def describe(sc: m.Scenario, only: list[str], defines: Mapping[str, str], time_scale: float = 1.0,
             max_steps: int | None = None) -> str:
    """What `bench check --plan` adds for a study: the configurations, their order, the time."""
    study = sc.study
    assert study is not None
    chosen = select(study, only)
    seconds = {c.id: planned_seconds(_load_of(sc, c, defines), time_scale, max_steps) for c in chosen}
    order = [(c, r) for c, r in study.order() if c.id in seconds]
    embedded = sc.target_dsn is None
    total = sum(seconds[c.id] for c, _ in order) + (SERVER_START_S * len(order) if embedded else 0)
    how = "paired (zip)" if study.zip else "every combination"
    lines = [f"study: {len(chosen)} configuration{'s' if len(chosen) != 1 else ''}"
             + (f" ({how} of {', '.join(study.keys)})" if study.keys else "")
             + f", {study.repeat} time{'s' if study.repeat != 1 else ''} each: {len(order)} runs"]
    for c in chosen:
        lines.append(f"  {c.id:4} {c.label:60} at most {clock(seconds[c.id])} a run")
    lines.append("  order (interleaved, so that a machine's drift spreads over every configuration): "
                 + " ".join(f"{c.id}" + (f"#{r}" if study.repeat > 1 else "") for c, r in order[:40])
                 + (" ..." if len(order) > 40 else ""))
    lines.append(f"  total: at most {clock(total)}" + (" plus loading the data of each run: each configuration "
                                                         "runs on a fresh throwaway server" if embedded else ""))
    return "\n".join(lines)
