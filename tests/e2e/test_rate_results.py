"""Rate results read back: summary.json, `bench compare` and the report put the offered rate on the
x axis (bench_dsl/results/fold.py: load_axis), and refuse users and rate results side by side.

One real study serves every test (module fixture, ~15 s): two pools serving the same rate ramp of a
200 ms transaction on the session's server, at 3/4 time. Twenty users serve at most 100 a second,
so 30 and 60 tps fit and 120 drops a sixth of its arrivals or more (dropped > 10% fires there);
eighty serve 400 a second, so every step up to the ramp's last, 240 tps, fits. The two saturation
points are rates far apart: 60 (30 on a starved machine) against 240 (120).

The pools are large and the transaction long so that a stall of a loaded machine drops nothing: a
stall of T seconds at R tps leaves R*T arrivals to a pool of U users, which hold U of them, and
fires the condition once R*T - U passes a tenth of the step's arrivals. With 2 and 8 users serving
20 ms, that took a stall of 0.2 s (the 8 users once stopped at 60 tps); with 20 and 80 users it
takes about 0.5 s at every step below the pool's limit.
"""

from __future__ import annotations

import copy
import json
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from bench_dsl.results.fold import group, load_axis
from bench_dsl.results.read import find_results
from bench_dsl.results.report import data
from bench_dsl.results.report.charts import figures
from bench_dsl.results.summary import summarize

from ..conftest import froze, run_bench
from ..fixtures.result import recorded_result

SCHEMA = json.loads(resources.files("bench_dsl.results.schema").joinpath("summary-v1.json").read_text())
STUDY = """
let pool = 20
scenario "rate pools" {
  target env("BENCH_DSN")
  workload custom { transaction t { query "SELECT SLEEP(0.2)" } }
  vary { $pool = [20, 80] }
  rate step { start 30 tps step x2 hold 2s max 240 tps }
  users max $pool
  stop when { dropped > 10% }
  report every 1s
}
"""


class Study:
    def __init__(self, root: Path, stderr: str) -> None:
        self.root, self.dir, self.stderr = root, root / "study", stderr
        self.docs = {cid: json.loads(next((self.dir).glob(f"{cid}-*/repeat-1.json")).read_text())
                     for cid in ("c1", "c2")}
        self.summary = json.loads((self.dir / "summary.json").read_text())


@pytest.fixture(scope="module")
def study(dsn_url: str, tmp_path_factory: pytest.TempPathFactory) -> Study:
    root = tmp_path_factory.mktemp("rate-results")
    (root / "pools.bench").write_text(STUDY)
    # a step in which the machine froze (1.86 s without an answer, once, in a full suite: 172 arrivals
    # dropped by the 80 users) is rightly no measurement: such a study is run again, at most twice
    for _ in range(3):
        r = run_bench("run", str(root / "pools.bench"), "--headless", "-q", "--json", str(root / "study"),
                      "--time-scale", "0.75", "--workers", "1", "--replace")
        assert r.returncode == 0, r.stderr
        study = Study(root, r.stderr)
        if not any(froze(d) for d in study.docs.values()):
            break
    return study


def _sat(doc: dict[str, Any]) -> float:
    return doc["saturation"]["rate_tps"]


def test_the_runs_are_what_the_study_is_about(study: Study) -> None:
    # the premise of every test below: a rate saturation point per pool, far apart
    small, large = study.docs["c1"], study.docs["c2"]
    assert load_axis(small) == load_axis(large) == "rate"
    assert _sat(small) in (30, 60) and _sat(large) in (120, 240), (small["saturation"], large["saturation"])
    assert load_axis(recorded_result()) == "users"
    # a rate run judged no step (stopped in its first): its steps and intervals still say it offered a rate
    cut = copy.deepcopy(small)
    del cut["saturation"]["rate_tps"]
    assert load_axis(cut) == "rate"


def test_summary_says_the_axis_and_the_saturation_point_as_a_rate(study: Study) -> None:
    summary = study.summary
    jsonschema.validate(summary, SCHEMA)
    for c, cid, pool in zip(summary["configurations"], ("c1", "c2"), (20, 80)):
        doc = study.docs[cid]
        assert c["id"] == cid and c["axis"] == "rate"
        assert c["saturation"]["rate_tps"]["median"] == _sat(doc)
        assert c["saturation"]["users"]["median"] == pool  # the pool that served it, beside the rate
        complete = [s for s in doc["steps"] if s["complete"]]
        assert [e["rate_tps"] for e in c["by_users"]] == [s["rate_tps"] for s in complete]
        assert all(e["users"] == pool for e in c["by_users"])
        assert [e["tps"]["median"] for e in c["by_users"]] == [s["tps"] for s in complete]
        last = c["saturation"]["verdicts"][0]
        assert last["rate_tps"] == doc["steps"][-1]["rate_tps"]


def test_compare_sets_the_pools_side_by_side_at_each_offered_rate(study: Study, tmp_path: Path) -> None:
    md = tmp_path / "cmp.md"
    r = run_bench("compare", str(study.dir), "--json", "-", "--markdown", str(md),
                  "--fail-if", "saturation > +50%", "--fail-if", "p99 > +1000%")
    assert r.returncode == 3, r.stderr  # the larger pool's saturation point is 2x the smaller's or more
    table = json.loads(r.stdout)
    small, large = _sat(study.docs["c1"]), _sat(study.docs["c2"])
    assert table["axis"] == "rate" and "users_compared" not in table
    both = sorted({s["rate_tps"] for s in study.docs["c1"]["steps"] if s["complete"]}
                  & {s["rate_tps"] for s in study.docs["c2"]["steps"] if s["complete"]})
    assert table["rates_compared"] == both and both[:2] == [30, 60]
    sat = next(row for row in table["rows"] if row["metric"] == "saturation")
    assert sat["unit"] == "tps" and [c["value"] for c in sat["cells"]] == [small, large]
    assert sat["cells"][1]["diff_pct"] == round((large - small) / small * 100, 2) and sat["cells"][1]["better"]
    tps30 = next(row for row in table["rows"] if row["metric"] == "tps" and row.get("rate_tps") == 30)
    assert "users" not in tps30 and tps30["unit"] == "tx/s"
    gate_sat, gate_p99 = table["gates"]
    assert gate_sat["failed"] and gate_sat["checks"][0]["rate_tps"] is None
    assert gate_sat["checks"][0]["value"] == large and gate_sat["checks"][0]["baseline"] == small
    assert not gate_p99["failed"] and [ch["rate_tps"] for ch in gate_p99["checks"]] == both
    text = md.read_text()
    assert "| saturation (tps) |" in text and "| tps @ 30 tps |" in text and "| p99 ms @ 60 tps |" in text
    assert f"Rates compared: {', '.join(f'{r:g}' for r in both)} tps." in text
    flat = " ".join(r.stderr.split())
    label = study.summary["configurations"][1]["label"]
    assert f"--fail-if saturation > +50%: FAILED: {label}: {large:g} vs {small:g}" in flat
    # the study printed the same table at its end
    assert "saturation (tps)" in study.stderr and "tps @ 30 tps" in study.stderr


def test_the_report_draws_against_the_offered_rate(study: Study) -> None:
    configs = group(find_results([study.dir]).results)
    assert [c.axis for c in configs] == ["rate", "rate"]
    figs = figures(configs)
    assert [f.name for f in figs] == ["throughput-vs-rate", "latency-vs-rate", "timeline", "latency-spectrum",
                                      "cpu-vs-rate", "latency-stddev-ms-vs-rate", "p99-p50-ratio-vs-rate",
                                      "tps-cv-pct-vs-rate"]
    spec = json.dumps(figs[0].spec())
    assert '"field": "rate_tps"' in spec and "offered rate (transactions/s)" in spec
    assert "Throughput against offered rate" in spec and "users (concurrent connections)" not in spec
    small, large = _sat(study.docs["c1"]), _sat(study.docs["c2"])
    assert [(r["configuration"], r["rate_tps"], r["label"]) for r in data.saturation_rows(configs, data.tps)] == [
        (configs[0].label, small, f"{small:g} tps"), (configs[1].label, large, f"{large:g} tps")]
    assert [r["saturation"] for r in data.summary_rows(configs)] == [f"{small:g} tps", f"{large:g} tps"]
    assert {r["step"] for r in data.spectrum(configs)} >= {"30 tps", "60 tps"}
    # the study's own report says the same
    page = (study.dir / "report.html").read_text()
    assert "Throughput against offered rate" in page and f"saturation point {small:g} tps" in page
    assert f"saturation point {large:g} tps" in page


def test_repeats_of_a_rate_fold_into_the_median_rate(study: Study, tmp_path: Path) -> None:
    """Two repeats of the large pool, one saturated a step lower: the median is between the two
    rates, and the report marks it there on the curve."""
    base = study.docs["c2"]
    rates = [s["rate_tps"] for s in base["steps"] if s["complete"]]
    low = rates[rates.index(_sat(base)) - 1]
    docs = []
    for k, point in ((1, _sat(base)), (2, low)):
        d = copy.deepcopy(base)
        d["configuration"] |= {"id": "c9", "label": "pool=80", "repeat": k, "repeats": 2, "study_id": "r"}
        d["saturation"]["rate_tps"] = point
        docs.append(d)
    summary = summarize(docs)
    (c,) = summary["configurations"]
    assert c["saturation"]["rate_tps"]["median"] == (low + _sat(base)) / 2
    assert c["saturation"]["rate_tps"]["per_repeat"] == [_sat(base), low]
    assert [e["repeats_measured"] for e in c["by_users"]] == [2] * len(rates)
    (row,) = data.saturation_rows(group(docs), data.tps)
    assert row["rate_tps"] == (low + _sat(base)) / 2 and row["label"] == f"{(low + _sat(base)) / 2:g} tps"


@pytest.mark.parametrize("command", ["compare", "report"])
def test_users_and_rate_results_are_refused_together(command: str, study: Study, tmp_path: Path) -> None:
    users = tmp_path / "users.json"
    users.write_text(json.dumps(recorded_result()))
    rate = next(study.dir.glob("c1-*/repeat-1.json"))
    out = tmp_path / "r.html"
    extra = ["--force"] if command == "compare" else ["-o", str(out)]
    r = run_bench(command, str(users), str(rate), *extra)
    flat = " ".join(r.stderr.split())
    assert r.returncode == 2, r.stderr
    assert "these results answer different questions" in flat and "Traceback" not in r.stderr
    assert "closed-loop (users" in flat and "open-loop (a rate" in flat
    assert not out.exists()
