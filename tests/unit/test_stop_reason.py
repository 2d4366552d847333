"""The stop reason as a type: its JSON is the result's "stop" object, key for key, for every kind
the schema names; a result's "stop" reads back as the same reason; the status and exit code each
kind gives the run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench_dsl.core.errors import ExitCode
from bench_dsl.engine import events as ev
from bench_dsl.engine.stopping import CLIMB_ENDERS, KINDS, StopReason

SCHEMA = Path(__file__).resolve().parents[2] / "bench_dsl/results/schema/result-v1.json"

VERDICT = {"condition": "p99 > 10ms", "resolved": "p99 > 10ms", "kind": "threshold", "metric": "p99",
           "fired": True, "value": 12.5, "limit": 10.0, "unit": "ms", "previous": None, "window_s": None}

# each kind as the engine makes it, and the JSON the result held for it before the type existed
EXAMPLES = [
    (StopReason.condition_fired(VERDICT, 3, 64, 30.12345, "stop condition fired: p99 > 10ms"),
     {"reason": "stop_condition", **VERDICT, "step": 3, "users": 64, "at_s": 30.123}),
    (StopReason("connections_refused", condition="connections refused", code=1040, message="(1040) Too many",
                users=200, connected=151, step=4, at_s=41.0),
     {"reason": "connections_refused", "condition": "connections refused", "code": 1040, "message": "(1040) Too many",
      "users": 200, "connected": 151, "step": 4, "at_s": 41.0}),
    (StopReason("users_not_connected", condition="users not connected", users=64, connected=60, step=2, at_s=9.5,
                message="4 of 64 users had no connection yet at the step's end"),
     {"reason": "users_not_connected", "condition": "users not connected", "users": 64, "connected": 60, "step": 2,
      "at_s": 9.5, "message": "4 of 64 users had no connection yet at the step's end"}),
    (StopReason("client_limit", condition="client limit", users=512, connected=282, step=3, at_s=8.8,
                message="can't start new thread (kernel.pid_max 32768, its cgroup's pids.max 300 (300 in use))"),
     {"reason": "client_limit", "condition": "client limit", "users": 512, "connected": 282, "step": 3, "at_s": 8.8,
      "message": "can't start new thread (kernel.pid_max 32768, its cgroup's pids.max 300 (300 in use))"}),
    (StopReason("scenario_error", message="Table 'x' doesn't exist"),
     {"reason": "scenario_error", "code": None, "message": "Table 'x' doesn't exist", "transaction": None}),
    (StopReason("target_failed", message="target lost", code=2013),
     {"reason": "target_failed", "message": "target lost", "code": 2013}),
    (StopReason("target_failed", message="the throwaway server process exited"),
     {"reason": "target_failed", "message": "the throwaway server process exited"}),
    (StopReason("interrupted", signal="SIGTERM"), {"reason": "interrupted", "signal": "SIGTERM"}),
    (StopReason("worker_failed", message="boom"), {"reason": "worker_failed", "message": "boom"}),
    (StopReason("internal_error", message="KeyError: 'x'"), {"reason": "internal_error", "message": "KeyError: 'x'"}),
]


def test_every_kind_the_schema_names_is_a_kind_of_stop() -> None:
    schema = json.loads(SCHEMA.read_text())
    assert set(KINDS) == set(schema["properties"]["stop"]["properties"]["reason"]["enum"])
    assert {r.kind for r, _ in EXAMPLES} == set(KINDS)


@pytest.mark.parametrize(("reason", "expected"), EXAMPLES, ids=[r.kind for r, _ in EXAMPLES])
def test_the_json_is_the_results_stop_and_reads_back(reason: StopReason, expected: dict[str, object]) -> None:
    out = reason.to_json()
    said = out.pop("said", None)
    assert out == expected
    assert said == reason.said
    assert StopReason.from_json(reason.to_json()) == reason
    # through an event stream too
    assert ev.from_json(ev.Fired(reason).to_json()) == ev.Fired(reason)


def test_a_reason_read_from_a_file_keeps_only_well_typed_fields() -> None:
    got = StopReason.from_json({"reason": "stop_condition", "condition": 5, "value": "high", "step": True,
                                "users": 8, "at_s": 3})
    assert got == StopReason("stop_condition", users=8, at_s=3)
    assert StopReason.from_json(None) is None and StopReason.from_json({"reason": None}) is None


@pytest.mark.parametrize(("reason", "status", "code"), [
    (StopReason("stop_condition"), "completed", None),
    (StopReason("connections_refused"), "completed", None),
    (StopReason("users_not_connected"), "completed", None),
    (StopReason("client_limit"), "completed", None),
    (StopReason("interrupted", signal="SIGINT"), "interrupted", ExitCode.INTERRUPTED),
    (StopReason("interrupted", signal="user"), "interrupted", ExitCode.INTERRUPTED),
    (StopReason("interrupted", signal="SIGTERM"), "interrupted", ExitCode.TERMINATED),
    (StopReason("interrupted", signal="SIGHUP"), "interrupted", ExitCode.HANGUP),
    (StopReason("target_failed"), "target_failed", ExitCode.TARGET_FAILED),
    (StopReason("scenario_error"), "scenario_error", ExitCode.BAD_SCENARIO),
    (StopReason("worker_failed"), "failed", ExitCode.FAILURE),
    (StopReason("internal_error"), "failed", ExitCode.FAILURE),
])
def test_each_kind_gives_the_run_its_status_and_exit_code(reason: StopReason, status: str, code: ExitCode | None) -> None:
    assert reason.status == status
    assert reason.exit_code == code
    assert reason.ends_climb == (reason.kind in CLIMB_ENDERS)
    assert reason.level == ("warning" if reason.ends_climb else "error")
