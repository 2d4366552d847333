"""The language: every shipped file validates, bad files give their golden diagnostics."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bench_dsl.core.errors import ScenarioError
from bench_dsl.engine.scenario_file import load
from bench_dsl.language import model as m
from bench_dsl.workloads.custom.plugin import CustomWorkload, native_sql
from bench_dsl.workloads.registry import METRICS
from bench_dsl.workloads.sysbench.plugin import SysbenchWorkload
from bench_dsl.workloads.tpcc.plugin import TPCC_DEFAULT_MIX, TPCC_TRANSACTIONS, TpccWorkload

from ..conftest import ROOT, run_bench

SHIPPED = sorted([*ROOT.glob("examples/*.bench"), *ROOT.glob("scenarios/*.bench")])
GOLDEN = sorted((ROOT / "tests" / "golden").glob("*.bench"))


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: str(p.relative_to(ROOT)))
def test_shipped_files_validate(path: Path) -> None:
    sc = load(path, env={})
    assert sc.workload.transaction_names


DOC_EXAMPLES = re.findall(r"```bench\n(.*?)```", (ROOT / "docs" / "language.md").read_text(), re.DOTALL)


@pytest.mark.parametrize("text", DOC_EXAMPLES, ids=lambda t: re.search(r'scenario "([^"]*)"', t)[1])  # type: ignore[index]
def test_doc_examples_validate(text: str, tmp_path: Path) -> None:
    if text.startswith("# BENCH_DSL_PLUGINS="):  # one of plugins' kinds: checked where they are read, a process
        plugins = text.splitlines()[0].split("=", 1)[1]
        (f := tmp_path / "example.bench").write_text(text)
        r = run_bench("check", str(f), env={"BENCH_DSL_PLUGINS": plugins})
        assert r.returncode == 0, r.stderr
        return
    load("docs/language.md", text=text, env={})


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
    assert isinstance(sc.workload, SysbenchWorkload)
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
    assert isinstance(wl, CustomWorkload)
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


def _scenario(body: str, lets: str = "", env: dict[str, str] | None = None,
              workload: str = 'workload custom { transaction read { query "SELECT 1" } }') -> m.Scenario:
    return load("t.bench", text=f'{lets}\nscenario "t" {{\n{workload}\n{body}\n}}\n', env=env or {})


def _problems(body: str, lets: str = "", env: dict[str, str] | None = None,
              workload: str = 'workload custom { transaction read { query "SELECT 1" } }') -> str:
    with pytest.raises(ScenarioError) as e:
        _scenario(body, lets, env, workload)
    return e.value.render()


STEP = "ramp step { start 1 users  step +1 users  hold 10s  max 4 users }"


@pytest.mark.parametrize(("stop", "texts"), [
    ("tpm < 1000  tps plateau 5%", ["tpm < 1000", "tps plateau 5%"]),
    ("tpm < 1000\n tps plateau 5%", ["tpm < 1000", "tps plateau 5%"]),
    ("tpm < $floor  tps plateau 5%", ["tpm < $floor", "tps plateau 5%"]),
    ("error_rate > 1%  tps < 5", ["error_rate > 1%", "tps < 5"]),
    ("tps < 100  # comment between\n tps(read) > 5", ["tps < 100", "tps(read) > 5"]),
    ("tpm < 1000 tpm  qps < 10 qps for 5s  tps plateau 5%", ["tpm < 1000 tpm", "qps < 10 qps for 5s", "tps plateau 5%"]),
])
def test_a_rate_word_after_a_limit_is_a_unit_only_when_no_condition_follows(stop: str, texts: list[str]) -> None:
    sc = _scenario(f"{STEP}\nstop when {{ {stop} }}", lets="let floor = 1000")
    assert [c.text for c in sc.stop] == texts


def test_keywords_are_names_where_a_name_is_expected() -> None:
    sc = _scenario(f"""{STEP}
        server {{ max_connections = 100  start = 1  weight = 2  users = 3 }}
        setup {{ fill t rows 10 {{ id = sequence(1)  max = uniform(1, 9)  start = 2  weight = 3 }} }}
        stop when {{ p90 > 1s  max(read) > 2s  min > 1ms  tps < 5  max > 3s }}""")
    assert [s.name for s in sc.server_settings] == ["max_connections", "start", "weight", "users"]
    fill = sc.setup[0]
    assert isinstance(fill, m.Fill) and [n for n, _ in fill.columns] == ["id", "max", "start", "weight"]
    assert [c.metric.label() for c in sc.stop] == ["p90", "max(read)", "min", "tps", "max"]


def test_a_keyword_typo_is_still_a_syntax_error() -> None:
    with pytest.raises(ScenarioError) as e:
        load("t.bench", text='scenario "t" { ramp step { start 1 users  step +1 users  hold 1s  mux 4 users } }',
             env={})
    assert "did you mean 'max'?" in e.value.render()


def test_a_block_left_out_says_how_an_empty_one_is_written() -> None:
    with pytest.raises(ScenarioError) as e:
        load("t.bench", text='scenario "t" {\n  workload sysbench oltp_point_select\n  users 4\n}\n', env={})
    assert "t.bench:3:3" in e.value.render() and "written '{ }' when it holds nothing" in e.value.render()


def test_for_windows_must_be_able_to_fire() -> None:
    linear = _problems("ramp linear from 1 to 4 users over 10s\nduration 20s\nstop when { p90 > 1s for 30s }")
    assert "the window (30s) is longer than the run (20s): it could never fire" in linear
    short = _problems(f"{STEP}\nstop when {{ p90 > 1s for 999ms }}")
    assert "shorter than one sample" in short and "hint: for 1s or longer" in short
    sc = _scenario("users 2\nduration 10s\nstop when { p90 > 1s for 10s }")
    assert sc.stop[0].window == 10.0


def test_a_condition_keeps_its_text_and_shows_its_values() -> None:
    sc = load(ROOT / "scenarios/sysbench-step-saturation.bench", env={}, defines={"p90_limit": "250ms"})
    p90 = next(c for c in sc.stop if c.metric.transaction == "oltp_read_write")
    assert p90.text == "p90(oltp_read_write) > $p90_limit"
    assert p90.resolved == "p90(oltp_read_write) > 250ms" and p90.limit == 0.25
    sc = _scenario("users 2\nduration 10s\nstop when { tps < $t tps for $w  p99 > env(\"P99\", 1s)  error_rate > 1% }",
                   lets="let t = 100\nlet w = 5s", env={"P99": "20ms"})
    assert [c.resolved for c in sc.stop] == ["tps < 100 tps for 5s", "p99 > 20ms", "error_rate > 1%"]
    assert [c.text for c in sc.stop] == ['tps < $t tps for $w', 'p99 > env("P99", 1s)', "error_rate > 1%"]
    built = m.Condition("threshold", m.Metric("tps"), "<", 5.0, "tps", None, "tps < 5")
    assert built.resolved == "tps < 5"


def test_env_values_are_read_as_numbers_where_numbers_are_expected() -> None:
    body = 'users env("N", 4)\nduration env("D", 10s)\nstop when { p90 > $limit }'
    lets = 'let limit = env("LIMIT", 1s)'
    sc = _scenario(body, lets, env={"N": "16", "D": "1m", "LIMIT": "250ms"})
    assert sc.ramp == m.ConstantRamp(16, 60.0)
    assert sc.stop[0].limit == 0.25 and sc.stop[0].resolved == "p90 > 250ms"
    assert _scenario(body, lets).ramp == m.ConstantRamp(4, 10.0)  # unset: the defaults
    out = _problems(body, lets, env={"N": "lots", "D": "60", "LIMIT": "mysql://u:hunter2@db/x"})
    assert "users: the environment variable N holds 'lots', not a number" in out
    assert "duration must be a duration (the environment variable D holds '60')" in out
    assert "the environment variable LIMIT holds 'mysql://u:***@db/x', not a duration" in out
    assert "hunter2" not in out
    unset = _problems("users $n\nduration 10s", lets='let n = env("NOPE")')
    assert "users: the environment variable NOPE is not set and there is no default" in unset
    assert 'hint: give a default: env("NOPE", 16)' in unset


def test_a_target_that_is_not_mysql_is_a_scenario_error() -> None:
    body = 'target env("BENCH_DSN")\nusers 2\nduration 10s'
    out = _problems(body, env={"BENCH_DSN": "postgres://u:hunter2@db:5432/x"})
    assert "the environment variable BENCH_DSN holds a postgres:// address" in out and "hunter2" not in out
    assert "hint: bench-dsl runs against MySQL and MariaDB" in out
    unset = _scenario(body)
    assert (unset.target, unset.target_from) == (None, "env BENCH_DSN")  # the embedded throwaway server
    assert _scenario(body, env={"BENCH_DSN": "mariadb://db/x"}).target == "mariadb://db/x"


TPCC = """let warehouses = 10
scenario "tpcc saturation" {
  target env("BENCH_DSN")
  workload tpcc {
    warehouses = $warehouses
    mix { new_order 45%  payment 43%  order_status 4%  delivery 4%  stock_level 4% }
    keying_time = off          # optional, on|off
    procedures = on            # optional, on|off
    loader_connections = 4     # optional
    retries = 10               # optional
  }
  warmup 2m
  ramp step { start 32 users  step +32 users  settle 30s  hold 5m  max 512 users }
  stop when {
    p90(new_order) > 5s      p90(payment) > 5s      p90(order_status) > 5s
    p90(delivery) > 5s       p90(stock_level) > 20s
    cpu(server) > 80% for 60s
    nopm plateau 2%
    p90 kink 3x
  }
}
"""


def test_tpcc_contract() -> None:
    sc = load("tpcc.bench", text=TPCC, env={})
    assert sc.target is None and sc.target_from == "env BENCH_DSN"
    assert sc.workload == TpccWorkload(warehouses=10, mix=TPCC_DEFAULT_MIX, keying_time=False, procedures=True,
                                         loader_connections=4, retries=10)
    assert sc.workload.transaction_names == TPCC_TRANSACTIONS
    assert [c.metric.transaction for c in sc.stop[:5]] == list(TPCC_TRANSACTIONS)
    nopm = sc.stop[6]
    assert (nopm.kind, nopm.metric, nopm.limit, nopm.unit) == ("plateau", m.Metric("nopm"), 2.0, "%")
    assert sc.warnings == ()
    plain = load("t.bench", text='scenario "t" { workload tpcc { } users 2 duration 10s }', env={})
    assert plain.workload == TpccWorkload()


@pytest.mark.parametrize("text", [*(p.read_text() for p in SHIPPED), TPCC],
                         ids=[*(p.stem for p in SHIPPED), "tpcc-procedures"])
def test_each_workload_plugin_gives_the_lines_the_plan_shows(text: str) -> None:
    from bench_dsl.engine.plan import plan
    from bench_dsl.engine.plan_text import describe
    from bench_dsl.workloads.registry import plan_lines

    sc = load("t.bench", text=text, env={})
    lines = plan_lines(sc.workload)
    assert lines and describe(sc, plan(sc)).splitlines()[2:2 + len(lines)] == lines  # after the name and target


def test_tpcc_mix() -> None:
    wl = 'workload tpcc {{ mix {{ {} }} }}'
    sc = _scenario("users 2\nduration 10s", workload=wl.format("payment 40%  new_order 52%  delivery 4%  stock_level 4%"))
    assert isinstance(sc.workload, TpccWorkload)
    assert sc.workload.mix == (("new_order", 52.0), ("payment", 40.0), ("order_status", 0.0), ("delivery", 4.0),
                               ("stock_level", 4.0))
    assert [(w.severity, w.message) for w in sc.warnings] == [  # in the order of the file
        ("warning", "order_status is not in the mix: it is not run (TPC-C's minimum is 4%, clause 5.2.3)"),
        ("warning", "payment 40% is below TPC-C's minimum of 43% (clause 5.2.3)")]
    out = _problems("users 2\nduration 10s",
                    workload=wl.format("new_order 45%  payment 43%  order_status 4%  delivery 4%  stock_level 5.5%"))
    assert "the mix adds up to 101.5%, not 100%" in out
    out = _problems("users 2\nduration 10s", workload=wl.format("new_order 45%  new_order 55%"))
    assert "new_order is given twice in the mix" in out
    out = _problems("users 2\nduration 10s", workload="workload sysbench oltp_read_only { mix { x 100% } }")
    assert "a sysbench test runs one transaction: it has no mix" in out


def test_nopm_needs_a_new_order_transaction() -> None:
    custom = 'workload custom { transaction new_order { query "SELECT 1" } }'
    sc = _scenario(f"{STEP}\nstop when {{ nopm < 1000  nopm plateau 2% }}\nexpect {{ nopm > 10 nopm }}", workload=custom)
    assert [(c.metric, c.unit, c.limit) for c in (*sc.stop, *sc.expect)] == [
        (m.Metric("nopm"), "nopm", 1000.0), (m.Metric("nopm"), "%", 2.0), (m.Metric("nopm"), "nopm", 10.0)]
    out = _problems("users 2\nduration 10s\nexpect { nopm > 10 }", workload="workload sysbench oltp_read_only { }")
    assert "nopm counts new orders: the workload has no transaction 'new_order'" in out
    assert "tpm" in out.split("hint:")[1]


@pytest.mark.parametrize(("text", "workers"), [("", None), ("workers auto", None), ("workers 4", 4)])
def test_workers(text: str, workers: int | None) -> None:
    assert _scenario(f"users 2\nduration 10s\n{text}").workers == workers


def test_workers_must_be_a_positive_count() -> None:
    assert "workers must be at least 1" in _problems("users 2\nduration 10s\nworkers 0")
    assert "workers must be a whole number" in _problems("users 2\nduration 10s\nworkers 1.5")


def test_a_diagnostic_on_a_target_line_hides_the_password() -> None:
    text = 'scenario "x" {\n  target "mysql://bob:s3cret@127.0.0.1:port/db"\n  users 2  duration 5s\n}\n'
    with pytest.raises(ScenarioError) as info:
        load("pw.bench", text=text, env={})
    shown = info.value.render()
    assert "pw.bench:2:" in shown and "mysql://bob:***@127.0.0.1" in shown
    assert "s3cret" not in shown


def test_a_hint_that_quotes_the_file_hides_the_password() -> None:
    """The excerpt was redacted and the hint, which quotes the line to show it mended, was not (issue 38)."""
    text = 'scenario "x" {\n  target env(FZ_DSN, "mysql://u:secretpw@h/db")\n  users 2  duration 5s\n}\n'
    with pytest.raises(ScenarioError) as info:
        load("pw.bench", text=text, env={})
    shown = info.value.render()
    assert 'hint: env("FZ_DSN", "mysql://u:***@h/db")' in shown and "secretpw" not in shown, shown


def test_check_prints_warnings_and_still_passes(tmp_path: Path) -> None:
    f = tmp_path / "mix.bench"
    f.write_text('scenario "x" {\n  workload tpcc { warehouses = 1\n'
                 '    mix { new_order 47%  payment 40%  order_status 5%  delivery 4%  stock_level 4% } }\n'
                 '  users 2  duration 5s\n}\n')
    r = run_bench("check", str(f))
    assert r.returncode == 0, r.stderr
    assert "mix.bench:3:34: warning: payment 40% is below TPC-C's minimum of 43%" in r.stderr
    assert "ok (1 warning)" in r.stderr


def test_a_misspelt_sysbench_test_is_reported_once() -> None:
    text = ('scenario "x" {\n  workload sysbench oltp_read_wrte { tables = 2 }\n  users 8  duration 10s\n'
            '  stop when { p90(oltp_read_write) > 250ms }\n}\n')
    with pytest.raises(ScenarioError) as info:
        load("typo.bench", text=text, env={})
    messages = [d.message for d in info.value.diagnostics]
    assert messages == ["unknown sysbench test 'oltp_read_wrte'"]


BEYOND = "1" + "0" * 400  # no float holds it
TOO_LARGE = "1" + "0" * 300  # a float holds it, but not as 10^300 T in bytes


@pytest.mark.parametrize("body", [
    f"server {{ x = {BEYOND}K }}", f"server {{ x = {BEYOND} }}", f"vary {{ x = [1, {BEYOND}K] }}",
    f"server {{ x = {TOO_LARGE}T }}", f"vary {{ x = [1, {TOO_LARGE}T] }}", 'server { x = env("BIG") }',
    'vary { x = [1, env("BIG")] }', 'server { x = env("BIGT") }', f"seed {BEYOND}",
    f"ramp step {{ start 1 users  step x{BEYOND}  hold 1s  max 4 users }}", "duration $v",
])
def test_a_number_beyond_a_float_is_a_diagnostic_wherever_it_appears(body: str) -> None:
    """It was an OverflowError (exit 1) with a unit, an infinite value without one (issue 28)."""
    env = {"BIG": BEYOND, "BIGT": TOO_LARGE + "T"}
    with pytest.raises(ScenarioError) as info:
        load("t.bench", text=f'let v = {BEYOND}s\nscenario "t" {{\n'
                             f'workload custom {{ transaction read {{ query "SELECT 1" }} }}\n'
                             f'{"" if "duration" in body else "users 1  duration 10s"}\n'
                             f'{"users 1  " if "duration" in body else ""}{body}\n}}\n', env=env)
    d = info.value.diagnostics[0]
    assert d.span is not None and d.span.line in (1, 5) and d.hint, d
    assert "too large" in d.message


def test_a_number_beyond_a_float_given_with_d_or_varied_is_a_diagnostic(tmp_path: Path) -> None:
    f = tmp_path / "v.bench"
    f.write_text('let v = 1\nscenario "t" {\n  workload sysbench oltp_read_only { tables = 1 table_size = 100 }\n'
                 '  server { x = $v }\n  users 1  duration 10s\n}\n')
    r = run_bench("check", "-D", f"v={BEYOND}K", str(f))
    assert r.returncode == 2 and "too large a number" in r.stderr and "hint:" in r.stderr, r.stderr
    f.write_text(f.read_text().replace("server { x = $v }", f"vary {{ $v = [1, {BEYOND}K] }}"))
    r = run_bench("check", str(f))
    assert r.returncode == 2 and "v.bench:4:" in r.stderr and "hint:" in r.stderr, r.stderr


VARIED = ('let rows = 100\n# a comment{ff} with a form feed\nscenario "t" {{\n'
          '  workload sysbench oltp_read_only {{ tables = 1  table_size = $rows }}\n'
          '  vary {{ $rows = [100, 200] }}\n  users 1\n  duration 10s\n}}\n')


@pytest.mark.parametrize("brk", ["\f", "\v", "\x1c", "\x85", "\u2028", "\u2029"])
def test_a_line_is_ended_by_a_newline_only(brk: str) -> None:
    """A form feed (or another character str.splitlines breaks at) in a comment made a valid file with
    vary invalid ('with $x= : -D x= : unexpected end of file'), and errors after it point a line off."""
    sc = load("t.bench", text=VARIED.format(ff=brk), env={})
    assert sc.study is not None and [c.label for c in sc.study.configurations] == ["$rows=100", "$rows=200"]
    bad = VARIED.format(ff=brk).replace("duration 10s", "duration -10s")
    with pytest.raises(ScenarioError) as info:
        load("t.bench", text=bad, env={})
    assert info.value.render().splitlines()[:3] == [
        "t.bench:7:12: error: duration must be longer than 0", "     7 |   duration -10s", "       |            ^^^^"]
    with pytest.raises(ScenarioError) as info:  # lines ended by it: the comment on the first runs on to the end
        load("t.bench", text=("# a study\n" + VARIED.format(ff="")).replace("\n", brk), env={})
    assert f"hint: U+{ord(brk):04X} in a comment (line 1) ends no line" in info.value.render()
    with pytest.raises(ScenarioError) as info:
        load("t.bench", text=VARIED.format(ff="").replace("\n", brk), env={})
    assert f"hint: U+{ord(brk):04X} " in info.value.render() and "ends no line" in info.value.render()


@pytest.mark.parametrize("end", ["\r", "\r\n"])
def test_cr_and_crlf_line_ends_are_lines(end: str) -> None:
    """A file with CR-only line ends was one line, so that its leading comment swallowed it."""
    text = VARIED.format(ff="").replace("\n", end)
    sc = load("t.bench", text=text, env={})
    assert sc.study is not None and len(sc.study.configurations) == 2
    with pytest.raises(ScenarioError) as info:
        load("t.bench", text=text.replace("users 1", "users 0"), env={})
    assert info.value.render().splitlines()[:2] == ["t.bench:6:9: error: users must be at least 1", "     6 |   users 0"]


def test_a_study_plans_each_configuration_from_one_parse(monkeypatch: pytest.MonkeyPatch) -> None:
    """vary { $a = [1..1000] } took 15 s to plan: each configuration parsed the whole file again, and
    built every phase of its ramp to add up its time (issue 28)."""
    from lark import Lark

    from bench_dsl.engine import plan as planner
    from bench_dsl.language.parser import parse
    from bench_dsl.study import plan as study

    parse.cache_clear()
    files, plans = [], []
    real_parse, real_plan = Lark.parse, planner.plan
    monkeypatch.setattr(Lark, "parse", lambda self, text, start=None, on_error=None:
                        (files.append(start) if start == "start" else None) or real_parse(self, text, start, on_error))
    monkeypatch.setattr(planner, "plan", lambda *a, **k: plans.append(a) or real_plan(*a, **k))
    values = ", ".join(str(n) for n in range(1, 201))
    text = ('let a = 1\nscenario "t" {\n  workload sysbench oltp_read_only { tables = 1  table_size = 1000 }\n'
            f'  vary {{ $a = [{values}] }}\n  ramp step {{ start $a users  step +1 users  hold 1s  max 10000 users }}\n}}\n')
    sc = load("t.bench", text=text, env={})
    out = study.describe(sc, [], {})
    assert files == ["start"] and plans == []
    assert "study: 200 configurations" in out and "c200 $a=200" in out
    assert planner.planned_seconds(study.scenario_for(sc, sc.study.configurations[9], {})) == 9991  # type: ignore[union-attr]


@pytest.mark.parametrize("ramp", [
    "users 3  duration 10s", "warmup 5s  users 3  duration 10.5s", STEP, "ramp step { start 2 users step x1.5 settle 2s hold 3s max 40 users }",
    "ramp linear from 1 to 20 users over 30s  duration 1m", "warmup 1s  ramp linear from 1 to 20 users over 30s",
])
@pytest.mark.parametrize(("scale", "max_steps"), [(1.0, None), (0.1, None), (1.0, 2)])
def test_planned_seconds_is_what_the_plan_adds_up_to(ramp: str, scale: float, max_steps: int | None) -> None:
    from bench_dsl.engine.plan import plan, planned_seconds

    sc = _scenario(ramp)
    assert planned_seconds(sc, scale, max_steps) == plan(sc, scale, max_steps).seconds


def test_a_long_ramp_is_planned_by_its_ends_and_a_line_for_the_steps_between() -> None:
    from bench_dsl.engine.plan import plan
    from bench_dsl.engine.plan_text import describe

    sc = _scenario("ramp step { start 1 users  step +1 users  settle 1s  hold 2s  max 10000 users }")
    lines = describe(sc, plan(sc)).splitlines()
    assert len(lines) < 30
    assert "  0:00:08  steps 4-9997 of 10000: alike, +1 users, a 1s settle (not measured), a 2s hold (measured) each" in lines
    assert lines[-3:-1] == ["  8:19:57  step 10000/10000 hold  10000 users             2s  measured",
                            "  8:19:59  end (at the latest)"]


def test_a_vary_given_twice_is_named_as_written() -> None:
    out = _problems("users 1  duration 10s\nvary { $a = [1, 2] }\nvary { $a = [3, 4] }", lets="let a = 1")
    assert "error: 'vary' is given more than once" in out


def test_a_byte_that_is_not_utf8_in_a_cr_only_file_is_found_on_its_line(tmp_path: Path) -> None:
    f = tmp_path / "latin.bench"
    f.write_bytes(b'scenario "x" {\r  users 1\r  duration 10s \xe9\r}\r')
    with pytest.raises(ScenarioError) as info:
        load(f, env={})
    assert info.value.render().splitlines()[:2] == [f"{f}:3:16: error: byte 0xe9 is not UTF-8 text",
                                                    "     3 |   duration 10s \ufffd"]


def test_a_let_crossed_with_settings_is_checked_once_per_value(monkeypatch: pytest.MonkeyPatch) -> None:
    from bench_dsl.language import validate
    checks: list[bool] = []
    real = validate.check
    monkeypatch.setattr(validate, "check", lambda *a, **k: checks.append(k.get("study", True)) or real(*a, **k))
    values = ", ".join(str(n) for n in range(100, 400))
    sc = _scenario(f"users 1  duration 10s\nvary {{ $rows = [10, 20]  innodb_io_capacity = [{values}] }}",
                   lets="let rows = 10", workload="workload sysbench oltp_read_only { table_size = $rows }")
    assert sc.study is not None and len(sc.study.configurations) == 600
    assert checks.count(False) == 2


def test_a_configuration_takes_the_parts_that_read_none_of_its_lets_from_the_files_check() -> None:
    """A configuration's check takes the parts of the file's own check that read none of the lets it
    sets (issue 38: 1,000 settings checked again for each of 1,000 values): a part that reads one,
    even through another let, is checked with the configuration's value."""
    from bench_dsl.study.plan import scenario_for

    sc = _scenario("users 1  duration 10s\nvary { $a = [1, 2] }\nserver { max_connections = $b  innodb_io_capacity = 300 }",
                   lets="let a = 10\nlet b = $a")
    assert sc.study is not None
    confs = [scenario_for(sc, c, {}) for c in sc.study.configurations]
    assert [[(s.name, s.value) for s in c.server_settings] for c in confs] == [
        [("max_connections", 1), ("innodb_io_capacity", 300)], [("max_connections", 2), ("innodb_io_capacity", 300)]]
    with pytest.raises(ScenarioError) as info:
        _scenario("users 1  duration 10s\nvary { $a = [1%, 200%] }\nserver { innodb_io_capacity = 300 }\n"
                  "stop when { error_rate > $b }", lets="let a = 10%\nlet b = $a")
    assert "with $a=200%: error_rate" in info.value.render(), info.value.render()


@pytest.mark.parametrize("quoted", [r'"\q\q\q\q :x"', r'"SELECT \q :x"', r'"\\ \n \" \q\\\q :x"', '"""SELECT \\q :x"""'])
def test_an_undefined_parameter_is_pointed_at_whatever_the_escapes_before_it(quoted: str) -> None:
    """An unknown escape (\\q) is kept as written, two characters in the value as in the file: the
    caret walk took it for one (issue 38: an IndexError on four of them, the caret a column off per one)."""
    out = _problems("users 1  duration 10s", workload=f"workload custom {{ transaction read {{ query {quoted} }} }}")
    first, line, caret = out.splitlines()[:3]
    assert "query parameter :x is not defined" in first
    assert caret.index("^") - caret.index("|") == line.index(":x") - line.index("|") and caret.endswith(" ^^"), out


@pytest.mark.parametrize("before", ["\x1b[2J", "\u202e\u2066", "\x7f\x85", "漢字カナ", "\u200b\u2060", "e\u0301", "\t漢\x01"])
def test_the_caret_stands_under_the_mistake_on_the_line_as_the_terminal_shows_it(before: str) -> None:
    """Control and bidirectional characters are shown escaped (\\x1b: four columns), a CJK character
    takes two columns and a zero-width one none: the caret was placed counting one each, up to 9
    columns off (issue 38)."""
    from rich.cells import cell_len

    out = _problems(f'output "{before}"  users 1  duration 10q')
    line, caret = out.splitlines()[1:3]
    assert "\x1b" not in line and "\u202e" not in line
    shown, under = line.split("| ", 1)[1], caret.split("| ", 1)[1]
    assert cell_len(under.replace("\t", " ")[:under.index("^")]) == cell_len(shown[:shown.index("10q")].replace("\t", " "))
    assert under.endswith(" ^^^")


@pytest.mark.parametrize("name", [d.name for d in METRICS if d.condition and d.arg == "none"])
def test_a_metric_that_takes_no_name_says_so_when_given_one(name: str) -> None:
    """`saturation(read)` printed `error: ` with an empty message and no hint (issue 38): a declaration
    without words of its own for a wrong (arg) has the default ones."""
    out = _problems(f"users 1  duration 10s\nexpect {{ {name}(new_order) >= 8 }}",
                    workload='workload custom { transaction new_order { query "SELECT 1" } }')
    first = out.splitlines()[0]
    assert f"{name} " in first and "takes no (" in first, out
    assert re.search(r"\n  hint: \S", out), out


def test_an_error_in_a_d_value_shows_the_value_not_the_file() -> None:
    """An error in a -D value showed line 1 of the file under a caret, and a hint made of the file's
    text at the value's columns (issue 38)."""
    text = 'let x = 1\nscenario "t" {\n  workload custom { transaction read { query "SELECT 1" } }\n  users $x  duration 10s\n}\n'
    with pytest.raises(ScenarioError) as info:
        load("d.bench", {"x": "env(FOO, 12345)"}, text=text, env={})
    assert info.value.render().splitlines() == [
        "-D x:1:5: error: the name of an environment variable is written in double quotes",
        "     1 | env(FOO, 12345)", "       |     ^^^", '  hint: env("FOO", 12345)']


def test_a_varied_value_is_pointed_at_in_the_vary() -> None:
    """`vary { $x = [$later] }` named a -D that was never given, at line 1 of the file (issue 38)."""
    text = ('let x = 1\nscenario "t" {\n  workload custom { transaction read { query "SELECT 1" } }\n'
            '  users $x  duration 10s\n  vary { $x = [2, $later] }\n}\nlet later = 2\n')
    with pytest.raises(ScenarioError) as info:
        load("v.bench", text=text, env={})
    assert info.value.render().splitlines() == [
        "v.bench:5:19: error: with $x=$later: $later is not defined", "     5 |   vary { $x = [2, $later] }",
        "       |                   ^^^^^^", "  hint: let later is declared further down: declare it before its use"]


def test_too_large_is_said_of_large_values_only() -> None:
    """"Too large" was said of `rate 0 nopm` (0 x an infinite tps per nopm, when new_order's share is
    next to none) and of a count of -10^400 (issue 38)."""
    tiny = "0." + "0" * 319 + "1"
    out = _problems("rate 0 nopm  users max 4  duration 10s", workload=(
        f'workload custom {{ transaction new_order weight {tiny} {{ query "SELECT 1" }}  transaction b {{ query "SELECT 1" }} }}'))
    assert "rate must be at least 1 tpm" in out and "too large" not in out, out
    out = _problems("users 1  duration 10s", workload=f"workload sysbench oltp_read_only {{ tables = -{'9' * 400} }}")
    assert "is a number too far below 0" in out and "too large" not in out, out
    out = _problems("users 1  duration 10s", workload='workload sysbench oltp_read_only { tables = env("T", 1) }',
                    env={"T": "-" + "9" * 400})
    assert "tables must be at least 1" in out and "too large" not in out, out


def test_a_tpcc_share_is_at_most_100_percent() -> None:
    """Two shares of 10^308% made a mix that "adds up to inf%" (issue 38)."""
    big = "1" + "0" * 307
    out = _problems("users 1  duration 10s", workload=f"workload tpcc {{ mix {{ new_order {big}%  payment {big}% }} }}")
    assert "a share of the mix is at most 100%" in out and "inf" not in out, out


def test_numbers_are_written_as_a_person_writes_them_in_messages_and_plans() -> None:
    """`p1e-06`, `4.9999999999999996e-06s` in messages, `2.592e+06s` and `x1` for x1.0000001 in plans
    (issue 38): one way to write a number, with ten significant digits and no exponent where digits read."""
    from bench_dsl.engine.plan import plan
    from bench_dsl.engine.plan_text import describe

    out = _problems("users 1  duration 10s\nstop when { p0.000001 > 5  p99 > 1s for 100.00000000000001ms }")
    assert "p0.000001 is a time" in out and "a 'for' window of 0.1s" in out and "e-0" not in out, out
    sc = _scenario("warmup 600h\nramp step { start 1 users  step x1.0000001  hold 1s  max 3 users }")
    text = describe(sc, plan(sc))
    assert "x1.0000001 users a step" in text and "2160000s" in text and "e+" not in text, text
    sc = _scenario("rate step { start 1 tpm  step x1.0000001  hold 1s  max 1.000001 tpm }  users max 2")
    steps = [line.split("hold", 1)[1].split(",")[0] for line in describe(sc, plan(sc)).splitlines() if " hold " in line]
    assert len(steps) == len(set(steps)) >= 5, steps


def test_a_whole_number_is_suggested_within_its_bounds() -> None:
    """users 0.4 was told "e.g. 0", below the least of 1 (issue 38)."""
    out = _problems("users 0.4  duration 10s")
    assert "users must be a whole number" in out and "hint: e.g. 1" in out, out


@pytest.mark.parametrize(("written", "meant"), [("usеrs 1  duration 10s", "users"), ("users 1  durаtion 10s", "duration"),
                                                ("users 1  duration 10s  ѕeed 4", "seed")])
def test_a_keyword_with_a_letter_of_another_script_is_named_as_such(written: str, meant: str) -> None:
    """`usеrs` with a Cyrillic е was "unexpected 'us'", and the keywords suggested left out users (issue 38)."""
    out = _problems(written)
    word = next(w for w in written.split() if not w.isascii())
    first, _, caret, hint = out.splitlines()[:4]
    assert f"error: '{word}' holds" in first and "a letter drawn like a Latin one" in first, out
    assert caret.endswith("^" * len(word)) and f"did you mean '{meant}'?" in hint, out


@pytest.mark.parametrize(("body", "said"), [
    ("users 1  duration 10s\nserver { innodb_buffer_pool_size = -1G }", "the server takes no negative size here"),
    ("users 1  duration 10s\nserver { max_connections = -5 }", "the server takes no negative number here"),
    ("users 1  duration 10s\nserver { innodb_io_capacity = 99999999999999999999999 }",
     "the server's numbers are at most 18446744073709551615 (2^64 - 1)"),
    ("rate 10 tps  users max 2  duration 10s\nstop when { p99 > 1s for 1h }",
     "the window (3600s) is longer than the run (10s): it could never fire"),
    ("rate step { start 10 tps  step +10 tps  hold 5s  max 30 tps }  users max 2\nstop when { p99 > 1s for 6s }",
     "the window (6s) is longer than each step's hold (5s)"),
    ("users 2  duration 10s\nexpect { saturation >= -5 users }", "saturation is a number of users: -5 can never be"),
    ("rate 10 tps  users max 2  duration 10s\nexpect { saturation >= -5 tps }", "-5 tps can never be"),
    ("ramp step { start 1 users  step +1 users  settle 720h  hold 720h  max 10000 users }",
     "the run would last 600000 days; a run lasts at most 30 days"),
    ("users 2  duration 0." + "0" * 319 + "1s", "duration must be at least 1ms"),
])
def test_values_no_run_can_have_are_refused(body: str, said: str) -> None:
    """Each was accepted (issue 38): a server number past 64 bits or a negative size, a `for` window
    longer than a rate run, a saturation point below 0, a plan of 1,643 years, a duration of 1e-320 s
    planned as a second."""
    assert said in _problems(body)


def test_a_server_number_of_64_bits_is_taken() -> None:
    sc = _scenario("users 1  duration 10s\nserver { max_connections = 18446744073709551615 }")
    assert sc.server_settings[0].value == 2**64 - 1


def test_a_configuration_checks_its_conditions_again_when_what_they_read_of_the_load_changes() -> None:
    """Conditions read the load's kind, and a `for` window the run's length: a configuration whose let
    sets the users alone takes them as checked, one that shortens the run under a window does not."""
    assert _scenario("users $u  duration 10s\nvary { $u = [1, 2] }\nstop when { p99 > 1s for 5s }", lets="let u = 1")
    out = _problems("users 1  duration $d\nvary { $d = [20s, 5s] }\nstop when { p99 > 1s for 10s }", lets="let d = 20s")
    assert "with $d=5s: the window (10s) is longer than the run (5s)" in out, out


def _weights(bad: str, at: int = 737, places: int = 30) -> str:
    values = ", ".join(bad if i == at else str(i) for i in range(1, 1_001))
    return ('let u = 1\nscenario "t" {\n  workload custom {\n'
            + "".join(f'    transaction t{i} weight $u {{ query "SELECT 1" }}\n' for i in range(places))
            + f"  }}\n  users 1  duration 10s\n  vary {{ $u = [{values}] }}\n}}\n")


def test_a_value_no_place_takes_in_configuration_737_of_1000_is_said_at_each_place() -> None:
    """The places that read a let are checked once per distinct value for all configurations (1,500
    `weight $u` over 1,000 values took 15 s): a value one of them refuses is still said, at every place,
    for the configuration that gives it, and for no other."""
    with pytest.raises(ScenarioError) as info:
        load("t.bench", text=_weights("0"), env={})
    said = [(d.message, d.span.line, d.span.col) for d in info.value.diagnostics if d.span is not None]
    assert said == [("with $u=0: a weight must be larger than 0", 4 + i, 26 + len(str(i))) for i in range(30)]


def _said_by_a_whole_check(text: str, monkeypatch: pytest.MonkeyPatch) -> tuple[list[object], list[object]]:
    """The diagnostics of `text`, and those of a check that takes no part as it was for a configuration
    that reads its lets (the check before places were checked once per value)."""
    from bench_dsl.language import configurations

    def said() -> list[object]:
        try:
            load("t.bench", text=text, env={})
        except ScenarioError as err:
            return [(d.message, d.span, d.hint, d.severity) for d in err.diagnostics]
        return []

    first = said()
    monkeypatch.setattr(configurations.Parts, "_quiet", lambda self, c, key, places: False)
    return first, said()


def _study(block: str, first: str, unit: str, bad: str, length: str = "10s", lets: str = "") -> str:
    values = ", ".join(bad if i == 7 else f"{i}{unit}" for i in range(1, 40))
    return (f'let u = {first}\n{lets}scenario "t" {{\n  workload custom {{ transaction read {{ query "SELECT 1" }} }}\n'
            f"  users 1  duration {length}\n  vary {{ $u = [{values}] }}\n{block}}}\n")


def _rated(bad: str, rate: str = "1000 nopm", new: str = "", other: str = "$u", lets: str = "") -> str:
    """A rate in new orders reads new_order's share of the mix, which $u's weight sets."""
    values = ", ".join(bad if i == 7 else str(i) for i in range(1, 40))
    return (f'let u = 1\n{lets}scenario "t" {{\n  workload custom {{\n    transaction new_order {new} {{ query "SELECT 1" }}\n'
            + "".join(f'    transaction t{i} weight {other} {{ query "SELECT 1" }}\n' for i in range(20))
            + f"  }}\n  rate {rate}  users max 64  duration 10s\n  vary {{ $u = [{values}] }}\n}}\n")


def _lengths(bad: str, entry: str = "p99 > 5ms for 5s", load: str = "users 1  duration $d", lets: str = "") -> str:
    """Windows that read no let, checked against a run's length (or a step's hold) that $d sets."""
    values = ", ".join(bad if i == 17 else f"{i}s" for i in range(10, 49))
    return (f'let d = 10s\n{lets}scenario "t" {{\n  workload custom {{ transaction read {{ query "SELECT 1" }} }}\n'
            f"  {load}\n  vary {{ $d = [{values}] }}\n  stop when {{\n" + f"    {entry}\n" * 20 + "  }\n}\n")


@pytest.mark.parametrize("text", [
    _lengths("3s"), _lengths("5s", "p99 > 5ms for 6s"), _lengths("3s", "error_rate > 200% for 5s"),
    _lengths("3s", "p99 > 5ms for $w", lets="let w = 5s\n"), _lengths("3s", "p99 > 5ms for 0.5s"),
    _lengths("3s", load="ramp step { start 1 users  step +1  settle 1s  hold $d  max 3 users }"),
    _lengths("3s", load="ramp linear { from 1 to 4 users over $d }"),
    _rated("1000000000000"), _rated("1000000000000", "1000 nopm\n  warmup 5s rate linear from 1 to 1000"),
    _rated("-1", "1000 tps"),
    # the share from the places' values, not a built workload: new_order's own weight, through a let, in %
    _rated("0.000000000001", new="weight $u", other="1"), _rated("100", "500000 nopm", new="weight 1", other="$u"),
    _rated("0.000000000001", new="weight $w", other="1", lets="let w = $u\n"),
    _rated("0.000000000001", new="weight $u", other='env("BENCH_UNSET_W", 5)'),
    _rated("0.0000000001%", new="weight $u", other="1%").replace("str(i)", "f'{i}%'"),
    _weights("-1"), _weights("5ms"), _weights('"x"'), _weights("0", at=1),
    _weights("-1").replace("weight $u", "retry $u on deadlock"),
    _weights("1.5").replace("weight $u", "retry $u on deadlock"),
    _weights("0").replace("weight $u", "weight $w").replace("let u = 1", "let u = 1\nlet w = $u"),
    _weights("0").replace("weight $u", 'weight env("BENCH_UNSET_W", $u)'),
    _weights("-5").replace("weight $u {", '{ let x = uniform(0, $u)').replace('"SELECT 1"', '"SELECT :x"'),
    *(_study("  stop when {\n" + f"    {entry}\n" * 20 + "  }\n", first, unit, bad, length)
      for entry, first, unit, bad, length in [("p99 > $u", "1ms", "ms", "5", "10s"),
                                              ("error_rate > $u", "1%", "%", "200%", "10s"),
                                              ("p99 > 5ms for $u", "1s", "s", "0.5s", "60s"),
                                              ("p99 > 5ms for $u", "1s", "s", "61s", "60s")]),
    # a server's settings are places; log_bin is read again with the replicas
    *(_study("  server {\n" + f"    {entry}\n" * 20 + "  }\n", first, unit, bad)
      for entry, first, unit, bad in [("max_connections = $u", "1", "", '"x"'),
                                      ("innodb_buffer_pool_size = $u", "128M", "M", '"big"'),
                                      ("innodb_flush_log_at_trx_commit = $u", "1", "", "7"),
                                      ('max_connections = env("BENCH_UNSET_W", $u)', "1", "", '"x"')]),
    'let u = ON\nscenario "t" {\n  workload custom { transaction read { query "SELECT 1" } }\n  users 1  duration 10s\n'
    '  vary { $u = [ON, OFF] }\n  server {\n    replicas = 1\n    log_bin = $u\n' + "    max_connections = 10\n" * 5
    + "  }\n}\n",
    _study("  setup {\n" + "".join(f"    fill t{i} rows $u {{ id = sequence($u) }}\n" for i in range(20)) + "  }\n",
           "1", "", "0"),
    'let u = 1\nlet d = 10s\nscenario "t" {\n  workload custom {\n'
    + "".join(f'    transaction t{i} weight $u retry $u on deadlock {{ query "SELECT 1" }}\n' for i in range(20))
    + "  }\n  users 1  duration 100s\n  vary { $u = [1, 0, 2.5]  $d = [1s, 10s, 200s] }\n  stop when {\n"
    + "    p99 > 5ms for $d\n" * 20 + "  }\n}\n",
])
def test_a_study_says_what_a_whole_check_of_each_configuration_says(text: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Same messages, places and order as when every configuration checked every place again."""
    first, whole = _said_by_a_whole_check(text, monkeypatch)
    assert whole and first == whole


def test_a_configuration_found_valid_place_by_place_runs_its_own_values() -> None:
    """Its scenario is built when a run asks for it, with the configuration's values, not the file's;
    its plan reads its own load."""
    from bench_dsl.engine.plan import planned_seconds
    from bench_dsl.study.plan import scenario_for

    sc = load("t.bench", text=_weights("5000"), env={})
    assert sc.study is not None
    built = scenario_for(sc, sc.study.configurations[736], {})
    assert isinstance(built.workload, CustomWorkload) and {t.weight for t in built.workload.transactions} == {5000.0}
    assert isinstance(sc.configured[(("u", "5000"),)], m.Deferred) and planned_seconds(built) == 10
