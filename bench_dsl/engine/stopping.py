"""Why a run stops: the reason as a type (StopReason), and the one holder of it (Stop).

A StopReason is made where the run learns it must stop (a fired condition: the tally; a lost or
refusing server: the target's watch; a signal or a front end: the run; data that cannot load: the
stage; a failure) and read, typed, by the judge, the exit status and every display. Its JSON is
the result's "stop" object, the same keys for each kind as the result schema has always had; a
reader of a result file gets the type back with StopReason.from_json.

Stop holds the run's reason, shared by what may stop it and read by the scheduler at each tick, so
that none of them calls into another to ask."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Literal

from bench_dsl.core.errors import ExitCode
from bench_dsl.core.json_object import Json

StopKind = Literal["stop_condition", "connections_refused", "users_not_connected", "client_limit", "interrupted",
                   "target_failed", "scenario_error", "worker_failed", "internal_error"]
KINDS: tuple[StopKind, ...] = ("stop_condition", "connections_refused", "users_not_connected", "client_limit",
                               "interrupted", "target_failed", "scenario_error", "worker_failed", "internal_error")
# what ends the climb as a fired condition does: the step at hand is not the one asked for, so the
# last complete step is the saturation point (client_limit: the client machine could not start
# more users, so that point is bench-dsl's limit, saturation.limited_by = "client")
CLIMB_ENDERS: tuple[StopKind, ...] = ("stop_condition", "connections_refused", "users_not_connected", "client_limit")

# the keys each kind's JSON always holds (null when not known), in the order the result writes them;
# any other field is written when it has a value
_KEYS: dict[str, tuple[str, ...]] = {
    "stop_condition": ("condition", "kind", "metric", "fired", "value", "limit", "unit", "previous", "window_s",
                       "step", "users", "at_s"),
    "connections_refused": ("condition", "code", "message", "users", "connected", "step", "at_s"),
    "users_not_connected": ("condition", "users", "connected", "step", "at_s", "message"),
    "client_limit": ("condition", "users", "connected", "step", "at_s", "message"),
    "scenario_error": ("code", "message", "transaction"),
    "target_failed": ("message",),
    "interrupted": ("signal",),
    "worker_failed": ("message",),
    "internal_error": ("message",),
}
# the JSON's key for a field whose name differs ("kind" in JSON is the condition's kind: a field
# of a stop condition's verdict, while the reason's own kind is "reason")
_JSON_NAME = {"kind": "reason", "condition_kind": "kind"}
_FIELD_NAME = {v: k for k, v in _JSON_NAME.items()}


@dataclass(frozen=True, slots=True)
class StopReason:
    """Why the run stopped. `kind` is the result's "stop.reason"."""
    kind: str
    message: str | None = None  # what went wrong, in the server's or the system's words (secrets scrubbed)
    # the condition that ended the climb: a stop condition's text, "connections refused", ...
    condition: str | None = None
    # a stop condition's verdict: its text with values resolved, its kind (threshold | plateau | kink),
    # metric, the value judged and its limit (in the condition's unit), the step before's value
    resolved: str | None = None
    condition_kind: str | None = None
    metric: str | None = None
    fired: bool | None = None
    value: float | None = None
    limit: float | None = None
    unit: str | None = None
    previous: float | None = None
    window_s: float | None = None
    step: int | None = None  # where the run stood: the step, its users, the seconds since the start
    users: int | None = None
    connected: int | None = None  # of the users, those that had a connection
    at_s: float | None = None
    code: int | None = None  # the server's error code (None: not the server's)
    transaction: str | None = None  # the transaction that could not run as written
    signal: str | None = None  # interrupted: SIGINT, SIGTERM, SIGHUP, or "user" (a front end's stop key)
    # the line the run's log said it in (a warning when it ends the climb, else an error): a replay
    # puts the stop among the warnings where that line is
    said: str | None = None

    @classmethod
    def condition_fired(cls, verdict: Json, step: int | None, users: int | None, at_s: float,
                        said: str) -> StopReason:
        """A stop condition fired: its verdict (judge.Verdict.to_json) where the run stood."""
        fields = {_FIELD_NAME.get(k, k): v for k, v in verdict.items() if k in (*_KEYS["stop_condition"], "resolved")}
        return cls("stop_condition", step=step, users=users, at_s=round(at_s, 3), said=said, **fields)

    @property
    def ends_climb(self) -> bool:
        return self.kind in CLIMB_ENDERS

    @property
    def ended_by(self) -> str:
        """What ended the climb, in the saturation point's reason (a kind of CLIMB_ENDERS)."""
        match self.kind:
            case "connections_refused":
                return (f"the server refused connections at {self.users} users, {self.connected} connected: "
                        f"{self.message}")
            case "users_not_connected":
                return f"only {self.connected} of {self.users} users had a connection at the end of the step"
            case "client_limit":
                return f"the client machine could not start more users at {self.users}"
        return str(self.condition)

    @property
    def level(self) -> str:
        """How the log says it: a stop that ends the climb is a warning (the run completed), else an error."""
        return "warning" if self.ends_climb else "error"

    @property
    def status(self) -> str:
        """The run's status this reason gives it (a run that ran its plan is "completed" too)."""
        return {"interrupted": "interrupted", "target_failed": "target_failed", "scenario_error": "scenario_error",
                "worker_failed": "failed", "internal_error": "failed"}.get(self.kind, "completed")

    @property
    def exit_code(self) -> ExitCode | None:
        """The exit status this reason calls for; None: the run's own (0, or 3 for a failed expect)."""
        match self.kind:
            case "interrupted":
                return {"SIGTERM": ExitCode.TERMINATED, "SIGHUP": ExitCode.HANGUP}.get(self.signal or "",
                                                                                       ExitCode.INTERRUPTED)
            case "target_failed":
                return ExitCode.TARGET_FAILED
            case "scenario_error":
                return ExitCode.BAD_SCENARIO
            case "worker_failed" | "internal_error":
                return ExitCode.FAILURE
        return None

    def to_json(self) -> Json:
        out: Json = {"reason": self.kind}
        always = _KEYS.get(self.kind, ())
        for name in always:
            out[name] = getattr(self, _FIELD_NAME.get(name, name))
        for f in dataclasses.fields(self):
            key = _JSON_NAME.get(f.name, f.name)
            if key not in out and (v := getattr(self, f.name)) is not None:
                out[key] = v
        return out

    @classmethod
    def from_json(cls, d: Json | None) -> StopReason | None:
        """A result's "stop" as the type (None: the run was not stopped). Fields the result does not
        hold stay None; a field of another type than the one it should be is read as not held."""
        if not d or not isinstance(d.get("reason"), str):
            return None
        types = {"message": str, "condition": str, "resolved": str, "condition_kind": str, "metric": str,
                 "fired": bool, "unit": str, "transaction": str, "signal": str, "said": str,
                 "step": int, "users": int, "connected": int, "code": int}
        fields: Json = {}
        for f in dataclasses.fields(cls):
            if f.name == "kind":
                continue
            v = d.get(_JSON_NAME.get(f.name, f.name))
            want = types.get(f.name)
            ok = (isinstance(v, want) and not (want is int and isinstance(v, bool))) if want is not None else (
                isinstance(v, int | float) and not isinstance(v, bool))
            if ok:
                fields[f.name] = v
        return cls(d["reason"], **fields)


class Stop:
    def __init__(self) -> None:
        self.reason: StopReason | None = None  # None while the run goes on

    def stopping(self) -> bool:
        return self.reason is not None
