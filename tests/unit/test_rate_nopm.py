"""A rate asked in a throughput the workload declares (TPC-C's nopm): converted to the rate of all
transactions through the scenario's mix, said as asked and as scheduled, and the mistakes refused."""

from __future__ import annotations

import pytest

from bench_dsl.core.errors import ScenarioError
from bench_dsl.engine.plan import plan
from bench_dsl.engine.plan_text import describe
from bench_dsl.engine.profiles.registry import profile_of
from bench_dsl.engine.scenario_file import load
from bench_dsl.language import model as m
from bench_dsl.workloads.plugin import mix_share

# committed new orders are 45% of the transactions, less the 1% of them rolled back on purpose
NEW_ORDERS = 0.45 * 0.99


def _tpcc(rate: str, workload: str = "warehouses = 1", more: str = "users max 32\n  duration 10s") -> m.Scenario:
    return load("r.bench", text=f"""scenario "tpcc rate" {{
  workload tpcc {{ {workload} }}
  {rate}
  {more}
}}""", env={})


def _said(text: str) -> str:
    with pytest.raises(ScenarioError) as err:
        load("bad.bench", text=text, env={})
    return str(err.value)


def test_a_nopm_rate_is_the_rate_of_all_transactions_through_the_mix() -> None:
    sc = _tpcc("rate 20000 nopm")
    r = sc.ramp
    assert isinstance(r, m.RateLoad) and r.shape == "fixed" and r.unit == "nopm"
    assert r.start == pytest.approx(20000 / 60 / NEW_ORDERS) and r.end == r.start  # 748.2 tps
    assert r.counted == pytest.approx(NEW_ORDERS) and r.asked(r.start) == pytest.approx(20000)
    (hold,) = plan(sc).phases
    assert hold.rate == pytest.approx(748.22, abs=0.01) and hold.users == 32
    text = describe(sc, plan(sc))
    assert "20000 nopm (748.2 tps) for 10s; nopm counts 44.55% of the transactions the mix runs" in text
    assert profile_of(r).load(hold) == "20000 nopm (748.2 tps), 32 users at most"  # the run's log says it so


def test_the_scenarios_own_mix_sets_the_share() -> None:
    r = _tpcc("rate 6000 nopm", "mix { new_order 50%  payment 43%  order_status 4%  delivery 2%  stock_level 1% }").ramp
    assert isinstance(r, m.RateLoad) and r.counted == pytest.approx(0.5 * 0.99)
    assert r.start == pytest.approx(6000 / 60 / (0.5 * 0.99))


def test_a_nopm_step_ramp_steps_in_nopm() -> None:
    sc = _tpcc("rate step { start 10000 nopm step +10000 nopm settle 1s hold 5s max 40000 nopm }",
               more="users max 64 queue")
    r = sc.ramp
    assert isinstance(r, m.RateLoad) and r.shape == "step" and r.step_count() == 4
    assert [round(r.asked(x), 6) for x in r.rates()] == [10000, 20000, 30000, 40000]
    holds = [ph.rate for ph in plan(sc).phases if ph.kind == "hold"]
    assert holds == pytest.approx([n / 60 / NEW_ORDERS for n in (10000, 20000, 30000, 40000)])
    text = describe(sc, plan(sc))
    assert "10000 nopm (374.1 tps), then +10000 nopm a step up to 40000 nopm (1496.4 tps) (4 steps)" in text
    doc = r.to_json()
    assert doc["unit"] == "nopm" and doc["counted_pct"] == pytest.approx(44.55)
    assert doc["asked"] == {"start": 10000, "end": 40000, "steps": [10000, 20000, 30000, 40000]}
    assert doc["scheduled_tps"]["steps"] == pytest.approx(holds)  # type: ignore[index]
    multiplied = _tpcc("rate step { start 5000 nopm step x2 hold 5s max 20000 nopm }", more="users max 64").ramp
    assert [round(multiplied.asked(x)) for x in multiplied.rates()] == [5000, 10000, 20000]  # type: ignore[union-attr]


def test_a_linear_nopm_rate_and_its_plain_numbers() -> None:
    # `from 6000 to 12000 nopm`: the plain number is in the load's unit, as `from 100 to 5000 tps` is in tps
    sc = _tpcc("warmup 5s rate 3000 nopm\n  rate linear from 6000 to 12000 nopm over 10s poisson",
               more="users max 32\n  duration 20s")
    r = sc.ramp
    assert isinstance(r, m.RateLoad) and r.poisson and r.unit == "nopm"
    assert (r.asked(r.start), r.asked(r.end)) == pytest.approx((6000, 12000))
    assert r.asked(r.warmup_from) == pytest.approx(3000)  # type: ignore[arg-type]
    warmup, ramp, hold = plan(sc).phases
    assert warmup.rate == warmup.rate_end == pytest.approx(3000 / 60 / NEW_ORDERS)
    assert ramp.rate_end == hold.rate == pytest.approx(12000 / 60 / NEW_ORDERS)
    assert "6000 -> 12000 nopm (224.5 -> 448.9 tps) over 10s" in describe(sc, plan(sc))


def test_rates_in_transactions_keep_tps() -> None:
    r = _tpcc("rate 60000 tpm").ramp
    assert isinstance(r, m.RateLoad) and (r.unit, r.start, r.tps_per_unit, r.counted) == ("tps", 1000.0, 1.0, 1.0)


def test_a_custom_workload_with_new_order_schedules_by_its_weights() -> None:
    sc = load("c.bench", text="""scenario "c" {
      workload custom {
        transaction new_order weight 1 { query "SELECT 1" }
        transaction other weight 3 { query "SELECT 2" }
      }
      rate 600 nopm
      users max 8
      duration 5s
    }""", env={})
    assert isinstance(sc.ramp, m.RateLoad) and sc.ramp.start == pytest.approx(600 / 60 / 0.25)


def test_mix_share() -> None:
    mix = {"a": 45.0, "b": 55.0}
    assert mix_share(mix, "a") == pytest.approx(0.45) and mix_share(mix, None) == 1.0
    assert mix_share(mix, "a", {"a": 0.01}) == pytest.approx(0.4455)
    assert mix_share(mix, None, {"a": 0.01}) == pytest.approx(0.9955)
    assert mix_share({"a": 0.0}, "a") is None and mix_share(mix, "c") == 0.0


@pytest.mark.parametrize(("rate", "workload", "said"), [
    ("rate 20000 nopm", "keying_time = on",
     "keying_time = on paces each terminal by its keying and think times (a closed loop); an open-loop rate "
     "paces the transactions itself"),
    ("rate 20000 nopm", "mix { new_order 0%  payment 88%  order_status 4%  delivery 4%  stock_level 4% }",
     "a rate in nopm: none of the transactions the mix runs counts toward nopm (new_order has no share of it)"),
    ("rate step { start 10000 nopm step +100 tps hold 5s max 20000 nopm }", "warehouses = 1",
     "step is in tps, the load's first rate in nopm: a load's rates are in one unit"),
    ("warmup 5s rate 100 tps\n  rate 20000 nopm", "warehouses = 1",
     "rate is in nopm, the load's first rate in tps: a load's rates are in one unit"),
    ("rate 5000 qps", "warehouses = 1", "rate must be a rate of transactions, not qps"),
    ("rate 100000000000 nopm", "warehouses = 1", "rate must be at most 10000000 tps"),
])
def test_mistakes_are_said(rate: str, workload: str, said: str) -> None:
    text = f"""scenario "bad" {{
  workload tpcc {{ {workload} }}
  {rate}
  users max 32
  duration 10s
}}"""
    out = _said(text)
    assert said in out, out
    assert "hint:" in out


def test_keying_time_is_refused_with_a_hint() -> None:
    out = _said("""scenario "bad" {
  workload tpcc { keying_time = on }
  rate 20000 nopm
  users max 32
  duration 10s
}""")
    assert "keying_time = off with a rate, or users N for terminals that key and think" in out


def test_nopm_without_new_order_is_said_where_nopm_is_written() -> None:
    out = _said("""scenario "bad" {
  workload custom { transaction t { query "SELECT 1" } }
  warmup 5s rate linear from 100 to 2000
  rate 2000 nopm
  users max 8
  duration 5s
}""")
    assert "bad.bench:4:8: error: a rate in nopm: nopm counts new orders: the workload has no transaction " \
           "'new_order'" in out
    assert out.count("error:") == 1, out  # said once, not at each rate
