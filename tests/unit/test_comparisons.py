"""Comparisons declared once (bench_dsl.language.comparisons): a plugin's own is read by the grammar
(a unit word before it stays the next condition's metric), checked by its declaration, judged and
worded by it, with no other module naming it; without the plugin, the word is said to be no
comparison."""

from __future__ import annotations

import pytest

from bench_dsl.core.errors import ScenarioError
from bench_dsl.engine.judge import judge, spec, state_of
from bench_dsl.fleet.registry import NAMED
from bench_dsl.language import validate
from bench_dsl.language.comparisons import Comparison, plateau_gain
from bench_dsl.measure.metrics import Aggregate, TickStats
from bench_dsl.measure.txstats import TxStats
from bench_dsl.workloads.registry import PLUGINS
from tui.live_conditions import show_limit, show_value

RISES = Comparison("rises", ("throughput",), "%", plateau_gain, False, "rise", "tps rises 50%",
                   "throughput that rose more than the limit over the step before")
TEXT = ('scenario "t" {{\n  workload custom {{ transaction read {{ query "SELECT 1" }} }}\n'
        "  ramp step {{ start 1 users  step +1 users  hold 10s  max 4 users }}\n  stop when {{ {stop} }}\n}}\n")


def _load(stop: str, *own: Comparison):  # type: ignore[no-untyped-def]
    return validate.load("t.bench", text=TEXT.format(stop=stop), env={}, workloads=PLUGINS, fleets=NAMED,
                         metrics=own)


def _step(tps: float) -> Aggregate:
    agg = Aggregate(("read",))
    st = TxStats(count=int(tps), total_us=int(tps) * 1000)
    st.hist.record_value(1000, int(tps))
    agg.add(TickStats(1.0, 1.0, "hold", 1, 1, {"read": st}, {"server": None, "host": None, "client": None}))
    return agg


def test_a_plugins_comparison_is_read_checked_judged_and_worded_by_its_declaration() -> None:
    sc = _load("tpm < 1000 tps rises 50%", RISES)
    # after a limit, `tps` followed by the plugin's word is the next condition's metric, not a unit
    assert [c.text for c in sc.stop] == ["tpm < 1000", "tps rises 50%"]
    rises = sc.stop[1]
    assert (rises.kind, rises.limit, rises.unit, rises.comparison) == ("rises", 50.0, "%", RISES)
    assert judge(rises, _step(160), _step(100)).fired and not judge(rises, _step(140), _step(100)).fired
    assert state_of(rises, 145.0, 100.0) == "near" and state_of(rises, 110.0, 100.0) == "ok"
    c = spec(rises)
    assert c.held == ("rise", ">") and show_limit(c) == "rise > 50%" and show_value(c, 160.0, 60.0) == "+60.0%"


def test_a_plugins_comparison_applies_to_what_it_declares_with_its_limit() -> None:
    with pytest.raises(ScenarioError) as e:
        _load("p90 rises 50%  tps rises 2x", RISES)
    out = e.value.render()
    assert "rises applies to throughput (tps, tpm, qps, nopm), not p90" in out
    assert "a rises is given in percent" in out and "hint: tps rises 50%" in out


def test_without_the_plugin_its_word_is_no_comparison() -> None:
    with pytest.raises(ScenarioError) as e:
        _load("tps rises 50%")
    out = e.value.render()
    assert "'rises' is no comparison: after a metric comes a comparison (>, <, >=, <=, ==, !=) or one of plateau, " \
           "kink" in out
    with pytest.raises(ScenarioError) as e:
        _load("tps plateu 5%")
    assert "did you mean plateau?" in e.value.render()
