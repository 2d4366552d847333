"""Events carry types, not dicts (issue 40): each type's JSON is the object a result and a stream
held before it existed, key for key, and reads back as the same value; what an older or hand-made
result lacks reads back empty rather than failing."""

from __future__ import annotations

import dataclasses
import json
import types
from pathlib import Path
from typing import Any

import pytest

from bench_dsl.core.cluster_info import ClusterCalls, ClusterInfo, ClusterNode
from bench_dsl.core.live_figures import BusyDisk, Cpu, StepSoFar, TxFigures
from bench_dsl.core.prepare_report import PrepareReport
from bench_dsl.engine import events as ev
from bench_dsl.engine.rows import IntervalRow
from bench_dsl.engine.study_configuration import StudyConfiguration
from bench_dsl.results.document import ResultDocument
from bench_dsl.results.stream import decode, encode


def _wire(e: ev.Event) -> dict[str, Any]:
    out: dict[str, Any] = json.loads(json.dumps(encode(e)))
    return out


# -- Prepared: the result's "prepare" ------------------------------------------------------------------
@pytest.mark.parametrize(("report", "before"), [
    (PrepareReport(False, 20000, 0.7), {"skipped": False, "rows": 20000, "seconds": 0.7}),
    (PrepareReport(True, 20000, 0.0, "2026-11-28 14:09:42"),
     {"skipped": True, "rows": 20000, "seconds": 0.0, "prepared_at": "2026-11-28 14:09:42"}),
])
def test_a_prepare_report_is_the_results_prepare_and_reads_back(report: PrepareReport, before: dict[str, Any]) -> None:
    assert report.to_json() == before
    assert PrepareReport.from_json(before) == report
    doc = ResultDocument()
    doc.apply(ev.Prepared(report))
    assert doc.doc["prepare"] == before
    line = _wire(ev.Prepared(report))
    assert line["report"] == before  # a stream's line as before: {"type": "prepared", "report": {...}}
    assert decode(line) == ev.Prepared(report)


def test_a_result_without_a_prepare_reads_as_none_and_a_partial_one_as_empty() -> None:
    assert PrepareReport.from_json(None) is None
    assert PrepareReport.from_json({"skipped": True}) == PrepareReport(True, 0, 0.0)
    with pytest.raises(ValueError):
        ev.from_json({"type": "prepared", "report": None})


# -- Cluster: the result's "cluster" ------------------------------------------------------------------
# what RayFleet.cluster returned before the type, key for key and in that order
RAY_BEFORE: dict[str, Any] = {
    "kind": "ray",
    "nodes": [{"node_id": "ab" * 28, "host": "client1", "address": "10.0.0.5", "ray_cpus": 2, "cores": 4,
               "workers": ["worker 1", "worker 3"], "users": 8,
               "answers_late_ms": {"p50": 3.0, "p99": 40.0, "max": 900.0, "answers": 12}},
              {"node_id": "cd" * 28, "host": "client2", "address": None, "ray_cpus": 1, "cores": 1,
               "workers": ["worker 2"], "users": 4, "answers_late_ms": None}],
    "actors_ready_s": 2.1, "users_started": [{"users": 4, "seconds": 0.5}, {"users": 12, "seconds": 1.25}],
    "lost": [{"worker": "worker 2", "node_id": "cd" * 28, "host": "client2", "reason": "its node is gone"}],
    "calls": {"collects": 10, "report_calls": 20, "reports": 30, "calls": 22, "messages": 34},
}


def test_a_cluster_is_the_results_cluster_key_for_key_and_reads_back() -> None:
    cluster = ClusterInfo.from_json(RAY_BEFORE)
    assert cluster is not None
    assert json.dumps(cluster.to_json()) == json.dumps(RAY_BEFORE)  # the order of the keys too
    assert cluster.nodes[0] == ClusterNode("ab" * 28, "client1", "10.0.0.5", 2, 4, ("worker 1", "worker 3"), 8,
                                           {"p50": 3.0, "p99": 40.0, "max": 900.0, "answers": 12})
    assert cluster.users_started == ((4, 0.5), (12, 1.25)) and cluster.lost[0].reason == "its node is gone"
    assert cluster.calls == ClusterCalls(10, 20, 30, 22, 34)
    line = _wire(ev.Cluster(cluster))
    assert line["cluster"] == RAY_BEFORE and decode(line) == ev.Cluster(cluster)
    doc = ResultDocument()
    doc.apply(ev.Cluster(cluster))  # the document adds each node's CPU, on its own copy
    assert [n["cpu_pct"] for n in doc.doc["cluster"]["nodes"]] == [None, None]
    assert "cpu_pct" not in cluster.to_json()["nodes"][0]


def test_an_older_cluster_reads_back_and_writes_only_what_it_held() -> None:
    older = {"kind": "ray", "actors_ready_s": None, "users_started": [], "lost": [],
             "nodes": [{"node_id": "ef" * 28, "host": "h", "address": None, "ray_cpus": 2, "workers": ["worker 1"],
                        "users": 2, "cpu_pct": 50.0, "client_cpu_pct": 10.0}]}
    cluster = ClusterInfo.from_json(older)
    assert cluster is not None and cluster.calls is None and cluster.nodes[0].cores is None
    assert set(cluster.to_json()) == set(older)  # no "calls" it never had
    assert ClusterInfo.from_json(None) is None
    with pytest.raises(ValueError):
        ev.from_json({"type": "cluster", "cluster": None})


def test_the_live_screen_lists_a_typed_clusters_nodes() -> None:
    from tui.nodes import nodes
    from tui.state import LiveState

    st = LiveState()
    cluster = ClusterInfo.from_json(RAY_BEFORE)
    assert cluster is not None
    st.apply(ev.Cluster(cluster))
    lines = [line.plain for line in nodes(st, 200).lines]
    assert lines[0].startswith("ray node abababab  client1  worker 1, worker 3") and "lost" not in lines[0]
    assert lines[1].startswith("ray node cdcdcdcd  client2  worker 2") and lines[1].endswith("lost")


# -- Begin.configuration: the result's "configuration" -----------------------------------------------
CONF_BEFORE: dict[str, Any] = {"id": "c2", "label": "innodb_io_capacity=300 $rows=10K",
                               "values": {"innodb_io_capacity": "300", "$rows": "10K"}, "repeat": 2, "repeats": 3,
                               "study": "io sweep", "study_id": "20261128-140942-ab12"}


def test_a_study_configuration_is_the_results_configuration_and_reads_back() -> None:
    conf = StudyConfiguration.from_json(CONF_BEFORE)
    assert conf == StudyConfiguration("c2", "innodb_io_capacity=300 $rows=10K",
                                      {"innodb_io_capacity": "300", "$rows": "10K"}, 2, 3, "io sweep",
                                      "20261128-140942-ab12")
    assert json.dumps(conf.to_json()) == json.dumps(CONF_BEFORE)
    begin = ev.Begin("1", "now", ev.ScenarioInfo("io sweep"), ev.Machine.from_json({}), conf)
    line = _wire(begin)
    assert line["configuration"] == CONF_BEFORE and decode(line) == begin
    doc = ResultDocument()
    doc.apply(begin)
    assert doc.doc["configuration"] == CONF_BEFORE


def test_a_plain_runs_configuration_is_null_and_an_older_one_has_no_study_id() -> None:
    plain = ev.Begin("1", "now", ev.ScenarioInfo("n"), ev.Machine.from_json({}))
    assert _wire(plain)["configuration"] is None and decode(_wire(plain)) == plain
    doc = ResultDocument()
    doc.apply(plain)
    assert doc.doc["configuration"] is None
    older = {k: v for k, v in CONF_BEFORE.items() if k != "study_id"}
    conf = StudyConfiguration.from_json(older)
    assert conf is not None and conf.study_id is None and conf.to_json() == older


def test_the_study_says_its_runs_configuration() -> None:
    from bench_dsl.language import model as m
    from bench_dsl.study.plan import study_configuration

    sc = m.Scenario.__new__(m.Scenario)
    object.__setattr__(sc, "name", "io sweep")
    object.__setattr__(sc, "study", types.SimpleNamespace(repeat=3))
    c = m.Configuration("c2", (("innodb_io_capacity", "300"), ("$rows", "10K")))
    assert study_configuration(sc, c, 2, "20261128-140942-ab12").to_json() == CONF_BEFORE


# -- Begin.scenario: the result's "scenario" ---------------------------------------------------------
def test_a_runs_scenario_is_the_results_scenario_key_for_key_and_reads_back() -> None:
    from bench_dsl.engine import outcome
    from bench_dsl.engine.plan import plan
    from bench_dsl.engine.scenario_file import load

    root = Path(__file__).resolve().parents[2]
    sc = load(root / "tests/fixtures/format/format-rate.bench", env={"BENCH_DSN": "mysql://u:pw@db/x"})
    info = outcome.scenario_info(sc, {"workload": "sysbench", "tables": 1}, ("oltp_read_write",), plan(sc), 0.5,
                                 None, lambda s: s.replace("pw", "***"))
    out = info.to_json()
    assert list(out) == ["name", "file", "text", "parameters", "seed", "workload", "stop", "expect", "plan",
                         "load_axis", "rate"]  # as written before the type, in that order
    assert list(out["workload"]) == ["workload", "tables", "transactions", "digest"]
    assert out["load_axis"] == "rate" and out["rate"] == sc.ramp.to_json()  # type: ignore[union-attr]
    back = ev.ScenarioInfo.from_json(json.loads(json.dumps(out)))
    assert json.dumps(back.to_json()) == json.dumps(out)
    begin = ev.Begin("1", "now", info, ev.Machine.from_json({}))
    line = _wire(begin)
    assert line["scenario"] == out and decode(line).to_json() == begin.to_json()
    doc = ResultDocument()
    doc.apply(begin)
    assert doc.doc["scenario"] == out


def test_an_older_or_hand_made_scenario_keeps_what_it_held_and_gains_no_axis() -> None:
    older = {"name": "n", "file": "f.bench", "text": "scenario", "parameters": {"rows": "10K"}, "seed": 7,
             "workload": {"workload": "custom", "transactions": ["a"]}, "stop": ["p99 > 1s"], "expect": [],
             "plan": {"steps": 0, "seconds": 0.0, "phases": [], "time_scale": 1.0, "max_steps": None},
             "a_profiles_own": {"x": 1}}
    info = ev.ScenarioInfo.from_json(older)
    assert info.transactions == ("a",) and info.digest is None and info.load_axis is None
    assert info.asked == {"a_profiles_own": {"x": 1}}
    assert info.to_json() == older
    assert ev.ScenarioInfo.from_json(None) == ev.ScenarioInfo()


@pytest.mark.parametrize(("axis", "expected"), [("rate", "rate"), (None, "users"), ("nothing known", "users")])
def test_the_displays_take_the_load_axis_the_scenario_names(axis: str | None, expected: str) -> None:
    from tui.state import LiveState

    st = LiveState()
    st.apply(ev.Begin("1", "now", ev.ScenarioInfo("n", load_axis=axis), ev.Machine.from_json({})))
    assert st.axis.name == expected


# -- Interval.step_so_far: the step so far beside an interval ------------------------------------------
def _so_far_before(s: dict[str, Any], live: list[str]) -> dict[str, Any]:
    """metrics.Aggregate.so_far as it was before the type, its dict made the same way."""
    out = {k: s[k] for k in (*live, "latency_ms", "cpu") if k in s}
    return out | {"transactions": {n: {k: t[k] for k in ("count", "tps", "errors", "latency_ms")}
                                   for n, t in s["transactions"].items()}}


def test_a_steps_so_far_is_the_streams_key_for_key_and_reads_back() -> None:
    from collections import Counter

    from bench_dsl.measure.figures import client_figures
    from bench_dsl.measure.metrics import Aggregate, TickStats
    from bench_dsl.measure.txstats import TxStats
    from bench_dsl.workloads.registry import METRICS

    names = ("new_order", "payment")  # a workload's own throughput of one transaction among the declared
    agg = Aggregate(names, METRICS)
    for i in range(2):
        txs = {n: TxStats() for n in names}
        for k, n in enumerate(names):
            for v in (900 + 100 * k, 2500, 40_000):
                txs[n].hist.record_value(v)
            txs[n].count, txs[n].queries = 3, 9
        txs["payment"].errors = Counter({1213: 1})
        agg.add(TickStats(1.0 + i, 1.0, "hold", 1, 4, txs,
                          {"server": 40.0, "host": 55.5, "client": 12.0, "client:worker 1": 30.0}))
    live = [f.name for f in client_figures(METRICS) if "step" in f.live]
    before = _so_far_before(agg.summary(), live)
    so_far = agg.so_far()
    assert json.dumps(so_far.to_json()) == json.dumps(before)  # the order of the keys too
    assert so_far.count == 12 and so_far.errors == 2 and so_far.users == 4 and so_far.tps == 6.0
    assert so_far.cpu is not None and so_far.cpu.server == 40.0
    assert so_far.transactions["payment"].errors == 2 and so_far.latency_ms is not None
    assert so_far.latency_ms.max == so_far.latency_ms.at("max") and so_far.latency_ms.at("p42") is None
    assert set(so_far.declared) >= {"tps", "tpm", "qps"}
    row = IntervalRow(2.0, 1.0, "hold", 1, True, {"seconds": 1.0, "users": 4, "tps": 6.0})
    line = _wire(ev.Interval(row, so_far))
    assert line["step_so_far"] == before
    assert ev.from_json({k: v for k, v in line.items() if k != "format_version"}) == ev.Interval(row, so_far)


def test_a_recorded_streams_step_so_far_reads_back_as_it_was() -> None:
    """Streams of before: without users, CPU or retries, its keys in another order."""
    root = Path(__file__).resolve().parents[2]
    seen = 0
    for path in (root / "tests/fixtures").glob("*.jsonl"):
        for line in path.read_text().splitlines():
            d = json.loads(line)
            if d.get("type") != "interval" or d.get("step_so_far") is None:
                continue
            e = decode(d)
            assert isinstance(e, ev.Interval) and e.step_so_far is not None
            assert e.step_so_far.to_json() == d["step_so_far"]
            assert {k: v for k, v in _wire(e).items() if k != "format_version"} == {
                k: v for k, v in d.items() if k != "format_version"}
            seen += 1
    assert seen
    assert ev.from_json({"type": "interval", "t": 1.0, "start_s": 0.0, "phase": "hold", "step": 1,
                         "measured": True}).step_so_far is None  # type: ignore[attr-defined]


def test_a_replays_step_so_far_from_its_intervals_has_no_percentiles() -> None:
    from bench_dsl.results.replay import _so_far_of

    rows = [{"seconds": 1.0, "users": 2, "count": 10, "errors": 1, "qps": 30.0,
             "transactions": {"a": {"count": 10, "errors": 1}}},
            {"seconds": 1.0, "users": 4, "count": 30, "errors": 0, "qps": 90.0,
             "transactions": {"a": {"count": 30, "errors": 0}}}]
    so_far = _so_far_of(rows)
    assert (so_far.count, so_far.errors, so_far.users, so_far.tps, so_far.declared["qps"]) == (40, 1, 4, 20.0, 60.0)
    assert so_far.latency_ms is None and so_far.transactions["a"] == TxFigures(40, 20.0, 1)
    assert StepSoFar.from_json(so_far.to_json()) == so_far


# -- LiveTick.figures: a tick's cheap figures --------------------------------------------------------
def _tick_before(tick: Any, metrics: Any) -> dict[str, Any]:
    """metrics.TickStats.figures as it was before the type (without a schedule, a status or a host)."""
    from bench_dsl.measure.metrics import WAIT_KEYS, counted

    secs = tick.seconds or 1.0
    whole = [sum(getattr(st, k) for st in tick.tx.values()) for k in ("count", "queries", "rollbacks")]
    rates = {d: n for d in metrics.measuring("throughput") if (n := counted(d, tick.tx, *whole)) is not None}
    out: dict[str, Any] = {
        **{d.name: round(n * d.per / secs, 1) for d, n in rates.items() if d.transaction is None},
        "errors_per_s": round(sum(st.error_count for st in tick.tx.values()) / secs, 2),
        "retries_per_s": round(sum(st.retries for st in tick.tx.values()) / secs, 2),
        "cpu": {k: (None if v is None else round(v, 1)) for k, v in tick.cpu.items() if not k.startswith(WAIT_KEYS)},
        "transactions": {n: {"count": st.count, "tps": round(st.count / secs, 1), "errors": st.error_count}
                         for n, st in tick.tx.items()},
    }
    out |= {d.name: round(n * d.per / secs, 1) for d, n in rates.items() if d.transaction is not None}
    if tick.lag is not None:
        out["lag_s"] = round(tick.lag, 2)
    return out


def test_a_ticks_figures_are_the_streams_name_for_name_and_read_back() -> None:
    from collections import Counter

    from bench_dsl.core.live_figures import ClientLag
    from bench_dsl.measure.metrics import TickStats
    from bench_dsl.measure.txstats import TxStats
    from bench_dsl.workloads.registry import METRICS

    txs = {"new_order": TxStats(count=7, queries=20), "payment": TxStats(count=5, queries=9, retries=1)}
    txs["payment"].errors = Counter({1213: 2})
    tick = TickStats(3.0, 0.5, "hold", 1, 4, txs, {"server": 41.26, "host": None, "client": 12.0,
                                                    "client:worker 1": 30.04, "client_host:h1": 77.0,
                                                    "pressure:cpu": 3.0}, lag=0.123)
    figures = tick.figures(METRICS)
    before = _tick_before(tick, METRICS)
    assert figures.to_json() == before  # name for name, value for value
    assert figures.tps == 24.0 and figures.errors_per_s == 4.0 and figures.retries_per_s == 2.0
    assert figures.cpu == Cpu(41.3, None, 12.0, {"worker 1": 30.0}, {"h1": 77.0}) and figures.lag_s == 0.12
    assert figures.transactions["payment"] == TxFigures(5, 10.0, 2) and figures.disk is None
    assert {d.name for d in METRICS.measuring("throughput") if d.transaction} <= set(figures.declared)
    live = ev.LiveTick(3.0, "hold", 1, 4, False, 2.0, dataclasses.replace(figures, stall_s=1.5,
                                                                          client_lag=ClientLag(12.5, 10.0)))
    line = _wire(live)
    assert line["stall_s"] == 1.5 and line["client_lag"] == {"p90_ms": 12.5, "bound_ms": 10.0}
    assert line["users"] == 4 and line["cpu"] == before["cpu"]
    assert decode(line) == live


def test_a_recorded_streams_ticks_read_back_as_they_were() -> None:
    root = Path(__file__).resolve().parents[2]
    seen = 0
    for path in (root / "tests/fixtures").glob("*.jsonl"):
        for line in path.read_text().splitlines():
            d = json.loads(line)
            if d.get("type") != "tick":
                continue
            e = decode(d)
            assert isinstance(e, ev.LiveTick)
            assert {k: v for k, v in _wire(e).items() if k != "format_version"} == {
                k: v for k, v in d.items() if k != "format_version"}
            seen += 1
    assert seen
    # what the screen reads of a hand-made or partial one: none of it, rather than failing
    bare = ev.from_json({"type": "tick", "t": 1.0, "phase": "hold", "step": 1, "users": 2, "holding": False,
                         "remaining_s": None, "tps": "?", "cpu": None, "disk": {"device": "sda"}})
    assert isinstance(bare, ev.LiveTick) and bare.figures.tps is None and bare.figures.cpu == Cpu()
    assert bare.figures.disk == BusyDisk("sda", None) and bare.figures.client_lag is None
