"""A fleet is named by what it declares (bench_dsl.fleet.kinds): the language, the CLI and the plan
take any kind they are handed, and name none (issue 40, 4)."""

from __future__ import annotations

import dataclasses

import pytest

from bench_dsl.core.errors import ScenarioError
from bench_dsl.engine.plan import plan
from bench_dsl.engine.plan_text import describe
from bench_dsl.fleet import registry
from bench_dsl.fleet.kinds import FleetKind
from bench_dsl.language import validate
from bench_dsl.workloads.registry import PLUGINS


def _refuses_without_target(targeted: bool) -> tuple[str, str] | None:
    return None if targeted else ("the toy fleet needs a target", "target env(\"BENCH_DSN\")")


TOY = FleetKind("toy", lambda s: None,  # type: ignore[arg-type,return-value]
                named=True, usage="workers toy (threads of the coordinator), workers toy 3",
                problem=_refuses_without_target, planned=lambda n: f"{n or 'as many'} thread(s)")

TEXT = """scenario "t" {{
  {target}
  workload custom {{ transaction read {{ query "SELECT 1" }} }}
  {workers}
  users 4
  duration 10s
}}
"""


def _load(workers: str, target: str = 'target "mysql://u@db.example/d"', fleets: check.placement.Fleets | None = None):
    return validate.load("t.bench", text=TEXT.format(target=target, workers=workers), env={}, workloads=PLUGINS,
                      fleets={"toy": TOY} if fleets is None else fleets)


def test_a_fleet_handed_to_the_language_is_named_by_the_scenario() -> None:
    sc = _load("workers toy 3")
    assert (sc.cluster, sc.workers) == ("toy", 3)
    sc = _load("workers toy")
    assert (sc.cluster, sc.workers) == ("toy", None)


def test_what_a_fleet_refuses_is_said_at_its_line_with_its_hint() -> None:
    with pytest.raises(ScenarioError) as e:
        _load("workers toy", target="")
    said = e.value.render()
    assert "t.bench:4:3: error: the toy fleet needs a target" in said and 'target env("BENCH_DSN")' in said


def test_a_word_no_fleet_declares_lists_those_handed_in() -> None:
    with pytest.raises(ScenarioError) as e:
        _load("workers cloud")
    said = e.value.render()
    assert "workers is auto, a number of processes or toy, not 'cloud'" in said
    assert "workers toy (threads of the coordinator), workers toy 3" in said
    with pytest.raises(ScenarioError, match="not 'toy'"):
        _load("workers toy", fleets={})


def test_the_plan_says_the_named_fleets_own_words(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(registry.NAMED, "toy", TOY)
    sc = _load("workers toy 3")
    assert "  workers:  toy: 3 thread(s) (on worker loss: fail)" in describe(sc, plan(sc)).splitlines()


def test_the_registry_picks_this_machines_fleet_by_the_workers_count() -> None:
    assert registry.pick(None, 1, isolate_users=False) is registry.LOCAL
    assert registry.pick(None, 1, isolate_users=True) is registry.PROCESS
    assert registry.pick(None, 4, isolate_users=False) is registry.PROCESS
    assert registry.pick("ray", 0, isolate_users=False).name == "ray"
    assert all(k.named and k.usage for k in registry.NAMED.values())
    assert not dataclasses.replace(registry.LOCAL).named
