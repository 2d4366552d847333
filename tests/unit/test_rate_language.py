"""An open-loop rate in the language: the issue's examples as written, what they plan, and the
mistakes a person makes with a rate, each said with its place and a hint."""

from __future__ import annotations

import pytest

from bench_dsl.core.errors import ScenarioError
from bench_dsl.engine.plan import plan
from bench_dsl.engine.plan_text import describe
from bench_dsl.engine.scenario_file import load
from bench_dsl.language import model as m

from ..conftest import ROOT

STEADY = """
# a linear rate ramp, then a fixed rate with Poisson arrivals (default: evenly spaced)
scenario "steady rate" {
  workload custom { transaction t { query "SELECT 1" } }
  warmup 10s rate linear from 100 to 5000 tps
  rate 5000 tps poisson
  users max 64
  duration 30s
}
"""


def test_the_rate_saturation_example() -> None:
    sc = load(ROOT / "examples/rate-saturation.bench", env={})
    assert sc.ramp == m.RateLoad("step", 2000.0, 60000.0, m.Pool(256, 0), add=2000.0, settle=2.0, hold=10.0)
    assert [c.text for c in sc.stop] == ["p99 > 10ms", "dropped > 1%", "achieved < 95%"]
    dropped, achieved = sc.stop[1:]
    assert (dropped.metric.name, dropped.limit) == ("dropped", 1.0)
    assert (achieved.metric.name, achieved.op, achieved.limit) == ("achieved", "<", 95.0)
    p = plan(sc)
    holds = [ph for ph in p.phases if ph.kind == "hold"]
    assert p.steps == 30 and [ph.rate for ph in holds][:3] == [2000.0, 4000.0, 6000.0] and holds[-1].rate == 60000
    assert all(ph.users == 256 for ph in p.phases)
    text = describe(sc, p)
    assert "2000 tps, then +2000 tps a step up to 60000 tps (30 steps)" in text
    assert "open loop" in text and "dropped" in text


def test_the_steady_rate_example() -> None:
    sc = load("steady.bench", text=STEADY, env={})
    assert sc.ramp == m.RateLoad("fixed", 5000.0, 5000.0, m.Pool(64, 0), poisson=True, duration=30.0,
                                 warmup_from=100.0, warmup_to=5000.0)
    warmup, hold = plan(sc).phases
    assert (warmup.kind, warmup.seconds, warmup.rate, warmup.rate_end) == ("warmup", 10.0, 100.0, 5000.0)
    assert (hold.kind, hold.seconds, hold.rate, hold.rate_end, hold.users) == ("hold", 30.0, 5000.0, 5000.0, 64)


def test_a_rate_per_minute_a_queue_and_a_linear_rate() -> None:
    sc = load("q.bench", text="""scenario "q" {
      workload custom { transaction t { query "SELECT 1" } }
      rate linear from 60000 tpm to 3000 tps over 20s even
      users max 32 queue
      duration 30s
      stop when { lag > 5ms  busy > 90% }
    }""", env={})
    assert sc.ramp == m.RateLoad("linear", 1000.0, 3000.0, m.Pool(32, 32), over=20.0, duration=30.0)
    ramp, hold = plan(sc).phases
    assert (ramp.kind, ramp.rate, ramp.rate_end, ramp.judge) == ("ramp", 1000.0, 3000.0, "interval")
    assert (hold.kind, hold.seconds, hold.rate) == ("hold", 10.0, 3000.0)
    lag = sc.stop[0]
    assert (lag.metric.name, lag.limit) == ("lag", 5.0)  # in ms, as the figure is
    sized = load("q.bench", text=STEADY.replace("users max 64", "users max 64 queue 1000"), env={})
    assert sized.ramp.pool == m.Pool(64, 1000)  # type: ignore[union-attr]


def test_a_warmup_rate_belongs_to_the_warmup_only_on_its_line() -> None:
    text = STEADY.replace("warmup 10s rate linear from 100 to 5000 tps\n  rate 5000 tps poisson",
                          "warmup 10s\n  rate linear from 100 to 5000 tps over 30s")
    sc = load("w.bench", text=text, env={})
    assert sc.ramp.shape == "linear" and sc.ramp.warmup_from is None  # type: ignore[union-attr]
    assert plan(sc).phases[0].rate == 100.0  # the warmup at the first rate


@pytest.mark.parametrize(("change", "said"), [
    (("users max 64", "users 64"), "a rate needs the users that serve it: users max N"),
    (("rate 5000 tps poisson", "ramp step { start 1 step +1 hold 1s max 2 }"),
     "users max N is the pool that serves an open-loop rate"),
    (("rate 5000 tps poisson", "rate 5000 qps"), "rate must be a rate of transactions, not qps"),
    (("rate 5000 tps poisson", "rate 5000 nopm"),
     "a rate in nopm: nopm counts new orders: the workload has no transaction 'new_order'"),
    (("duration 30s", ""), "a fixed rate needs a duration"),
    (("rate 5000 tps poisson", "rate 5000 tps\n  ramp step { start 1 step +1 hold 1s max 2 }"),
     "give either a rate or a ramp of users"),
    (("users max 64", "users max 0"), "users max must be at least 1"),
])
def test_mistakes_are_said(change: tuple[str, str], said: str) -> None:
    with pytest.raises(ScenarioError) as err:
        load("bad.bench", text=STEADY.replace(*change), env={})
    assert said in str(err.value), str(err.value)


def test_open_loop_figures_are_refused_for_users() -> None:
    text = """scenario "closed" {
      workload custom { transaction t { query "SELECT 1" } }
      users 4 duration 5s
      stop when { dropped > 1% }
    }"""
    with pytest.raises(ScenarioError) as err:
        load("c.bench", text=text, env={})
    assert "dropped is a figure of an open-loop rate's arrivals; this scenario runs users" in str(err.value)


@pytest.mark.parametrize(("step", "said"), [
    ("rate step { start 10 tps step x2 hold 1s }", "rate step needs 'max'"),
    ("rate step { start 10 tps step x1 hold 1s max 20 tps }", "step xN must multiply by more than 1"),
    ("rate step { start 10 tps step +5 tps step x2 hold 1s max 20 tps }", "'step' is given twice in the rate"),
    ("rate step { start 30 tps step +5 tps hold 1s max 20 tps }", "max (20 tps) is below start (30 tps)"),
])
def test_a_rate_step_is_read_as_a_ramp_step_is(step: str, said: str) -> None:
    with pytest.raises(ScenarioError) as err:
        load("s.bench", text=STEADY.replace("rate 5000 tps poisson", step).replace("duration 30s", ""), env={})
    assert said in str(err.value), str(err.value)


@pytest.mark.parametrize("rate", ["rate 100", "rate $R", "rate linear from 100 to 200 over 10s"])
def test_a_plain_rate_ends_its_line(rate: str) -> None:
    """A rate's plain number is tps: the next line's `users max` is not its unit."""
    text = "let R = 100\n" + STEADY.replace("rate 5000 tps poisson", rate)
    sc = load("p.bench", text=text, env={})
    assert isinstance(sc.ramp, m.RateLoad) and sc.ramp.start == 100.0 and sc.ramp.pool == m.Pool(64, 0)


@pytest.mark.parametrize(("rate", "said"), [
    ("rate 0", "rate must be at least 1 tpm (one transaction a minute)"),
    ("rate 0.5 tpm", "rate must be at least 1 tpm (one transaction a minute)"),
    ("rate -5 tps", "rate must be at least 1 tpm"),
])
def test_the_least_rate_is_said_in_words(rate: str, said: str) -> None:
    with pytest.raises(ScenarioError) as err:
        load("m.bench", text=STEADY.replace("rate 5000 tps poisson", rate), env={})
    assert said in str(err.value) and "0.0166" not in str(err.value), str(err.value)


def test_a_ramp_of_too_many_steps_is_counted_not_listed() -> None:
    """x1.0000001 up to 10 million tps: 161 million steps, refused at once (it was listed, for ever)."""
    step = "rate step { start 1 tps step x1.0000001 hold 1s max 10000000 tps }"
    with pytest.raises(ScenarioError) as err:
        load("h.bench", text=STEADY.replace("rate 5000 tps poisson", step).replace("duration 30s", ""), env={})
    assert "the rate ramp has 161,180,965 steps; a run has at most 10,000" in str(err.value)


def test_added_rates_are_counted_from_the_start() -> None:
    step = "rate step { start 0.1 tps step +0.1 tps hold 1s max 0.5 tps }"
    sc = load("a.bench", text=STEADY.replace("rate 5000 tps poisson", step).replace("duration 30s", ""), env={})
    assert sc.ramp.rates() == [0.1, 0.2, 0.3, 0.4, 0.5]  # type: ignore[union-attr]


def test_a_rate_runs_saturation_point_is_a_rate() -> None:
    text = STEADY.replace("duration 30s", "duration 30s\n  expect { saturation >= 3000 tps  saturation >= 100 }")
    sc = load("e.bench", text=text, env={})
    assert [(c.limit, c.unit) for c in sc.expect] == [(3000.0, "tps"), (100.0, "tps")]
    with pytest.raises(ScenarioError) as err:
        load("e.bench", text=STEADY.replace("duration 30s", "duration 30s\n  expect { saturation >= 32 users }"),
             env={})
    assert "this scenario runs a rate: its saturation point is a rate, not users" in str(err.value)


@pytest.mark.parametrize(("users", "shares"), [
    ([4, 4], [(500.0, 4, 0.0), (500.0, 4, 0.5)]),  # even: the merged timeline evenly spaced
    ([3, 2], [(600.0, 5, 0.0), (400.0, 4, 0.6)]),  # each user the same rate; every queue at least 1
])
def test_a_rate_is_shared_over_workers_as_their_users_are(users: list[int], shares: list[tuple]) -> None:
    from bench_dsl.fleet.coordinator import rate_shares
    assert [tuple(round(x, 9) for x in share) for share in rate_shares(1000.0, 8, users)] == shares
