"""Metrics are declared once (bench_dsl/language/metric_decls.py, and a workload kind's own in its plugin):
the grammar's units, the conditions, the measurements, the summary and compare read the declarations,
so a metric declared in a test only is nameable, computed and compared without another edit."""

from __future__ import annotations

import dataclasses
import re
from typing import Any

import pytest

from bench_dsl.core.errors import ScenarioError
from bench_dsl.language import parser, validate
from bench_dsl.language.metric_decls import CORE, CORE_TABLE, MetricDecl, Table
from bench_dsl.measure.metrics import Aggregate, TickStats
from bench_dsl.measure.txstats import TxStats, new_histogram
from bench_dsl.results.comparison import compare, parse_gate, row_name
from bench_dsl.results.summary import summarize
from bench_dsl.workloads import registry
from bench_dsl.workloads.tpcc.plugin import NOPM, NOPM_PER_WATT

# A throughput of statements per minute, declared by a workload kind of the test's own.
SPM = MetricDecl("spm", "throughput", "spm", "own", title="SPM", example="{label} {op} {value} {name}",
                 counts="statements", per=60.0, higher_is_better=True, summarized=True, compared=True, gated=True,
                 compare_unit="statements/min")
CUSTOM = "workload custom { transaction t { query \"SELECT 1\" } }"


def _rate_unit_words(units: tuple[str, ...]) -> list[str]:
    pattern = parser._parser(units).get_terminal("RATE_UNIT").pattern.value
    found = re.match(r"\(([^()]*)\)", pattern)
    assert found is not None, pattern
    return found.group(1).split("|")


def test_the_grammars_units_are_the_declared_throughputs() -> None:
    declared = registry.METRICS.throughput_units()
    assert declared == ["tps", "tpm", "qps", "nopm"]
    assert _rate_unit_words(tuple(declared)) == declared
    assert _rate_unit_words(parser.CORE_UNITS) == CORE_TABLE.throughput_units() == ["tps", "tpm", "qps"]


def test_nopm_is_the_tpcc_plugins_not_the_cores() -> None:
    assert "nopm" not in {d.name for d in CORE}
    assert registry.PLUGINS["tpcc"].metrics == (NOPM, NOPM_PER_WATT)
    assert registry.METRICS.get("nopm") is NOPM
    # listed with the throughputs whoever declared it, as messages have always listed it
    assert registry.METRICS.names()[8:12] == ["tps", "tpm", "qps", "nopm"]
    assert list(registry.METRICS.shown("gated")) == ["tps", "tpm", "nopm", "p50", "p90", "p95", "p99", "saturation"]
    assert list(registry.METRICS.shown("compared")) == [
        "tps", "tpm", "nopm", "p50", "p95", "p99", "server_cpu_us_per_tx", "client_cpu_us_per_tx", "error_rate_pct",
        "tps_cv_pct", "latency_stddev_ms", "p99_p50_ratio", "power_w", "tx_per_joule", "nopm_per_watt"]


def test_a_metric_is_declared_once() -> None:
    with pytest.raises(ValueError, match="declared twice: tps"):
        Table.of([dataclasses.replace(CORE[8])])


def _kinds() -> dict[str, Any]:
    return {**registry.PLUGINS, "custom": dataclasses.replace(registry.PLUGINS["custom"], metrics=(SPM,))}


def _load(conditions: str, kinds: Any) -> Any:
    text = (f'scenario "s" {{\n{CUSTOM}\nramp step {{ start 1 user  step +1 user  settle 1s  hold 5s  max 4 users }}\n'
            f'stop when {{ {conditions} }}\n}}\n')
    return validate.load("t.bench", text=text, env={}, workloads=kinds, fleets={})


def test_a_metric_declared_by_a_plugin_is_nameable_in_a_condition() -> None:
    sc = _load("spm < 600 spm  spm(t) plateau 5%  tps > 5", _kinds())
    low, plateau, tps = sc.stop
    assert (low.metric.name, low.limit, low.unit, low.metric.declared) == ("spm", 600.0, "spm", SPM)
    assert (plateau.kind, plateau.metric.transaction, plateau.unit) == ("plateau", "t", "%")
    assert tps.metric.name == "tps"
    # the same file without the plugin's declaration: the word is no unit, and no metric
    with pytest.raises(ScenarioError):
        _load("spm < 600 spm", registry.PLUGINS)
    with pytest.raises(ScenarioError, match="unknown metric 'spm'"):
        _load("spm < 600", registry.PLUGINS)
    # the env() value of a limit reads the declared unit word too
    text = (f'scenario "s" {{\n{CUSTOM}\nusers 2\nduration 10s\nstop when {{ spm < env("L") }}\n}}\n')
    env_sc = validate.load("t.bench", text=text, env={"L": "600 spm"}, workloads=_kinds(), fleets={})
    assert (env_sc.stop[0].limit, env_sc.stop[0].unit) == (600.0, "spm")


def test_a_declared_throughput_is_computed_from_its_declaration() -> None:
    table = Table.of((SPM,), (NOPM,))
    sc = _load("spm < 600 spm", _kinds())
    agg = Aggregate(("t",), table)
    hist = new_histogram()
    hist.record_value(1000, 10)
    agg.add(TickStats(2.0, 2.0, "hold", 1, 2, {"t": TxStats(hist, count=10, queries=30, total_us=10_000)}, {}))
    assert agg.value(sc.stop[0].metric) == pytest.approx(30 / 2 * 60)
    summary = agg.summary()
    assert summary["spm"] == 900.0 and "nopm" not in summary  # no new_order: no new orders
    assert summary["transactions"]["t"]["spm"] == 900.0  # type: ignore[index]
    assert TickStats(1.0, 1.0, "hold", 1, 2, {"t": TxStats(count=1, queries=3)}, {}).figures(table).declared["spm"] == 180.0


def _doc(spm: float, tps: float) -> dict[str, Any]:
    step = {"step": 1, "users": 4, "seconds": 10.0, "complete": True, "tps": tps, "tpm": tps * 60, "qps": tps,
            "spm": spm, "count": int(tps * 10), "errors": 0, "latency_ms": {"p50": 1.0, "p90": 2.0, "p95": 2.0,
                                                                              "p99": 3.0}, "cpu": {}}
    return {"scenario": {"name": "s", "workload": {"workload": "custom"}}, "status": "completed", "steps": [step],
            "saturation": {"users": 4}}


def test_a_metric_added_to_the_table_shows_in_compare(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry, "METRICS", Table.of(*(p.metrics for p in registry.PLUGINS.values()), (SPM,)))
    summary = summarize([_doc(600.0, 10.0), _doc(300.0, 10.0)])
    assert summary["configurations"][1]["by_users"][0]["spm"]["median"] == 300.0
    table = compare(summary, [parse_gate("spm < -10%")])
    row = next(r for r in table["rows"] if r["metric"] == "spm")
    assert (row["unit"], row_name(row), row["cells"][1]["diff_pct"], row["cells"][1]["better"]) == (
        "statements/min", "SPM @ 4 users", -50.0, False)
    [gate] = table["gates"]
    assert gate["failed"] and gate["checks"][0]["diff_pct"] == -50.0
    assert [r["metric"] for r in table["rows"] if r["users"] is not None][:3] == ["tps", "tpm", "spm"]
