"""Watching the target while users run: a lost server, users the server refuses, a scenario that
cannot run as written. Reads the fleet's health once a tick; says why the run must stop, or None."""

from __future__ import annotations

from collections.abc import Callable

from bench_dsl.core.clock import MONOTONIC, Clock
from bench_dsl.engine.stopping import StopReason
from bench_dsl.fleet.base import Health, WorkerFailed

TARGET_TIMEOUT = 10.0  # seconds without a connection before the target counts as lost
# seconds in which neither any user's transaction nor a ping on bench-dsl's own connection was
# answered: the server is hung (stopped, frozen, cut off without a reset), and what the users
# measured in that time is not a measurement of it
SILENCE_LIMIT = 10.0
# seconds some users may fail to connect while the others run before the run stops: a step with
# fewer users than planned is not the step that was asked for (e.g. max_connections reached)
CONNECT_GRACE = 5.0


class TargetWatch:
    def __init__(self, scrub: Callable[[str], str], server_alive: Callable[[], bool] | None,
                 clock: Clock = MONOTONIC) -> None:
        self.scrub = scrub
        self.clock = clock  # the run's: how long users have been refused is timed on it
        self.server_alive = server_alive  # the throwaway server's process, when there is one
        self._refused_since: float | None = None  # since when some users could not connect
        # seconds the server has answered nothing on bench-dsl's own connection (ServerCounters.ping)
        self.silent_s: Callable[[], float] = lambda: 0.0

    def check(self, health: Health, asked: int, step: int | None, at_s: float, ending: bool,
              hold_end: bool = False) -> StopReason | None:
        """`ending`: the last tick of a measured phase, whose users must all have run for it to count;
        `hold_end`: of a hold, whose users must all have had a connection (a ramp's are still arriving).
        Raises WorkerFailed when a user failed in bench-dsl's own code (not the server's)."""
        now = self.clock.now()
        # users that cannot connect: some while others run (the step is not the one asked for), or all
        if not health.refused:
            self._refused_since = None
        elif self._refused_since is None:
            self._refused_since = now
        refused_long = self._refused_since is not None and (ending or now - self._refused_since >= CONNECT_GRACE)
        if health.elsewhere is not None:  # first: nothing a user measured there is of this server
            return StopReason("target_failed", message=self.scrub(health.elsewhere),
                              said=self.scrub(f"a user reached another server: {health.elsewhere}"))
        if self.server_alive is not None and not self.server_alive():
            return self._lost("the throwaway server process exited")
        if health.connect_failures and health.idle_s > TARGET_TIMEOUT:
            msg = next(iter(health.error_messages.values()), "no connection")
            return self._lost(f"no connection to the server for {TARGET_TIMEOUT:g}s: {msg}", health)
        if health.idle_s > SILENCE_LIMIT and self.silent_s() > SILENCE_LIMIT:
            return self._lost(f"the server answered nothing for {health.idle_s:.0f}s (no user's transaction, "
                              "no ping on bench-dsl's own connection): it is hung or cut off")
        if refused_long and health.connected == 0:
            code, message = health.connect_error or (0, "unknown error")
            return self._lost(f"no user could connect ({code}) {message}", health)
        if refused_long:
            return self._refused(health, asked, step, at_s)
        if health.no_thread is not None:  # before "not connected": the users that could not start never will
            return StopReason("client_limit", condition="client limit", users=asked, connected=health.connected,
                              step=step, at_s=round(at_s, 3), message=health.no_thread,
                              said=f"the client machine could not start more users ({health.connected} of {asked} "
                                   f"connected): a user's thread could not start: {health.no_thread}")
        if hold_end and health.never_connected:
            # none refused, yet some never had a connection: still starting when the step was to be
            # judged (thousands of users starting on a busy client); the step is not the one asked
            # for. (A user reconnecting after a reset has run in the step, and does not count here.)
            short = health.never_connected
            return StopReason("users_not_connected", condition="users not connected", users=asked,
                              connected=health.connected, step=step, at_s=round(at_s, 3),
                              message=f"{short} of {asked} users had no connection yet at the step's end",
                              said=f"{short} of {asked} users had no connection yet at the end of step {step}: "
                                   "the step is not the one asked for (a longer settle gives them time)")
        if health.fatal is not None:
            code, msg, tx = health.fatal
            if code == -1:  # not a MySQL error: the workload's code or bench-dsl's failed
                raise WorkerFailed(f"a virtual user failed running {tx}: {msg}")
            return StopReason("scenario_error", code=code, message=self.scrub(msg), transaction=tx,
                              said=self.scrub(f"transaction {tx} failed with error {code}: {msg}; "
                                              "the scenario cannot run as written"))
        return None

    def _lost(self, why: str, health: Health | None = None) -> StopReason:
        # the code: what the server said to the last attempt to connect
        code = health.connect_error[0] if health is not None and health.connect_error is not None else None
        return StopReason("target_failed", message=self.scrub(why), code=code, said=self.scrub(f"target lost: {why}"))

    def _refused(self, health: Health, asked: int, step: int | None, at_s: float) -> StopReason:
        """The server would not take all the users planned (max_connections, max_user_connections,
        a full accept queue): the step at hand is not the one asked for, so the run ends there,
        and the last complete step is the saturation point, as when a stop condition fires."""
        code, message = health.connect_error or (0, "unknown error")
        return StopReason("connections_refused", condition="connections refused", code=code,
                          message=self.scrub(f"({code}) {message}"), users=asked, connected=health.connected,
                          step=step, at_s=round(at_s, 3),
                          said=self.scrub(f"the server refused connections: {asked - health.connected} of {asked} "
                                          f"users could not connect: ({code}) {message}"))
