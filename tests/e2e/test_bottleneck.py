"""What ran out, wired into a run (issue 41): every step carries its bottleneck (bench_dsl.attribution,
judged by bench_dsl.engine.bottleneck with what the run knows of the machines), the saturation point
carries the one of the step that ended the climb, the console says it, and the result holds it as
its schema says. Which class each provoked case must get is the attribution's own tests' matter."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench_dsl.attribution.registry import RULES
from bench_dsl.results.read import read_result

from ..conftest import ROOT, run_measured

pytestmark = pytest.mark.slow

SCENARIO = ROOT / "tests" / "fixtures" / "bottleneck" / "row-locks.bench"


# Provoked (issue 41, "Tested by provoking each class"): each case makes one resource run out for
# certain on any machine, and the verdict must name it, never another class with high confidence.

def test_one_hot_row_held_by_every_transaction_is_called_row_locks_at_each_step_and_the_saturation_point(
        dsn_url: str, tmp_path: Path) -> None:
    """Every transaction updates the one row and then sleeps 10 ms holding its lock: from 4 users
    on, all but one wait on it whatever the machine's speed. Each step carries its bottleneck, the
    saturation point the one of the step that ended the climb, the console says it, and the result
    holds it as its schema says."""
    out = tmp_path / "rl.json"
    # `tps plateau 1000%` fires at step 2 whatever the machine: from 4 users to 16, tps cannot grow 11-fold
    r, doc = run_measured("run", str(SCENARIO), "--headless", "--json", str(out), out=out)
    assert r.returncode == 0, r.stderr
    assert doc["status"] == "completed" and doc["stop"]["reason"] == "stop_condition" and doc["stop"]["step"] == 2
    classes = {rule.cls for rule in RULES} | {"unexplained"}
    for s in doc["steps"]:  # 4 and 16 users (1 user alone would wait on nothing but its own sleep)
        b = s["bottleneck"]
        assert b["class"] in classes and b["words"] and isinstance(b["ruled_out"], list)
        assert {"sessions_in_flight", "active_in_server", "outside_share"} <= set(b["profile"])
        # a reading's mean over the step, beside the one read at its end
        assert "mean" in s["server_status"]["threads_running"]
        assert b["class"] == "row_locks", (s["users"], b["words"])
        assert b["confidence"] in ("high", "medium")
        assert any(e["figure"] for e in b["evidence"])
        assert {r["class"] for r in b["ruled_out"]} >= {"server_cpu"}
    sat = doc["saturation"]
    assert sat["saturated"] and sat["users"] == 4
    assert sat["bottleneck"] == doc["steps"][-1]["bottleneck"]
    assert f"what ran out: {sat['bottleneck']['words']}" in r.stderr
    read_result(out)  # the result as its schema has it (a BadResult raises)


def test_users_the_server_refuses_are_called_connections(tmp_path: Path) -> None:
    """A throwaway server that takes 12 connections, 16 users: the climb ends on the refusal, and
    what ran out is the connections."""
    out = tmp_path / "cn.json"
    r, doc = run_measured("run", str(SCENARIO.with_name("connections.bench")), "--headless", "--json", str(out),
                          out=out)
    assert r.returncode == 0, r.stderr
    assert doc["stop"]["reason"] == "connections_refused"
    assert doc["saturation"]["bottleneck"]["class"] == "connections", doc["saturation"]["bottleneck"]["words"]
