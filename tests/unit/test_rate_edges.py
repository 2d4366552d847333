"""An open-loop rate's figures at its edges, from synthetic rows and reports: what the verdict says
of a rate no condition judged, the saturation reason when no step was clean, and the console's line
of a rate below 1 tps."""

from __future__ import annotations

import io

from rich.console import Console

from bench_dsl.engine import events as ev
from bench_dsl.engine.judge import Judge
from bench_dsl.engine.phases import Phase
from bench_dsl.engine.rows import IntervalRow, StepRow
from bench_dsl.measure.metrics import Aggregate
from bench_dsl.results import verdict
from bench_dsl.results.sinks import ConsoleSink


def _rate_step(figures: dict[str, object], why: str | None = None) -> StepRow:
    return StepRow(1, 4, why is None, why, 1.0, figures, None, [], {}, 1e7)


def test_a_rate_no_condition_judged_says_what_it_achieved_not_that_it_met_every_condition() -> None:
    """`rate 10000000 tps`, users max 4, no stop condition: 98.5% dropped is the finding."""
    judge = Judge((), ("point",), open_loop=True)
    judge.step_end(Phase("hold", 1, 4, 4, 5.0, "step", 1e7, 1e7), Aggregate(("point",)))
    sat = judge.saturation(None, [_rate_step({"achieved_tps": 150000.0, "dropped_pct": 98.5})])
    assert (sat["rate_tps"], sat["stop_condition_count"], sat["achieved_tps"]) == (1e7, 0, 150000.0)
    said = verdict.text(verdict.verdict_lines(sat, None)[0])
    assert "met every condition" not in said
    assert said == ("no stop condition judged the rate: 10,000,000 tps offered, 150,000 tps achieved "
                    "(98.5% dropped) (step 1)")


def test_when_the_only_step_stalled_the_reason_says_so_not_that_no_condition_fired() -> None:
    judge = Judge((), ("point",), open_loop=True)
    stalled = "the server answered nothing for 11.0 s in 6 stalls"
    sat = judge.saturation(None, [_rate_step({}, stalled)])
    assert "no stop condition fired" not in sat["reason"]
    assert sat["reason"] == f"no step was a clean measurement: step 1: {stalled}"


def test_the_console_says_a_rate_below_one_a_second() -> None:
    figures = {"seconds": 2.0, "users": 2, "tps": 0.5, "qps": 0.5, "errors": 0, "retries": 0, "cpu": {},
               "latency_ms": {"p50": 0.3, "p95": 0.3, "p99": 0.3}, "offered_tps": 0.5, "dropped_per_s": 0.0,
               "busy": 0.0, "service_ms": {"p99": 0.2}}
    out = io.StringIO()
    ConsoleSink(Console(file=out, width=400, color_system=None)).emit(
        ev.Interval(IntervalRow(2.0, 0.0, "hold", 1, True, figures), None))
    assert " offered 0.5/s " in out.getvalue(), out.getvalue()
