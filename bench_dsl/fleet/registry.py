"""Every kind of fleet, by name, and what one is built from. A new kind (workers on a cluster) is a
module implementing bench_dsl.fleet.base.Fleet, whose workers send WorkerReports, and one line
here; the engine picks a kind by name (bench_dsl.engine.stage) and never imports one. Apart from
base.py, which loads no driver: every kind here does. `ray` is imported only when it is used: Ray
is an extra (bench-dsl[ray]) and takes a second to load."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from bench_dsl.core.dsn import Dsn
from bench_dsl.fleet.base import Fleet
from bench_dsl.fleet.local import LocalFleet
from bench_dsl.fleet.process import ProcessFleet
from bench_dsl.language.model import Scenario
from bench_dsl.workloads.base import Workload


@dataclass(frozen=True, slots=True)
class FleetSetup:
    """What any fleet is built from."""

    sc: Scenario  # seeded: each user's seed comes from the run's
    dsn: Dsn
    workload: Workload  # built, for a fleet that runs users in this process; others build their own
    workers: int  # processes that run users (a cluster's: as asked, 0 for one per CPU it offers)
    log: Callable[[str, str], None]  # (message, level)
    max_users: int = 1  # the most users the plan runs: a cluster places no more workers than that
    address: str | None = None  # a cluster's (ray: else RAY_ADDRESS, else the node on this machine)


def _ray(s: FleetSetup) -> Fleet:
    from bench_dsl.fleet.ray import RayFleet

    return RayFleet(s.sc, s.dsn, s.workload.names, s.workers or None, s.max_users, s.address, s.log)


FLEETS: dict[str, Callable[[FleetSetup], Fleet]] = {
    "local": lambda s: LocalFleet(s.dsn, s.workload, s.sc.seed),  # type: ignore[arg-type]
    "process": lambda s: ProcessFleet(s.sc, s.dsn, s.workload.names, s.workers, s.log),
    "ray": _ray,
}


def make_fleet(kind: str, setup: FleetSetup) -> Fleet:
    return FLEETS[kind](setup)
