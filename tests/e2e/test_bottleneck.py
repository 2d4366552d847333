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

SCENARIO = ROOT / "tests" / "fixtures" / "bottleneck" / "hot-rows.bench"


def test_each_step_and_the_saturation_point_say_what_ran_out(dsn_url: str, tmp_path: Path) -> None:
    out = tmp_path / "hot.json"
    # `tps plateau 1000%` fires at step 2 whatever the machine: from 1 user to 4, tps cannot grow 11-fold
    r, doc = run_measured("run", str(SCENARIO), "--headless", "--json", str(out), out=out)
    assert r.returncode == 0, r.stderr
    assert doc["status"] == "completed" and doc["stop"]["reason"] == "stop_condition" and doc["stop"]["step"] == 2
    classes = {rule.cls for rule in RULES} | {"unexplained"}
    for s in doc["steps"]:
        b = s["bottleneck"]
        assert b["class"] in classes and b["confidence"] in ("high", "medium", "low"), b
        assert b["words"] and isinstance(b["evidence"], list) and isinstance(b["ruled_out"], list)
        assert {"sessions_in_flight", "active_in_server", "outside_share"} <= set(b["profile"])
        # a reading's mean over the step, beside the one read at its end
        assert "mean" in s["server_status"]["threads_running"]
    sat = doc["saturation"]
    assert sat["saturated"] and sat["users"] == 1
    assert sat["bottleneck"] == doc["steps"][-1]["bottleneck"]
    assert f"what ran out: {sat['bottleneck']['words']}" in r.stderr
    read_result(out)  # the result as its schema has it (a BadResult raises)
