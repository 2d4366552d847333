"""The storage brief in one command (scenarios/storage-brief.bench, issue 42 §3): the shipped file run as
shipped (its values given with -D and the environment only) on two directories with a served powercap
tree, a run of it whose power source has nothing to read, and `bench report` on both, drawn in headless
Chromium: the three exhibits per configuration, NOPM per watt where power was read, "no power figure"
with its reason where it was not. The fast tests fold recorded results into the exhibits' rows."""

from __future__ import annotations

import copy
import json
import re
from html import escape
from pathlib import Path
from typing import Any

import pytest

from bench_dsl.results.read import ResultFile, find_results
from bench_dsl.results.report import data, figures, group
from bench_dsl.workloads.registry import METRICS

from ..conftest import ROOT, run_bench
from ..fixtures.result import recorded_result
from ..powercap import WATTS, served
from .test_report import _chromium

BRIEF = ROOT / "scenarios" / "storage-brief.bench"
# the data and the climb shrunk for a test: one warehouse (some 100 MB) against a 16 MB buffer pool,
# one pass of each device, its first step (2 users, its hold the 3 s floor): the climb itself is
# tested on its own (tests/e2e/test_runs.py), its exhibits from recorded results (above)
SMALL = ["-D", "warehouses=1", "-D", "buffer_pool=16M", "-D", "repeats=1", "--max-steps", "1",
         "--time-scale", "0.04"]
PANELS = ("(a) NOPM at saturation", "(b) Mean response time", "(c) NOPM per watt")


# -- the exhibits' rows, from recorded results ------------------------------------------------------

def _tpcc(repeat: int, factor: float, power: bool, cid: str = "c1",
          label: str = "server.dir=/mnt/nvme") -> dict[str, Any]:
    """The recorded run as a repeat of a TPC-C configuration: each step's NOPM 10x its tps (times
    `factor`), its response time's consistency, and NOPM per watt at 100 W where power was read."""
    doc = copy.deepcopy(recorded_result())
    doc["configuration"] = {"id": cid, "label": label, "values": {}, "repeat": repeat, "repeats": 3, "study": "s",
                            "study_id": "x"}
    doc["power"] = {"source": "rapl /sys/class/powercap", "measured": power,
                    "no_power_figure": None if power else "/sys/class/powercap does not exist"}
    for s in doc["steps"]:
        s["nopm"] = s["tps"] * 10 * factor
        s["latency_stddev_ms"], s["p99_p50_ratio"] = 2.0 * factor, 3.0
        if power:
            s["nopm_per_watt"] = s["nopm"] / WATTS
    return doc


def test_exhibits_fold_the_repeats_at_their_own_saturation_points() -> None:
    docs = [_tpcc(1, 1.0, True), _tpcc(2, 2.0, True), _tpcc(3, 3.0, False),
            _tpcc(1, 1.0, False, "c2", "server.dir=/mnt/hdd")]
    configs = group([ResultFile(d) for d in docs])
    (nvme, hdd) = data.exhibits(configs, METRICS)
    point = docs[0]["saturation"]["users"]
    (step,) = [s for s in docs[0]["steps"] if s["users"] == point]
    assert nvme["point"] == f"at {point} users" and nvme["runs"] == 3
    assert (nvme["throughput"], nvme["throughput_min"], nvme["throughput_max"]) == pytest.approx(
        (step["tps"] * 20, step["tps"] * 10, step["tps"] * 30), rel=1e-3)
    assert nvme["mean_ms"] == step["latency_ms"]["avg"] and nvme["stddev_ms"] == 4.0
    assert nvme["high_ms"] == pytest.approx(nvme["mean_ms"] + 4.0) and nvme["tail"] == "p99/p50 3.0x"
    # two repeats read power, one did not: their median, and the third said in a note
    assert nvme["per_watt"] == pytest.approx(step["tps"] * 15 / WATTS, rel=1e-3) and nvme["no_power"] is None
    assert nvme["power_note"] == "no power figure in 1 of 3 runs: /sys/class/powercap does not exist"
    assert "per_watt" not in hdd and hdd["no_power"] == "/sys/class/powercap does not exist"
    (exhibits, *_) = figures(configs)
    assert exhibits.name == "exhibits" and "No power figure for server.dir=/mnt/hdd" in exhibits.caption
    assert [p["title"]["text"] for p in exhibits.spec()["hconcat"]] == list(PANELS)


def test_results_without_new_orders_have_no_exhibits() -> None:
    doc = recorded_result()  # a custom workload's: tps, no NOPM
    assert data.exhibits(group([doc]), METRICS) == []
    assert "exhibits" not in [f.name for f in figures(group([doc]))]
    tpcc = _tpcc(1, 1.0, False)
    del tpcc["power"]  # a scenario without a `power` line
    assert data.exhibits(group([tpcc]), METRICS)[0]["no_power"] == data.NO_POWER_SOURCE


# -- the shipped scenario, run ----------------------------------------------------------------------

def _run(tmp_path: Path, name: str, powercap: Path, *args: str) -> Path:
    out = tmp_path / name
    r = run_bench("run", str(BRIEF), "--headless", "--json", str(out), *SMALL, *args,
                  env={"BENCH_POWERCAP": str(powercap)})
    assert r.returncode == 0, r.stderr[-3000:]
    assert "status: completed (exit 0)" in r.stderr
    return out


@pytest.mark.slow
def test_the_storage_brief_runs_and_draws_its_exhibits(tmp_path: Path) -> None:
    nvme, hdd = tmp_path / "nvme", tmp_path / "hdd"
    nvme.mkdir()
    hdd.mkdir()
    devices = ["-D", f'nvme="{nvme}"', "-D", f'hdd="{hdd}"']
    with served(tmp_path / "sys") as powercap:
        brief = _run(tmp_path, "brief", powercap, *devices)
    # the same file where there is no power to read: a powercap directory with no zone in it
    (tmp_path / "empty").mkdir()
    bare = _run(tmp_path, "bare", tmp_path / "empty", *devices, "--only", f"server.dir={nvme}")

    runs = {p.parent.parent.name + "/" + p.parent.name.split("-")[0]: json.loads(p.read_text())
            for p in sorted(tmp_path.glob("*/c*/repeat-1.json"))}
    assert sorted(runs) == ["bare/c1", "brief/c1", "brief/c2"]
    for key, doc in runs.items():
        assert doc["status"] == "completed" and doc["steps"]
        assert doc["server"]["directory"].startswith(str(nvme if key.endswith("c1") else hdd))
        assert doc["scenario"]["parameters"]["warehouses"] == 1
        if key.startswith("brief"):
            assert doc["power"]["measured"] is True and doc["power"]["no_power_figure"] is None
            for s in doc["steps"]:  # NOPM over the watts the served tree counted over the same window
                assert s["power_w"] > 0 and s["nopm_per_watt"] == pytest.approx(s["nopm"] / s["power_w"], rel=0.01)
        else:
            assert doc["power"]["measured"] is False
    why = runs["bare/c1"]["power"]["no_power_figure"]  # in the power source's words, naming what it read
    assert str(tmp_path / "empty") in why

    html = tmp_path / "brief.html"
    r = run_bench("report", str(brief), str(bare), "-o", str(html))
    assert r.returncode == 0, r.stderr
    configs = group(find_results([brief, bare]).results)
    rows = {r["configuration"]: r for r in data.exhibits(configs, METRICS)}
    assert len(rows) == 3
    (label_of_bare,) = [label for label in rows if "(bare)" in label]
    for label, row in rows.items():
        assert row["throughput"] > 0 and row["mean_ms"] > 0 and row["stddev_ms"] is not None
        if "(bare)" in label:
            assert "per_watt" not in row and row["no_power"] == why
        else:  # a number where the served tree was read: NOPM over some watts of its 100
            assert isinstance(row["per_watt"], float) and row["per_watt"] > 0 and row["no_power"] is None

    names = [f.name for f in figures(configs)]
    assert names[0] == "exhibits"
    page = html.read_text()
    assert f"No power figure for {label_of_bare}: {escape(why)}" in page
    dom = _chromium("--window-size=1280,2400", "--dump-dom", html.as_uri())
    console = [line for line in dom.stderr.splitlines() if "CONSOLE" in line]
    assert not console, "the page logged:\n" + "\n".join(console)
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert f'data-drawn="{len(names)}"' in dom.stdout, "not every chart was drawn"
    body = dom.stdout[dom.stdout.index("<body"):]
    part = body[body.index('id="fig0"'):body.index('id="fig1"')]  # the exhibits, as vega-embed drew them
    assert re.search(r'<svg[^>]*class="marks"', part) and 'class="error"' not in part
    texts = re.findall(r">([^<>]+)</text>", part)
    assert all(p in texts for p in PANELS), texts
    assert texts.count("no power figure") == 1  # the bare run's, in its place in panel (c)
    # bars: three configurations' NOPM and the two served ones' NOPM per watt
    assert part.count('aria-roledescription="bar"') == 5
