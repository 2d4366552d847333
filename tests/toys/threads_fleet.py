"""A toy fleet: `workers threads`, every user on a thread of the coordinator's own process (the C
executor's; asyncmy's coroutines where it is not built). Its registry line is FLEET_KINDS."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bench_dsl.fleet.kinds import FleetKind, FleetSetup

if TYPE_CHECKING:
    from bench_dsl.fleet.base import Fleet


def _build(s: FleetSetup) -> Fleet:
    from bench_dsl.fleet.local import LocalFleet  # a driver: loaded when a run builds the fleet

    return LocalFleet(s.dsn, s.workload, s.sc.seed)  # type: ignore[arg-type]


FLEET_KINDS = (FleetKind("threads", _build, named=True, usage="workers threads (the coordinator's threads)",
                         planned=lambda n: "the users on threads of the coordinator's process",
                         modules=("tests.toys.threads_fleet",)),)
