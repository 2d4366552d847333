"""Every kind of fleet, by name (bench_dsl.fleet.kinds says what a kind declares). A new kind (workers
on a cluster) is a module implementing bench_dsl.fleet.base.Fleet, whose workers send WorkerReports,
with its FleetKind, and one line here; the language, the CLI and the engine read the kinds and never
name one. A kind's module loads its driver only when the kind builds a fleet: Ray is an extra
(bench-dsl[ray]) and takes a second to load."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bench_dsl.core import plugins
from bench_dsl.fleet import ray_kind
from bench_dsl.fleet.kinds import FleetKind, FleetSetup

if TYPE_CHECKING:
    from bench_dsl.fleet.base import Fleet


# this machine's: the users in this process, or in worker processes. Their modules load the drivers
# (asyncmy, the C executor): imported when a run builds one, never to check a scenario
def _local(s: FleetSetup) -> Fleet:
    from bench_dsl.fleet.local import LocalFleet

    return LocalFleet(s.dsn, s.workload, s.sc.seed)  # type: ignore[arg-type]


def _process(s: FleetSetup) -> Fleet:
    from bench_dsl.fleet.process import ProcessFleet

    return ProcessFleet(s.sc, s.dsn, s.workload.names, s.workers, s.log)


LOCAL = FleetKind("local", _local, modules=("bench_dsl.fleet.local",))
PROCESS = FleetKind("process", _process, modules=("bench_dsl.fleet.process", "bench_dsl.fleet.worker"))

KINDS: dict[str, FleetKind] = {k.name: k for k in (
    LOCAL,
    PROCESS,
    ray_kind.KIND,
    *plugins.contributions("FLEET_KINDS"),  # a kind from outside (bench_dsl.core.plugins)
)}

# those a scenario names (`workers NAME [N]`), in the order messages list them
NAMED: dict[str, FleetKind] = {name: k for name, k in KINDS.items() if k.named}


def pick(named: str | None, workers: int, isolate_users: bool) -> FleetKind:
    """The kind that runs a scenario's users: the one it names, else this machine's for `workers`
    processes (one runs in this process, unless the users must be kept apart from it: the live screen)."""
    if named is not None:
        return NAMED[named]
    return LOCAL if workers == 1 and not isolate_users else PROCESS


def make_fleet(kind: str, setup: FleetSetup) -> Fleet:
    return KINDS[kind].build(setup)
