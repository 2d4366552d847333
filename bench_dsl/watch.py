"""Watching the target while users run: a lost server, users the server refuses, a scenario that
cannot run as written. Reads the fleet's health once a tick; says why the run must stop, or None."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bench_dsl.fleet import WorkerFailed
from bench_dsl.users import Health

TARGET_TIMEOUT = 10.0  # seconds without a connection before the target counts as lost
# seconds some users may fail to connect while the others run before the run stops: a step with
# fewer users than planned is not the step that was asked for (e.g. max_connections reached)
CONNECT_GRACE = 5.0


@dataclass(frozen=True, slots=True)
class Stop:
    """Why the run stops, for the result's "stop", with the line the log gets."""
    reason: dict[str, Any]
    message: str
    level: str  # warning | error
    fired: bool  # ends the climb as a stop condition does (connections refused)


class TargetWatch:
    def __init__(self, scrub: Callable[[str], str], server_alive: Callable[[], bool] | None) -> None:
        self.scrub = scrub
        self.server_alive = server_alive  # the throwaway server's process, when there is one
        self._refused_since: float | None = None  # since when some users could not connect

    def check(self, health: Health, asked: int, step: int | None, at_s: float, ending: bool) -> Stop | None:
        """`ending`: the last tick of a measured phase, whose users must all have run for it to count.
        Raises WorkerFailed when a user failed in bench-dsl's own code (not the server's)."""
        now = time.monotonic()
        # some users cannot connect while others run (none running: the target is lost, below)
        if not (health.refused and health.connected):
            self._refused_since = None
        elif self._refused_since is None:
            self._refused_since = now
        if self.server_alive is not None and not self.server_alive():
            return self._lost("the throwaway server process exited")
        if health.connect_failures and health.idle_s > TARGET_TIMEOUT:
            msg = next(iter(health.error_messages.values()), "no connection")
            return self._lost(f"no connection to the server for {TARGET_TIMEOUT:g}s: {msg}")
        if self._refused_since is not None and (ending or now - self._refused_since >= CONNECT_GRACE):
            return self._refused(health, asked, step, at_s)
        if health.fatal is not None:
            code, msg, tx = health.fatal
            if code == -1:  # not a MySQL error: the workload's code or bench-dsl's failed
                raise WorkerFailed(f"a virtual user failed running {tx}: {msg}")
            return Stop({"reason": "scenario_error", "code": code, "message": self.scrub(msg), "transaction": tx},
                        f"transaction {tx} failed with error {code}: {msg}; the scenario cannot run as written",
                        "error", False)
        return None

    def _lost(self, why: str) -> Stop:
        return Stop({"reason": "target_failed", "message": self.scrub(why)}, f"target lost: {why}", "error", False)

    def _refused(self, health: Health, asked: int, step: int | None, at_s: float) -> Stop:
        """The server would not take all the users planned (max_connections, max_user_connections,
        a full accept queue): the step at hand is not the one asked for, so the run ends there,
        and the last complete step is the saturation point, as when a stop condition fires."""
        code, message = health.connect_error or (0, "unknown error")
        reason = {"reason": "connections_refused", "condition": "connections refused",
                  "code": code, "message": self.scrub(f"({code}) {message}"), "users": asked,
                  "connected": health.connected, "step": step, "at_s": round(at_s, 3)}
        return Stop(reason, f"the server refused connections: {asked - health.connected} of {asked} users could "
                            f"not connect: ({code}) {message}", "warning", True)
