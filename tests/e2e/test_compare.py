"""bench_dsl/results/summary.py and `bench compare` on results of real runs.

One set of runs serves every test (module fixture, ~20 s): three configurations x two repeats,
interleaved as the matrix runner will run them (here c1 c3 c2, twice), on the session's server:
c1 and c3 the same configuration, c2 a slower one. Slower by the server's setting alone: the one
transaction sleeps for max_sp_recursion_depth / 100 ms (a setting nothing else here uses), 0 in
c1 and c3, 2 ms in c2: thousands of tps against at most 500, on this machine loaded or not.

(Measured before choosing it, on this 2-core machine while other engineers' test suites ran:
a durable server, innodb_flush_log_at_trx_commit = 1, against a lazy one was from 16 % to 90 %
slower and once faster, as their work made fsync cheap or dear; a 6 MiB buffer pool against one
that holds the data had a 1.6-3x p95 and 7-45 % fewer tps until, at a load average of 1000, a
starved in-memory run was slower than an unstarved small-pool one. A test of the comparison must
not depend on which way the machine's other work tips a real difference.)

The matrix runner's `configuration` field is added to each result here, as the runner will
write it; plus one step ramp for several users counts.
"""

from __future__ import annotations

import json
import shutil
import statistics
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from bench_dsl.core.errors import UsageError
from bench_dsl.results.comparison import compare, parse_gate
from bench_dsl.results.read import ResultFile, find_results
from bench_dsl.results.read import read_result as read_file
from bench_dsl.results.summary import summarize

from ..conftest import run_bench, run_measured

SCHEMA = json.loads(resources.files("bench_dsl.results.schema").joinpath("summary-v1.json").read_text())

SCENARIO = """
let depth = 0
scenario "server-paced" {
  target env("BENCH_DSN")
  server { max_sp_recursion_depth = $depth }
  workload custom {
    transaction paced {
      query "SELECT SLEEP(@@GLOBAL.max_sp_recursion_depth / 100000)"
    }
  }
  users 1
  workers 1
  warmup 5s
  duration 20s
  report every 1s
}
"""
RAMP = """
scenario "point selects ramp" {
  target env("BENCH_DSN")
  server { max_sp_recursion_depth = 0 }  # the server's default: the session's server as it was
  workload sysbench oltp_point_select { tables = 1  table_size = 1000 }
  workers 1
  warmup 5s
  ramp step { start 1 users  step x2  settle 5s  hold 15s  max 2 users }
  report every 1s
}
"""
CONFIGS = [("c1", "unpaced", {"max_sp_recursion_depth": "0"}),
           ("c2", "paced", {"max_sp_recursion_depth": "200"}),
           ("c3", "unpaced-again", {"max_sp_recursion_depth": "0"})]
REPEATS = 2


def _run(scenario: Path, out: Path, *defines: str) -> dict[str, Any]:
    r, doc = run_measured("run", str(scenario), "--headless", "-q", "--time-scale", "0.1", "--json", str(out), *defines,
                          out=out)
    assert r.returncode == 0, r.stderr
    return doc


@pytest.fixture(scope="module")
def runs(dsn_url: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """<root>/matrix: the matrix runner's layout; <root>/ramp.json: a step ramp, 1 and 2 users."""
    root = tmp_path_factory.mktemp("compare")
    scenario = root / "paced.bench"
    scenario.write_text(SCENARIO)
    matrix = root / "matrix"
    for k in range(1, REPEATS + 1):
        # the two runs of the same server next to each other (c1 c3 c2): what the machine's other
        # work does to a run changes within seconds, and this test is about the rule, not the machine
        for cid, slug, values in (CONFIGS[0], CONFIGS[2], CONFIGS[1]):
            out = matrix / f"{cid}-{slug}" / f"repeat-{k}.json"
            out.parent.mkdir(parents=True, exist_ok=True)
            doc = _run(scenario, out, "-D", f"depth={values['max_sp_recursion_depth']}")
            doc["configuration"] = {"id": cid, "label": " ".join(f"{n}={v}" for n, v in values.items()) + f" ({slug})",
                                    "values": values, "repeat": k, "repeats": REPEATS, "study": "pacing"}
            out.write_text(json.dumps(doc))
    ramp = root / "ramp.bench"
    ramp.write_text(RAMP)
    # the tests read a figure per users count: both steps measured (a step the machine froze in is run
    # again: conftest.run_measured)
    doc = _run(ramp, root / "ramp.json")
    # what else the runner leaves there, and must be skipped
    (matrix / "summary.json").write_text(json.dumps(summarize(load_results([matrix]))))
    (matrix / "notes.json").write_text('{"format": "something else"}')
    return root


def load_results(paths: list[Path]) -> list[ResultFile]:
    return find_results(paths).results


def files_in(paths: list[Path]) -> list[Path]:
    return [r.path for r in load_results(paths) if r.path is not None]


def read_result(path: Path) -> dict[str, Any]:
    return read_file(path).doc


def _cell(table: dict[str, Any], metric: str, users: int | None, conf: str) -> dict[str, Any]:
    row = next(r for r in table["rows"] if r["metric"] == metric and r["users"] == users)
    return next(c for c in row["cells"] if c["configuration"] == conf)


# ---- summary -------------------------------------------------------------------------------------

@pytest.mark.slow
def test_a_directory_is_searched_for_results_only(runs: Path) -> None:
    files = files_in([runs / "matrix"])
    assert [f.relative_to(runs / "matrix").as_posix() for f in files] == [
        f"{cid}-{slug}/repeat-{k}.json" for cid, slug, _ in CONFIGS for k in range(1, REPEATS + 1)]
    assert len(load_results([runs / "matrix", runs / "ramp.json"])) == len(CONFIGS) * REPEATS + 1


@pytest.mark.slow
def test_a_file_that_is_not_a_result_is_a_clear_usage_error(runs: Path, tmp_path: Path) -> None:
    (tmp_path / "bad.json").write_text("{not json")
    (tmp_path / "empty").mkdir()
    cases = {runs / "missing.json": "missing.json: no such file",
             runs / "matrix" / "summary.json": "summary.json: not a bench-dsl result",
             tmp_path / "bad.json": "bad.json: not JSON", tmp_path / "empty": "no bench-dsl result files"}
    for path, words in cases.items():
        with pytest.raises(UsageError, match=words):
            load_results([path])
    r = run_bench("compare", str(runs / "ramp.json"), str(runs / "missing.json"))
    assert r.returncode == 2 and "missing.json: no such file" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.slow
def test_summary_groups_repeats_per_configuration_and_validates(runs: Path) -> None:
    files = files_in([runs / "matrix"])
    docs = [read_result(f) for f in files]
    s = summarize(load_results(files), base=runs / "matrix")
    jsonschema.validate(s, SCHEMA)
    assert s["format"] == "bench-dsl-summary" and s["study"] == "pacing" and s["same_workload"]
    assert [c["id"] for c in s["configurations"]] == ["c1", "c2", "c3"]
    c2 = s["configurations"][1]
    assert c2["values"] == CONFIGS[1][2] and c2["label"].endswith("(paced)")
    assert c2["files"] == ["c2-paced/repeat-1.json", "c2-paced/repeat-2.json"]
    assert c2["repeats_completed"] == 2 and c2["statuses"] == ["completed", "completed"]
    mine = [d for d in docs if d["configuration"]["id"] == "c2"]
    assert c2["saturation"]["users"]["per_repeat"] == [d["saturation"]["users"] for d in mine]
    [at1] = c2["by_users"]
    assert at1["users"] == 1 and at1["repeats_measured"] == 2
    steps = [d["steps"][0] for d in mine]
    tps = at1["tps"]
    assert tps["per_repeat"] == [pytest.approx(st["tps"], abs=1e-3) for st in steps]
    assert tps["median"] == pytest.approx(statistics.median(st["tps"] for st in steps), abs=1e-3)
    assert tps["min"] <= tps["median"] <= tps["max"] and tps["n"] == 2
    assert tps["repeats_noise_pct"] == pytest.approx((tps["max"] / tps["min"] - 1) * 100, abs=0.01)
    # three report intervals per step: the noise one run shows is there, and judged by the larger
    assert tps["interval_noise_pct"] is not None
    assert tps["noise_pct"] == max(tps["repeats_noise_pct"], tps["interval_noise_pct"])
    # cpu is percent of the whole machine: cores busy = cpu% / 100 * cpu_count
    st, machine = steps[0], mine[0]["machine"]
    assert at1["cpu_us_per_tx"]["client"]["per_repeat"][0] == pytest.approx(
        st["cpu"]["client"] / 100 * machine["cpu_count"] * 1e6 / st["tps"], rel=1e-3)
    assert at1["nopm"] is None  # sysbench has no new orders


@pytest.mark.slow
def test_the_schema_is_not_vacuous(runs: Path) -> None:
    s = summarize(load_results([runs / "matrix"]))
    s["configurations"][0]["by_users"][0]["tps"].pop("median")
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(s, SCHEMA)


@pytest.mark.slow
def test_plain_results_are_each_a_configuration_labelled_apart(runs: Path, tmp_path: Path) -> None:
    files = []
    for name in ("base.json", "new.json"):  # two plain runs of one scenario: the names clash
        doc = read_result(runs / "matrix" / "c1-unpaced" / "repeat-1.json")
        doc.pop("configuration")
        (tmp_path / name).write_text(json.dumps(doc))
        files.append(tmp_path / name)
    files.append(runs / "ramp.json")
    s = summarize(load_results(files), base=tmp_path)
    jsonschema.validate(s, SCHEMA)
    assert [c["label"] for c in s["configurations"]] == ["base.json", "new.json", "ramp.json"]
    assert [c["files"] for c in s["configurations"]][:2] == [["base.json"], ["new.json"]]
    assert not s["same_workload"] or s["configurations"][2]["workload"] == s["workload"]


@pytest.mark.slow
def test_two_matrices_are_told_apart_and_a_file_named_twice_counts_once(runs: Path, tmp_path: Path) -> None:
    shutil.copytree(runs / "matrix", tmp_path / "matrix")
    files = files_in([runs / "matrix", tmp_path / "matrix", runs / "matrix" / "c1-unpaced"])
    assert len(files) == 2 * len(CONFIGS) * REPEATS
    s = summarize(load_results(files))
    ids, labels = [c["id"] for c in s["configurations"]], [c["label"] for c in s["configurations"]]
    assert ids == ["c1", "c2", "c3", "c1-2", "c2-2", "c3-2"] and len(set(labels)) == 6
    assert all(len(c["statuses"]) == REPEATS for c in s["configurations"])


@pytest.mark.slow
def test_a_ramp_gives_a_figure_per_users_count(runs: Path) -> None:
    doc = read_result(runs / "ramp.json")
    [c] = summarize([doc])["configurations"]
    assert [e["users"] for e in c["by_users"]] == [s["users"] for s in doc["steps"] if s["complete"]] == [1, 2]
    assert c["saturation"]["condition"] == doc["saturation"]["condition"]
    for e, st in zip(c["by_users"], doc["steps"]):
        assert e["tps"]["median"] == pytest.approx(st["tps"], abs=1e-3)
        assert e["latency_ms"]["p95"]["median"] == pytest.approx(st["latency_ms"]["p95"], abs=1e-3)
        assert e["tps"]["noise_from"] == "intervals"  # one run: the intervals are all it has


# ---- compare -------------------------------------------------------------------------------------

@pytest.mark.slow
def test_the_slower_configuration_is_reported_and_the_gate_exits_3(runs: Path, tmp_path: Path) -> None:
    out, md = tmp_path / "cmp.json", tmp_path / "cmp.md"
    r = run_bench("compare", str(runs / "matrix"), "--fail-if", "tps < -5%", "--fail-if", "p95 > +10%",
                  "--json", str(out), "--markdown", str(md))
    assert r.returncode == 3, r.stderr
    table = json.loads(out.read_text())
    slower = _cell(table, "tps", 1, "c2")
    assert slower["diff_pct"] < -50 and slower["better"] is False
    assert slower["beyond_noise"] is not None  # judged, against a noise it names
    assert set(slower["judged_noise_from"].split(" + ")) <= {"repeats", "intervals"}
    assert _cell(table, "p95", 1, "c2")["diff_pct"] > 100
    tps_gate, p95_gate = table["gates"]
    for gate in (tps_gate, p95_gate):
        assert gate["failed"] and [ch["configuration"] for ch in gate["checks"] if ch["failed"]][:1] == ["c2"]
    assert "--fail-if tps < -5%: FAILED: " in r.stderr and "(paced) at 1 users" in r.stderr
    assert "--fail-if p95 > +10%: FAILED: " in r.stderr
    # the console table on stdout, the same figures in the Markdown
    assert "bench compare" in r.stdout and "tps @ 1 users" in r.stdout
    assert f"{slower['diff_pct']:+.1f}%" in md.read_text() and "| tps @ 1 users |" in md.read_text()


@pytest.mark.slow
def test_a_difference_is_beyond_the_noise_only_when_wider_than_both_noises(runs: Path) -> None:
    """The rule, on the runs' own summary with c1's and c3's tps set: what two real runs of one
    configuration measure depends on how busy the machine was in each (a fresh-clone CI once saw c3's
    two repeats at 11,772 and 18,509 tps), so the real pair is held to the rule's arithmetic only."""
    s = summarize(load_results([runs / "matrix"]))
    real = _cell(compare(s), "tps", 1, "c3")
    (c1, c3) = (c for c in s["configurations"] if c["id"] in ("c1", "c3"))
    noises = [c["by_users"][0]["tps"]["noise_pct"] for c in (c1, c3)]
    assert real["judged_noise_pct"] == pytest.approx(sum(noises), abs=1e-3)
    assert real["beyond_noise"] is (real["apart_pct"] > real["judged_noise_pct"])

    def judged(median: float) -> dict[str, Any]:
        for c, m in ((c1, 1000.0), (c3, median)):
            c["by_users"][0]["tps"] |= {"median": m, "min": m, "max": m, "noise_pct": 4.0}
        return _cell(compare(s), "tps", 1, "c3")

    # each median uncertain by its 4%: apart beyond doubt past 8% (4% + 4%), either way
    assert [judged(m)["beyond_noise"] for m in (1000.0, 1079.0, 1081.0, 1000 / 1.079, 1000 / 1.081)] == [
        False, False, True, False, True]
    assert judged(1081.0)["judged_noise_pct"] == 8.0 and judged(1081.0)["apart_pct"] == 8.1


@pytest.mark.slow
def test_baseline_first_and_a_passing_gate_exits_0(runs: Path) -> None:
    m = runs / "matrix"
    # the slower one as the baseline: the other is faster, and "tps < -5%" holds
    r = run_bench("compare", str(m / "c2-paced"), str(m / "c1-unpaced"), "--fail-if", "tps < -5%",
                  "--fail-if", "saturation < -50%", "--json", "-")
    assert r.returncode == 0, r.stderr
    table = json.loads(r.stdout)  # --json -: stdout is the data only, the console table went to stderr
    assert table["baseline"] == "c2" and _cell(table, "tps", 1, "c1")["diff_pct"] > 100
    assert "bench compare" in r.stderr


@pytest.mark.slow
def test_different_workloads_are_refused_unless_forced(runs: Path, tmp_path: Path) -> None:
    doc = read_result(runs / "ramp.json")
    doc["scenario"]["workload"]["table_size"] = 5000
    other = tmp_path / "bigger.json"
    other.write_text(json.dumps(doc))
    r = run_bench("compare", str(runs / "ramp.json"), str(other))
    assert r.returncode == 2 and "other data or options" in r.stderr and "--force" in r.stderr
    r = run_bench("compare", str(runs / "ramp.json"), str(other), "--force", "--fail-if", "nopm < -1%")
    # forced, compared; a gate on a figure sysbench does not have judged nothing: not a silent pass
    assert r.returncode == 2 and "not judged" in r.stderr and "tps @ 2 users" in r.stdout


def test_a_malformed_gate_is_a_usage_error_with_a_hint() -> None:
    assert parse_gate("p95>+10%") == parse_gate(" p95 > +10 % ")
    assert parse_gate("tps < -5.5%").pct == -5.5
    for bad in ("tps < 5%", "tps <= -5%", "latency > +10%", "tps < -5", "p95 > +ten%"):
        with pytest.raises(UsageError, match="hint: write METRIC"):
            parse_gate(bad)
    r = run_bench("compare", "a.json", "b.json", "--fail-if", "tps drops 5%")
    assert r.returncode == 2 and "hint:" in r.stderr and "Traceback" not in r.stderr
    r = run_bench("compare", "--help")
    assert r.returncode == 0 and all(opt in r.stdout for opt in ("--fail-if", "--force", "--json", "--markdown"))


def test_a_gate_judges_the_direction_it_names() -> None:
    drop, rise = parse_gate("tps < -5%"), parse_gate("p95 > +10%")
    assert drop.fails(-5.1) and not drop.fails(-4.9) and not drop.fails(+50)
    assert rise.fails(10.1) and not rise.fails(9.9) and not rise.fails(-50)


CUSTOM = """scenario "kv" {
  target env("BENCH_DSN")
  setup {
    sql "CREATE TABLE IF NOT EXISTS cmp_kv (id INT PRIMARY KEY, v BIGINT NOT NULL)"
%s    fill cmp_kv rows 200 { id = sequence(1)  v = uniform(0, 1000) }
  }
  workload custom {
    transaction read { let id = uniform(1, 200)  query "SELECT v FROM cmp_kv WHERE id = :id" }
  }
  users 1
  workers 1
  duration 2s
  report every 1s
}
"""


@pytest.mark.slow
def test_the_same_custom_workload_from_another_file_compares(dsn_url: str, tmp_path: Path) -> None:
    # the same workload, written in a file of another name with a comment line above `fill`: every
    # generator is at another line of another file, and that is not another workload
    a, b = tmp_path / "kv.bench", tmp_path / "kv-renamed.bench"
    a.write_text(CUSTOM % "")
    b.write_text(CUSTOM % "    # the same rows, written again\n")
    docs = [_run(a, tmp_path / "a.json"), _run(b, tmp_path / "b.json")]
    assert docs[0]["scenario"]["file"] != docs[1]["scenario"]["file"]
    for p in ("a.json", "b.json"):
        assert "Span(" not in (tmp_path / p).read_text()  # no Python reprs in the result format
    r = run_bench("compare", str(tmp_path / "a.json"), str(tmp_path / "b.json"))
    assert r.returncode == 0, r.stderr
    assert summarize(docs)["same_workload"]
    # a fill of other rows is still another workload
    c = tmp_path / "kv-more.bench"
    c.write_text((CUSTOM % "").replace("uniform(0, 1000)", "uniform(0, 5000)"))
    _run(c, tmp_path / "c.json")
    r = run_bench("compare", str(tmp_path / "a.json"), str(tmp_path / "c.json"))
    assert r.returncode == 2 and "other data or options" in r.stderr, r.stderr


@pytest.mark.slow
def test_two_studies_in_one_directory_are_not_each_others_repeats(runs: Path, tmp_path: Path) -> None:
    """Before a study refused such a directory, two studies could write their c1 into one: keyed on
    the id, 1 user and 2 users became "repeats" of one configuration. Now: the study and the values."""
    m = runs / "matrix"
    for n, (src, values, study_id) in enumerate(((m / "c1-unpaced" / "repeat-1.json", {"u": "1"}, "aaa"),
                                                 (m / "c2-paced" / "repeat-1.json", {"u": "2"}, "bbb"),
                                                 (m / "c1-unpaced" / "repeat-2.json", {"u": "1"}, "aaa"))):
        doc = read_result(src)
        doc["configuration"] = {"id": "c1", "label": f"u={values['u']}", "values": values, "repeat": 1 + n // 2,
                                "repeats": 2, "study": "pacing", "study_id": study_id}
        (tmp_path / "c1-u").mkdir(exist_ok=True)
        (tmp_path / "c1-u" / f"repeat-{n}.json").write_text(json.dumps(doc))
    s = summarize(load_results([tmp_path]))
    assert [(c["label"], len(c["statuses"])) for c in s["configurations"]] == [("u=1", 2), ("u=2", 1)]
    # results of earlier versions have no study_id: their values still tell them apart
    for p in (tmp_path / "c1-u").glob("*.json"):
        doc = json.loads(p.read_text())
        doc["configuration"].pop("study_id")
        p.write_text(json.dumps(doc))
    s = summarize(load_results([tmp_path]))
    assert [(c["label"], len(c["statuses"])) for c in s["configurations"]] == [("u=1", 2), ("u=2", 1)]
