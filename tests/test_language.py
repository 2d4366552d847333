"""The language: every shipped file validates, bad files give their golden diagnostics."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench_dsl import model as m
from bench_dsl.errors import ScenarioError
from bench_dsl.validate import load, native_sql

from .conftest import ROOT, run_bench

SHIPPED = sorted([*ROOT.glob("examples/*.bench"), *ROOT.glob("scenarios/*.bench")])
GOLDEN = sorted((ROOT / "tests" / "golden").glob("*.bench"))


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: str(p.relative_to(ROOT)))
def test_shipped_files_validate(path: Path) -> None:
    sc = load(path, env={})
    assert sc.workload.transaction_names


@pytest.mark.parametrize("path", GOLDEN, ids=lambda p: p.name)
def test_golden_errors(path: Path) -> None:
    expected = path.with_suffix(".expected").read_text()
    rel = str(path.relative_to(ROOT))
    r = run_bench("check", rel)
    assert r.returncode == 2
    assert "Traceback" not in r.stderr
    assert r.stderr.strip() == expected.strip()


def test_step_saturation_contract() -> None:
    sc = load(ROOT / "examples/step-saturation.bench", env={})
    assert sc.target == "mysql://root@127.0.0.1:3306/benchdsl"
    assert sc.seed == 42 and sc.seed_given
    assert [(s.name, s.value) for s in sc.server_settings] == [
        ("innodb_buffer_pool_size", 256 * 1024 * 1024), ("innodb_flush_log_at_trx_commit", 2)]
    assert isinstance(sc.workload, m.SysbenchWorkload)
    assert (sc.workload.test, sc.workload.tables, sc.workload.table_size) == ("oltp_read_write", 4, 50000)
    assert sc.ramp == m.StepRamp(start=4, add=4, mul=None, settle=5.0, hold=20.0, max=256)
    assert sc.warmup == 10.0 and sc.report_every == 5.0
    assert [c.text for c in sc.stop] == ["p90(oltp_read_write) > 250ms", "cpu(server) > 80% for 15s",
                                        "tps plateau 5%", "p90 kink 3x", "error_rate > 1%"]
    p90, cpu, plateau, kink, err = sc.stop
    assert (p90.limit, p90.window, p90.metric.transaction) == (0.25, None, "oltp_read_write")
    assert (cpu.metric.source, cpu.limit, cpu.window) == ("server", 80.0, 15.0)
    assert (plateau.kind, plateau.limit) == ("plateau", 5.0)
    assert (kink.kind, kink.limit, kink.metric.transaction) == ("kink", 3.0, None)
    assert (err.metric.name, err.limit) == ("error_rate", 1.0)
    assert [(c.metric.name, c.op, c.limit) for c in sc.expect] == [("saturation", ">=", 8.0)]
    assert sc.output == "results/{scenario}-{time}.json"


def test_env_and_defines() -> None:
    path = ROOT / "examples/step-saturation.bench"
    sc = load(path, defines={"start": "16"}, env={"BENCH_DSN": "mysql://u:pw@db:3307/x"})
    assert sc.ramp.start == 16  # type: ignore[union-attr]
    assert sc.target == "mysql://u:pw@db:3307/x"
    with pytest.raises(ScenarioError) as e:
        load(path, defines={"strat": "16"}, env={})
    assert "did you mean -D start" in e.value.render()


def test_custom_contract() -> None:
    sc = load(ROOT / "examples/custom-hot-rows.bench", env={})
    wl = sc.workload
    assert isinstance(wl, m.CustomWorkload)
    read, write = wl.transactions
    assert (read.name, read.weight, read.retries) == ("read", 80.0, 0)
    assert (write.name, write.weight, write.retries, write.retry_on) == ("write", 20.0, 3, frozenset({1213}))
    assert read.queries[0].sql_native == "SELECT v FROM kv WHERE id = ?"
    assert read.lets[0][1] == m.Generator("zipf", (1, 100000, 1.1), read.lets[0][1].span)  # type: ignore[union-attr]
    assert sc.ramp == m.LinearRamp(1, 32, 30.0, 60.0)
    assert sc.stop[0].window == 10.0 and sc.stop[0].limit == 0.05
    fill = sc.setup[1]
    assert isinstance(fill, m.Fill) and (fill.table, fill.rows) == ("kv", 100000)


def test_newlines_and_spaces_are_interchangeable() -> None:
    one_line = ('scenario "x" { workload sysbench oltp_point_select { tables = 1 table_size = 100 } '
                'ramp step { start 1 users step x2 settle 1s hold 2s max 4 users } '
                'stop when { p90 > 250ms tps plateau 5% p99(oltp_point_select) > 1s error_rate > 1% } }')
    sc = load("one.bench", text=one_line, env={})
    assert [c.text for c in sc.stop] == ["p90 > 250ms", "tps plateau 5%", "p99(oltp_point_select) > 1s",
                                        "error_rate > 1%"]
    assert sc.ramp.mul == 2.0  # type: ignore[union-attr]


def test_parameters_are_bound_not_pasted() -> None:
    sql, names = native_sql("SELECT ':no', \"x:y\" FROM t WHERE a = :a AND b = :b -- :c\n AND c = :a")
    assert sql == "SELECT ':no', \"x:y\" FROM t WHERE a = ? AND b = ? -- :c\n AND c = ?"
    assert names == ("a", "b", "a")


def test_all_problems_at_once() -> None:
    text = """scenario "x" {
  workload custom {
    transaction read { let id = unifrom(1, 10) query "SELECT :id, :nope" }
  }
  users 0
  duration 5
  stop when { p95(raed) > 1s  cpu(disk) > 80%  tps kink 2x }
}"""
    with pytest.raises(ScenarioError) as e:
        load("x.bench", text=text, env={})
    msgs = [d.message for d in e.value.diagnostics]
    assert len(msgs) >= 6, msgs
    out = e.value.render()
    assert "did you mean uniform(min, max)?" in out
    assert "did you mean p95(read)?" in out
    assert "x.bench:5:9:" in out
