"""bench_dsl/results/fold.py: which load axis a result is on (users or offered rate), decided from
the result alone, and the refusal of both axes together (tests/e2e/test_rate_results.py reads real
rate runs)."""

from __future__ import annotations

import pytest

from bench_dsl.core.errors import UsageError
from bench_dsl.engine.profiles.registry import AXES
from bench_dsl.results.comparison import compare
from bench_dsl.results.fold import load_axis, one_axis
from bench_dsl.results.summary import summarize

from ..fixtures.result import recorded_result


@pytest.mark.parametrize(("doc", "axis"), [
    ({}, "users"),
    ({"saturation": {"users": 4, "rate_tps": None}}, "rate"),  # a rate's climb whose first step fired
    ({"saturation": None, "steps": [{"step": 1, "users": 8, "rate_tps": 100.0}]}, "rate"),
    ({"saturation": None, "steps": [], "summary": {"users": 8, "offered_tps": 99.5}}, "rate"),  # a linear rate
    ({"saturation": None, "steps": [], "summary": None, "intervals": [{"offered_tps": 50.0}]}, "rate"),  # warm-up only
    ({"saturation": {"users": 4}, "steps": [{"step": 1, "users": 4}], "summary": {"users": 4}}, "users"),
])
def test_the_axis_is_read_from_the_result(doc: dict, axis: str) -> None:
    assert load_axis(doc) == axis


def test_a_recorded_closed_loop_run_is_on_users() -> None:
    assert load_axis(recorded_result()) == "users"


def test_points_are_said_in_the_axis_unit() -> None:
    assert AXES["users"].words(8) == "8 users"
    assert [AXES["rate"].words(v) for v in (8000.0, 12.5, 60000.0, None)] == ["8000 tps", "12.5 tps", "60000 tps", "-"]


def test_both_axes_together_are_refused_naming_each() -> None:
    assert one_axis([]) == "users" and one_axis([("a", "rate"), ("b", "rate")]) == "rate"
    with pytest.raises(UsageError) as e:
        one_axis([("base", "users"), ("paced", "rate")])
    said = str(e.value)
    assert "answer different questions" in said and "base: closed-loop" in said and "paced: open-loop" in said


def test_compare_refuses_them_even_forced_and_a_summary_holds_both() -> None:
    users = recorded_result()
    rate = recorded_result()
    rate["saturation"]["rate_tps"] = None  # as the judge writes it for a rate whose climb had no clean step
    summary = summarize([users, rate])
    assert [c["axis"] for c in summary["configurations"]] == ["users", "rate"]
    assert summary["configurations"][1]["saturation"]["rate_tps"] is None
    with pytest.raises(UsageError, match="answer different questions"):
        compare(summary, force=True)


def test_repeats_of_a_fixed_rate_meet_at_the_rate_asked() -> None:
    """Two repeats of `rate 5000 tps` offered 4987.3 and 5002.1: one point, at 5000 tps, not two."""
    from bench_dsl.results.fold import by_users

    docs = []
    for offered in (4987.3, 5002.1):
        doc = recorded_result()
        doc["steps"] = []
        doc["saturation"]["rate_tps"] = None
        doc["summary"] = {**(doc.get("summary") or {}), "users": 64, "seconds": 10.0, "offered_tps": offered}
        doc["scenario"]["rate"] = {"shape": "fixed", "unit": "tps", "asked": {"start": 5000.0, "end": 5000.0},
                                   "scheduled_tps": {"start": 5000.0, "end": 5000.0}}
        docs.append(doc)
    (point,) = by_users(docs, "rate")
    assert point["rate_tps"] == 5000.0 and point["repeats_measured"] == 2
