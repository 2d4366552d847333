"""The coordinator's side of the worker protocol (bench_dsl.fleet.worker), whatever carries its
messages: how users and a rate are shared over the workers, how their reports are gathered and
merged, what a lost worker does to a collect, and how they are stopped. A fleet of workers
(process.py: pipes to processes on this machine; ray.py: calls to actors on a Ray cluster) adds
one primitive, `_send`, and how its workers start and end."""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable
from typing import Any

from bench_dsl.core import priority
from bench_dsl.core.cluster_info import ClusterInfo
from bench_dsl.core.dsn import Dsn
from bench_dsl.fleet.base import Health, WorkerFailed, WorkerReport, capacity_pct, late_figures, own_figures
from bench_dsl.language.model import Scenario
from bench_dsl.measure.arrivals import ArrivalStats
from bench_dsl.measure.cpu import OwnCpu

REPLY_TIMEOUT = 10.0  # a worker that does not answer a report in this time is stuck or dead, unless alive (_alive)


def rate_shares(rate: float, queue: int, users: list[int]) -> list[tuple[float, int, float]]:
    """Each worker's (rate, queue, offset) for `users` users each. A share of the rate as large as
    its share of the users, so that every user of the pool serves the same rate and a worker with
    fewer users does not drop sooner (users max 5 on 2 workers: 3 and 2 users, 3/5 and 2/5 of the
    rate); its timeline offset by where its share starts among them, so that equal shares (the
    usual split) merge into evenly spaced arrivals. The queue is shared the same way, rounded up:
    a worker with users never has none."""
    total = sum(users)
    return [(rate * u / total, math.ceil(queue * u / total), sum(users[:i]) / total) for i, u in enumerate(users)]


def due_between(rate: float, offset: float, a: float, b: float) -> int:
    """How many arrivals of a timeline at `rate` per second, on the grid of its gap shifted by
    `offset` gaps (as a schedule starts one: bench_dsl.fleet.pacing.AsyncSchedule.set), fall due in
    (a, b], monotonic seconds. Pieces of a span add up to the span's count: none is counted twice."""
    if rate <= 0 or b <= a:
        return 0
    return max(0, math.floor(b * rate - offset) - math.floor(a * rate - offset))


class WorkerHandle:
    """The coordinator's view of one worker: its number, the users it said it runs, whether it is
    gone (and why, once it was dropped)."""

    def __init__(self, index: int) -> None:
        self.index = index
        self.active = 0
        self.dead = False
        self.lost: str | None = None  # why, once a collect found it gone
        # its share of an open-loop rate (arrivals per second, the offset of its timeline), and where
        # its counts end (monotonic s: its last report's take): a lost worker's share goes on falling
        # due from there, with no user to start it, until the rate is shared over the workers left
        self.rate = 0.0
        self.offset = 0.0
        self.taken: float | None = None
        self.waiting = 0  # its arrivals offered and not yet started at its last report: dropped if it is lost
        # a report asked for and not answered within REPLY_TIMEOUT by a worker still alive: the next
        # collect waits for that answer rather than asking again (when it was asked: its wait)
        self.report: asyncio.Future[dict[str, Any]] | None = None
        self.asked = 0.0

    @property
    def name(self) -> str:
        """As its report names it: "worker 1" ..."""
        return f"worker {self.index + 1}"


class WorkerFleet:
    """Users spread over workers that answer the protocol's messages. Subclasses start the workers
    (`start`), carry a message (`_send`), say which worker a message went to (`_label`) and end
    them (`_end`)."""

    kind = "process"

    def __init__(self, sc: Scenario, dsn: Dsn, names: tuple[str, ...], count: int,
                 log: Callable[[str, str], None]) -> None:
        if sc.seed is None:  # each user's seed comes from the run's: a run draws it first (Scenario.seeded)
            raise ValueError("a fleet needs the run's seed")
        self.sc = sc
        self.dsn = dsn
        self.names = names
        self.count = count
        self._users = 0  # the users asked for last (resize): a rate is shared as they are
        self.log = log
        self.procs: list[Any] = []  # WorkerHandles (a subclass's): those still in the run
        self.gone: list[Any] = []  # those dropped after a loss (on worker loss continue)
        self._next_id = 0
        self._last_health = Health(0, 0.0, None, {})
        self.cpu = OwnCpu()  # the coordinator's own: merging the reports, the screen, the sinks
        self.started: list[tuple[int, float]] = []  # (users, seconds until all of them were connected), per resize
        # arrivals due on lost workers' timelines between a collect and the rate's regroup: the next
        # collect's (offered and dropped)
        self._orphaned = 0

    # what a kind of fleet adds -----------------------------------------------------------------
    def _send(self, p: Any, msg: dict[str, Any]) -> asyncio.Future[dict[str, Any]]:
        """Sends `msg` (with its `id`) to `p`: its answer, or WorkerFailed when `p` is gone."""
        raise NotImplementedError

    def _label(self, p: Any) -> str:
        """The worker as an error message names it."""
        return f"worker process {p.index}"

    async def _end(self) -> None:
        """After the stop's answers (or their timeout): the workers gone, whatever state they are in."""

    async def reach(self) -> None:
        """Where the workers will run, before the data is loaded (a cluster's kind joins it here)."""

    async def _alive(self, p: Any) -> bool:
        """Whether `p`, silent past REPLY_TIMEOUT, is still at work (starved of CPU, not gone or stuck):
        its report is then late, not lost. No by default: the deadline stands."""
        return False

    # the protocol ------------------------------------------------------------------------------
    @property
    def active(self) -> int:
        return sum(p.active for p in self.procs)

    @property
    def workers(self) -> int:
        return self.count - len(self.gone)

    def capacity_pct(self) -> float:
        return capacity_pct(self.count)

    def cluster(self) -> ClusterInfo | None:
        return None

    def _next(self, msg: dict[str, Any]) -> dict[str, Any]:
        self._next_id += 1
        msg["id"] = self._next_id
        return msg

    def _answered(self, p: Any, reply: dict[str, Any]) -> dict[str, Any]:
        if "active" in reply:
            p.active = int(reply["active"])
        return reply

    async def _ask(self, p: Any, msg: dict[str, Any], timeout: float | None = REPLY_TIMEOUT) -> dict[str, Any]:
        try:
            return await asyncio.wait_for(self._send(p, msg), timeout)
        except TimeoutError:
            raise WorkerFailed(f"{self._label(p)} did not answer {msg['op']!r} in {timeout:g}s") from None

    def _forget(self, fut: asyncio.Future[dict[str, Any]]) -> None:
        fut.add_done_callback(lambda f: f.cancelled() or f.exception())

    def share(self, n: int) -> list[int]:
        """n users over the workers, as evenly as possible (the first ones take the remainder)."""
        base, extra = divmod(n, self.workers)
        return [base + (1 if i < extra else 0) for i in range(self.workers)]

    async def resize(self, n: int, wait: bool = True) -> None:
        self._users = n
        # waited for: the new users of every worker are held until all of them are ready (UserPool.resize),
        # so that no worker's running users slow another's connecting ones
        futs = [self._send(p, {"op": "users", "n": k, "wait": wait, "hold": wait})
                for p, k in zip(self.procs, self.share(n), strict=True)]
        if wait:
            t0 = time.monotonic()
            try:
                await asyncio.wait_for(asyncio.gather(*futs), 90)
                if not self.started or self.started[-1][0] != n:  # a hold after its settle asks the same
                    self.started.append((n, round(time.monotonic() - t0, 3)))
            except TimeoutError:
                raise WorkerFailed(f"the workers did not start {n} users in 90s") from None
            finally:
                for p in self.procs:  # the answer says nothing: later messages come after it anyway
                    self._forget(self._send(p, {"op": "go"}))
        else:
            for f in futs:  # the answer only updates `active`; a failure shows at the next collect
                self._forget(f)

    async def pace(self, rate: float, poisson: bool, queue: int) -> None:
        n = self.workers
        users = self.share(self._users) if self._users >= n else [1] * n
        now = time.monotonic()
        for p in self.gone:  # the rate is shared over the workers left from now: the lost ones' timelines end
            self._orphaned += self._orphans(p, now)
            p.rate = 0.0
        shares = rate_shares(rate, queue, users)
        for p, (r, _, o) in zip(self.procs, shares, strict=True):
            p.rate, p.offset = r, o
            if p.taken is None:
                p.taken = now
        futs = [self._send(p, {"op": "pace", "rate": r, "poisson": poisson, "queue": q, "offset": o})
                for p, (r, q, o) in zip(self.procs, shares, strict=True)]
        _, pending = await asyncio.wait(futs, timeout=REPLY_TIMEOUT)
        for p, fut in zip(self.procs, futs, strict=True):
            # a starved worker takes the rate late: its messages keep their order
            if fut in pending and not await self._alive(p):
                raise WorkerFailed(f"the workers did not take a new rate in {REPLY_TIMEOUT:g}s")
            self._forget(fut)
        await asyncio.gather(*(f for f in futs if f not in pending))  # a lost worker's error

    def _merge(self, replies: list[dict[str, Any]], orphaned: ArrivalStats | None = None) -> WorkerReport:
        """The workers' reports and the coordinator's own figures (it runs no users: no lag);
        `orphaned`: what lost workers' arrivals became (_orphaned_upto)."""
        mine = WorkerReport({}, Health(0, float("inf"), None, {}), 0, [], {"coordinator": own_figures(self.cpu, {})})
        mine.arrivals = orphaned
        report = WorkerReport.merge_wire(replies, self.names, mine)
        self._last_health = report.health
        return report

    async def _report(self, p: Any) -> dict[str, Any] | None:
        """`p`'s report, or None when it is late: silent past REPLY_TIMEOUT but alive (a starved worker,
        issue 39), whose answer the next collect takes (it holds what was measured since its last)."""
        if p.report is None:
            p.report, p.asked = self._send(p, {"op": "report"}), time.monotonic()
        try:
            reply = await asyncio.wait_for(asyncio.shield(p.report), REPLY_TIMEOUT)
        except TimeoutError:
            if await self._alive(p):
                return None
            self._forget(p.report)
            p.report = None
            raise WorkerFailed(f"{self._label(p)} did not answer 'report' in {REPLY_TIMEOUT:g}s") from None
        except BaseException:
            p.report = None
            raise
        p.report = None
        fig = reply.get("processes", {}).get(p.name)
        if fig is not None:
            fig["report_wait_s"] = round(time.monotonic() - p.asked, 3)
        # its counts end at its take (a cluster's worker's on this clock: RayFleet._call maps them)
        p.taken = float(reply["quiet"][0][2]) if reply.get("quiet") else time.monotonic()
        p.waiting = int(reply["arrivals"]["waiting"]) if reply.get("arrivals") else 0
        return reply

    @staticmethod
    def _orphans(p: Any, upto: float) -> int:
        """The arrivals due on lost `p`'s timeline from where its counts end to `upto`, and its counts
        then end there."""
        if p.taken is None or upto <= p.taken:
            return 0
        n = due_between(p.rate, p.offset, p.taken, upto)
        p.taken = upto
        return n

    def _orphaned_upto(self, replies: list[dict[str, Any]], lost: list[Any]) -> ArrivalStats | None:
        """What lost workers' timelines left due up to where this collect's counts end (the earliest
        answer's take, where the scheduler cuts the tick), with those left at the last regroup: offered
        and dropped; and the arrivals the workers lost now held, offered before and never started:
        dropped, no longer waiting (None: nothing of the kind)."""
        takes = [float(r["quiet"][0][2]) for r in replies if r.get("quiet")]
        upto = min(takes) if takes else time.monotonic()
        due, self._orphaned = self._orphaned, 0
        due += sum(self._orphans(p, upto) for p in [*self.gone, *lost])
        held = sum(p.waiting for p in lost)
        for p in lost:  # counted once: a worker is lost once
            p.waiting = 0
        if not due and not held:
            return None
        return ArrivalStats(offered=due, dropped=due + held, waiting_start=held)

    def _late(self, late: list[Any]) -> dict[str, Any] | None:
        """A reply in place of late workers' reports: how long each has been waited for, and the
        runnable threads of this host (theirs, for a fleet on this machine)."""
        if not late:
            return None
        now = time.monotonic()
        figures = {p.name: late_figures(round(now - p.asked, 3)) for p in late}
        for p in late:
            self.log(f"{self._label(p)} has not answered 'report' for {now - p.asked:.1f}s; it is alive, short of "
                     f"CPU ({figures[p.name].runnable_threads} threads runnable): its report will come late", "warning")
        return WorkerReport({}, Health(0, float("inf"), None, {}), processes=figures).to_wire()

    async def collect(self) -> WorkerReport:
        results = await asyncio.gather(*(self._report(p) for p in self.procs), return_exceptions=True)
        late = self._late([p for p, r in zip(self.procs, results, strict=True) if r is None])
        replies = [r for r in results if isinstance(r, dict)]
        takes = list(replies)  # where the counts end: a late worker's placeholder has none
        replies += [late] if late is not None else []
        failed = [(p, r) for p, r in zip(self.procs, results, strict=True) if isinstance(r, BaseException)]
        if not failed:
            return self._merge(replies, self._orphaned_upto(takes, []))
        for p, exc in failed:
            if isinstance(exc, WorkerFailed):
                p.lost = str(exc)
        first = failed[0][1]
        if isinstance(first, WorkerFailed):
            # the others reset their counts when they answered: their interval goes with the failure,
            # with the lost workers' share of the rate, due and never started
            orphaned = self._orphaned_upto(takes, [p for p, _ in failed])
            raise WorkerFailed(str(first), partial=self._merge(replies, orphaned))
        raise first

    def lose(self) -> list[str]:
        """Drops the workers the last collect found lost, so that the run goes on with the others
        (on worker loss continue): why each was lost; [] when none was, or none would be left."""
        lost = [p for p in self.procs if p.lost is not None]
        if not lost or len(lost) == len(self.procs):
            return []
        self.procs = [p for p in self.procs if p.lost is None]
        self.gone.extend(lost)
        for p in lost:
            p.active = 0
        return [p.lost for p in lost]

    def health(self) -> Health:
        return self._last_health

    def cancel_in_flight(self) -> None:
        for p in self.procs:
            self._forget(self._send(p, {"op": "cancel"}))

    async def stop(self, grace: float = 5.0) -> WorkerReport:
        live = [p for p in self.procs if not p.dead]
        results = await asyncio.gather(*(self._ask(p, {"op": "stop", "grace": grace}, timeout=grace + 5) for p in live),
                                       return_exceptions=True)
        replies = [r for r in results if isinstance(r, dict)]
        # a late report answered before the stop: what it holds was measured too
        replies += [p.report.result() for p in live if p.report is not None and p.report.done()
                    and not p.report.cancelled() and p.report.exception() is None]
        try:
            await self._end()
        finally:
            priority.restore()  # the coordinator's threads (ProcessFleet.start, RayFleet.start)
        return self._merge(replies)
