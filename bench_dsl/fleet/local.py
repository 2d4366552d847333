"""All users on this process's event loop (the `local` fleet): no messages, no encoding. The
coordinator is then the one process that runs users: its CPU and scheduling lag are theirs."""

from __future__ import annotations

from bench_dsl.core.cluster_info import ClusterInfo
from bench_dsl.core.dsn import Dsn
from bench_dsl.fleet.base import Health, WorkerReport, capacity_pct, own_figures
from bench_dsl.fleet.users import UserPool
from bench_dsl.measure.cpu import OwnCpu
from bench_dsl.measure.recorder import Recorder
from bench_dsl.measure.schedlag import LagProbe
from bench_dsl.workloads.base import Workload


class LocalFleet:
    def __init__(self, dsn: Dsn, workload: Workload, seed: int) -> None:
        self.recorder = Recorder(workload.names)
        self.pool = UserPool(dsn, workload, self.recorder, seed)
        self._health = self.pool.health()
        self.probe = LagProbe()  # the users share this process's loop: its lag is theirs
        self.cpu = OwnCpu()

    @property
    def active(self) -> int:
        return self.pool.active

    @property
    def workers(self) -> int:
        return 1

    def capacity_pct(self) -> float:
        return capacity_pct(1)

    def cluster(self) -> ClusterInfo | None:
        return None

    def lose(self) -> list[str]:
        return []  # no worker to lose: the users run here

    async def reach(self) -> None:
        pass

    async def start(self) -> None:
        self.probe.start()

    async def resize(self, n: int, wait: bool = True) -> None:
        try:
            await self.pool.resize(n, wait, hold=wait)
        finally:
            self.pool.release()

    async def pace(self, rate: float, poisson: bool, queue: int) -> None:
        self.pool.pace(rate, poisson, queue, 0.0)

    def _report(self) -> WorkerReport:
        stats = self.recorder.swap()
        self._health = self.pool.health(sum(st.count for st in stats.values()))
        return WorkerReport(stats, self._health, self.pool.active, [self.recorder.quiet()],
                            {"coordinator": own_figures(self.cpu, self.probe.take())}, self.pool.arrivals())

    async def collect(self) -> WorkerReport:
        return self._report()

    def health(self) -> Health:
        return self._health

    def cancel_in_flight(self) -> None:
        self.pool.cancel_in_flight()

    async def stop(self, grace: float = 5.0) -> WorkerReport:
        self.probe.stop()
        await self.pool.stop_all(grace)
        return self._report()
