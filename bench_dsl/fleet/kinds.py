"""What a kind of fleet declares of itself, once, in its own module (bench_dsl.fleet.registry lists
them): its name, how it is built, and, for a fleet a scenario names (`workers NAME [N]`), how it is
written, what it refuses before a run starts, its command-line options and its line in the plan.
The language, the CLI, the engine and the plan read these; none of them names a fleet."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # a kind is read to check a scenario, which loads neither the fleets nor the drivers
    from bench_dsl.core.dsn import Dsn
    from bench_dsl.fleet.base import Fleet
    from bench_dsl.language.model import Scenario
    from bench_dsl.workloads.base import Workload


@dataclass(frozen=True, slots=True)
class FleetSetup:
    """What any fleet is built from."""

    sc: Scenario  # seeded: each user's seed comes from the run's
    dsn: Dsn
    workload: Workload  # built, for a fleet that runs users in this process; others build their own
    workers: int  # processes that run users (a named fleet's: as asked, 0 for as many as it offers)
    log: Callable[[str, str], None]  # (message, level)
    max_users: int = 1  # the most users the plan runs: a cluster places no more workers than that
    options: Mapping[str, str] = field(default_factory=dict)  # the fleet's own options given (FleetOption.key)


@dataclass(frozen=True, slots=True)
class FleetOption:
    """A command-line option of a named fleet's own (`bench run --ray-address HOST:PORT`): given, it
    reaches the fleet as FleetSetup.options[key]."""

    flag: str
    key: str
    metavar: str
    help: str


def _no_problem(targeted: bool) -> tuple[str, str] | None:
    return None


def _count(workers: int | None) -> str:
    return f"{workers} worker(s)" if workers else "as many workers as it offers"


@dataclass(frozen=True, slots=True)
class FleetKind:
    name: str
    build: Callable[[FleetSetup], Fleet]
    # picked by name in a scenario (`workers NAME [N]`, `--workers NAME[:N]`); the others, this
    # machine's, are picked by the number of workers (bench_dsl.fleet.registry.pick)
    named: bool = False
    usage: str = ""  # how `workers` names it, in a hint: "workers ray (a Ray cluster's CPUs), workers ray 8"
    # why it cannot run users now, (message, hint), or None; targeted: the scenario has a server to run against
    problem: Callable[[bool], tuple[str, str] | None] = _no_problem
    options: tuple[FleetOption, ...] = ()
    planned: Callable[[int | None], str] = _count  # `bench check --plan`'s words for N workers
    # the modules that make it (`build` imports them when a run asks): what no floor may import by
    # name (pyproject.toml's "never by name" contract; tests/unit/test_seams.py holds it to these)
    modules: tuple[str, ...] = ()
