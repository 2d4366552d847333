"""The seams hold as seams: a load profile and a fleet are found through their registries, never by
name, and what a profile plans (its model class) or a fleet is (its class) is asked only by its own
modules: everyone else asks the model what it says of itself (open_loop, window(), point_units() ...)
or the registry, never `isinstance(x, RateLoad)`."""

from __future__ import annotations

import ast
import inspect
import tomllib
import typing
from pathlib import Path

from bench_dsl.engine.profiles.registry import PROFILES
from bench_dsl.fleet.registry import KINDS
from bench_dsl.language import model as m

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "bench_dsl"


def _module(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts)


def _registered_modules() -> set[str]:
    """Every profile's module and every fleet kind's, as the registries name them."""
    return {type(p).__module__ for p in PROFILES.values()} | {mod for k in KINDS.values() for mod in k.modules}


def test_the_never_by_name_contract_lists_every_profile_and_fleet_module() -> None:
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    never = next(c for c in contracts if "never by name" in c["name"])
    assert set(never["forbidden_modules"]) == _registered_modules()
    for mod in _registered_modules():  # each names a module that exists
        assert (ROOT / (mod.replace(".", "/") + ".py")).exists(), mod


def _owned() -> dict[str, set[str]]:
    """Each profile's model class and each fleet's class, with the modules that may ask for it: the
    one that defines it, and for a model, the profile that plans it (and the language's, which
    builds it)."""
    owners: dict[str, set[str]] = {}
    for ramp in typing.get_args(m.Ramp):
        planners = {type(p).__module__ for p in PROFILES.values() if p.kind == getattr(ramp, "kind", None)
                    or p.kind.startswith("rate_") and ramp is m.RateLoad}
        owners[ramp.__name__] = {ramp.__module__, *planners}
    for p in PROFILES.values():
        for cls in type(p).__mro__[:-1]:
            if cls.__module__.startswith("bench_dsl.engine.profiles") and cls.__name__ != "LoadProfile":
                owners.setdefault(cls.__name__, set()).add(cls.__module__)
    for kind in KINDS.values():
        for mod in kind.modules:
            tree = ast.parse((ROOT / (mod.replace(".", "/") + ".py")).read_text())
            for node in tree.body:
                if isinstance(node, ast.ClassDef) and node.name.endswith("Fleet"):
                    owners.setdefault(node.name, set()).add(mod)
    return owners


def _asked(tree: ast.AST) -> list[tuple[int, str]]:
    """Where a module asks for a class: isinstance, issubclass, or a match case's class pattern."""
    out = []
    for node in ast.walk(tree):
        classes: list[ast.expr] = []
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("isinstance",
                                                                                             "issubclass"):
            classes = list(ast.walk(node.args[1])) if len(node.args) == 2 else []
        elif isinstance(node, ast.MatchClass):
            classes = [node.cls]
        for c in classes:
            name = c.attr if isinstance(c, ast.Attribute) else c.id if isinstance(c, ast.Name) else None
            if name is not None:
                out.append((getattr(node, "lineno", 0), name))
    return out


def test_no_module_asks_for_a_profiles_or_a_fleets_class_but_its_own() -> None:
    owners = _owned()
    assert {"RateLoad", "StepRamp", "LinearRamp", "ConstantRamp", "ProcessFleet", "LocalFleet"} <= set(owners)
    found = []
    for path in PACKAGE.rglob("*.py"):
        mod = _module(path)
        for line, name in _asked(ast.parse(path.read_text())):
            if name in owners and mod not in owners[name]:
                found.append(f"{path.relative_to(ROOT)}:{line}: {name}")
    assert found == [], "ask the model or the registry instead"


def test_every_load_model_says_what_the_language_asks_of_it() -> None:
    """The interface the checks of conditions and configurations use in place of a type check."""
    for ramp in typing.get_args(m.Ramp):
        for member in ("open_loop", "steps_compared", "window", "seconds", "point_units", "kind"):
            assert hasattr(ramp, member) or member in inspect.signature(ramp).parameters, (ramp.__name__, member)
