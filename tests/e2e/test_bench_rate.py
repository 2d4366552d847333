"""The harness's open-loop sections (bench/rate.py, bench/omission.py): their parsing and arithmetic,
the scenarios they write, the stop of a process and its resumption, the tables and the chart; and one
short run of both sections end to end. No figure of the benchmark is asserted: only that it was
measured."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from hdrh.histogram import HdrHistogram

from bench.clients import Measure, Target, bench_check, bench_env
from bench.omission import Stall, expected_open, judge, measured_histograms, run_clock, slower_than, timeline
from bench.omission_chart import chart, rows
from bench.rate import (
    bench_figures,
    histogram_percentile,
    merge,
    parse_histogram,
    rate_lines,
    select1_file,
    sysbench_rate_cmd,
    verdict,
)
from bench.report import omission_table, rate_table, render

from ..conftest import ROOT

TARGET = Target("127.0.0.1", 3306, "root", "", "benchdsl", None, None, True)
SECRET = Target("db1", 3306, "bench", "s3cret", "bench", None, None, False)

# sysbench 1.0.20's --histogram, as it prints it before its final report (values in ms).
HISTOGRAM = """Latency histogram (values are in milliseconds)
       value  ------------- distribution ------------- count
       0.102 |**                                       5
       0.130 |****************************************  88
       0.150 |*****                                    6
       2.069 |*                                        1

SQL statistics:
"""


def test_sysbench_histogram_is_parsed_and_read_as_sysbench_reads_it() -> None:
    hist = parse_histogram(HISTOGRAM)
    assert hist == [(0.102, 5), (0.13, 88), (0.15, 6), (2.069, 1)]
    assert histogram_percentile(hist, 50) == 0.13
    assert histogram_percentile(hist, 99) == 0.15  # the 99th of 100 values
    assert histogram_percentile(hist, 100) == 2.069
    assert histogram_percentile(hist, 1) == 0.102
    assert histogram_percentile([], 50) is None


def test_the_sysbench_command_asks_the_rate_and_a_histogram_of_the_measured_part() -> None:
    cmd = sysbench_rate_cmd(SECRET, Path("/tmp/x.lua"), 10_000.0, 64, 2, 8)
    assert cmd[:2] == ["sysbench", "/tmp/x.lua"] and cmd[-1] == "run"
    assert {"--threads=64", "--rate=10000", "--time=10", "--histogram=on", "--report-checkpoints=2"} <= set(cmd)
    assert [a for a in cmd if "s3cret" in a] == ["--mysql-password=s3cret"]  # as sysbench takes it, only there
    assert not [a for a in sysbench_rate_cmd(TARGET, Path("x"), 1000.0, 4, 0, 3) if "checkpoints" in a]


@pytest.mark.parametrize("load", [rate_lines(1000, 64), rate_lines(500.5, 8, poisson=True, queue=3000), ["users 8"]])
def test_the_generated_scenarios_validate_and_keep_passwords_out(load: list[str], tmp_path: Path) -> None:
    text = select1_file("r", SECRET, load, 2, 8, 7, "1", report_s=1)
    assert "s3cret" not in text and "report every 1s" in text and "workers 1" in text
    src = tmp_path / "r.bench"
    src.write_text(select1_file("r", TARGET, load, 0, 3, 7, None))
    ok, msg = bench_check(src, bench_env(TARGET))
    assert ok, msg
    assert rate_lines(500.5, 8, poisson=True, queue=3000) == ["rate 500.5 tps poisson", "users max 8 queue 3000"]


def test_a_verdict_is_within_1pct_either_way_and_blames_the_server_only_when_both_fall_short() -> None:
    assert verdict(99.2, 40.0) == "within 1%" and verdict(100.9, None) == "within 1%"
    assert verdict(101.5, 99.9) == "missed"  # a Poisson count over a short window overshoots too
    assert verdict(60.0, 70.0) == "server did not keep up"
    assert verdict(60.0, 99.5) == "missed" and verdict(96.0, 50.0) == "missed"
    assert verdict(None, 99.0) == "failed"


def test_figures_are_medians_and_bench_dsl_s_come_from_its_summary() -> None:
    assert merge([{"a": 1.0, "b": None}, {"a": 3.0, "b": 2.0}, {"a": 2.0}]) == {"a": 2.0, "b": 2.0}
    m = Measure("bench-dsl", "rate@1000", 64, ok=True, count=10_000, seconds=10.0)
    doc = {"summary": {"offered_tps": 1000.2, "achieved_tps": 995.0, "achieved_pct": 99.48, "dropped": 3,
                       "dropped_pct": 0.03, "lag_ms": {"p50": 0.05, "p99": 1.2}, "latency_ms": {"p50": 0.2, "p99": 2.0},
                       "service_ms": {"p50": 0.15, "p99": 0.9}, "queue_wait_ms": {"p99": None}, "errors": 0}}
    f = bench_figures(m, doc, 1000.0)
    assert f["achieved_pct_of_asked"] == 99.5 and f["lag_ms_p50"] == 0.05 and f["service_ms_p99"] == 0.9
    assert f["queue_wait_ms_p99"] is None and f["client_us_per_tx"] is None  # no CPU window measured
    assert bench_figures(m, None, 1000.0)["achieved_tps"] is None


def _encoded(micros: list[int]) -> str:
    h = HdrHistogram(1, 3_600_000_000, 3)
    for v in micros:
        h.record_value(v)
    return h.encode().decode("ascii")


def test_slow_transactions_are_counted_over_every_measured_histogram() -> None:
    doc = {"steps": [{"histograms": {"t": _encoded([300] * 50 + [1_500_000] * 7 + [999_000, 2_000_000]),
                                     "u": None}},
                     {"histograms": {"t": _encoded([1_200_000] * 3)}}]}
    assert slower_than(measured_histograms(doc)) == 11
    assert slower_than([]) == 0


def test_the_open_loop_expectation_and_its_15pct() -> None:
    assert expected_open(1000, 2.05) == pytest.approx(1050)
    assert expected_open(1000, 0.8) == 0
    assert judge(1100, 1000.0) == {"expected": 1000.0, "ratio": 1.1, "within_15pct": True}
    assert judge(1200, 1000.0)["within_15pct"] is False and judge(8, 8.0)["within_15pct"] is True
    assert judge(5, 0.0) == {"expected": 0.0, "ratio": None, "within_15pct": False}


def test_the_timeline_is_the_measured_intervals_from_the_start_of_the_window() -> None:
    doc = {"steps": [{"start_s": 3.5}],
           "intervals": [{"phase": "warmup", "start_s": 2.5, "seconds": 1.0, "latency_ms": {"p99": 1.0}},
                         {"phase": "hold", "start_s": 3.5, "seconds": 1.0, "tps": 999.0,
                          "latency_ms": {"p99": 2.0, "max": 9.0}, "service_ms": {"p99": 1.0, "max": 3.0}},
                         {"phase": "hold", "start_s": 4.5, "seconds": 1.01, "latency_ms": {"p99": None}}]}
    first, second = timeline(doc)
    assert (first["start"], first["end"], first["latency_ms_max"], first["service_ms_p99"]) == (0.0, 1.0, 9.0, 1.0)
    assert first["lag_ms_p99"] is None
    assert (second["start"], second["end"], second["latency_ms_p99"]) == (1.0, 2.01, None)
    assert timeline({"steps": []}) == []


def test_the_run_s_clock_is_read_from_its_least_delayed_line() -> None:
    # (arrived at, the event's own t): the second line came 0.2 s late, the third 0.05 s
    assert run_clock([(100.3, 0.2), (101.7, 1.4), (102.65, 2.5)]) == pytest.approx(100.1)
    assert run_clock([]) is None


def _section() -> dict[str, object]:
    def run(slow: int, expected: float, stat: dict[str, float]) -> dict[str, object]:
        tl = [{"start": 0.0, "end": 1.0, "latency_ms_p99": stat["p99"], "latency_ms_max": stat["max"],
               "service_ms_p99": 0.5, "service_ms_max": None},
              {"start": 1.0, "end": 2.0, "latency_ms_p99": None, "latency_ms_max": None}]
        return {**judge(slow, expected), "slow": slow, "stopped_s": 2.01, "stop_at_s": 4.0, "transactions": 10_000,
                "timeline": tl, "per_user": slow / 8}

    return {"rate": 1000.0, "users": 64, "queue": 3064, "closed_users": 8, "warmup": 2, "duration": 10,
            "stall_asked_s": 2.0, "stall_at_s": 4.0, "open": run(1012, 1010.0, {"p99": 1900.0, "max": 2010.0}),
            "closed": run(8, 8.0, {"p99": 0.4, "max": 2005.0}), "chart": ["/x/omission-1.svg", "/x/omission-1.png"]}


def test_the_chart_draws_each_interval_as_a_segment_and_nothing_where_nothing_ended() -> None:
    sec = _section()
    drawn = rows(sec)
    # open: response p99 + max, service p99 (its max is None); closed: latency p99 + max; 2 points each
    assert len(drawn) == 2 * (3 + 2)
    assert {(d["t"], d["interval"]) for d in drawn} == {(0.0, "0.00-1.00 s"), (1.0, "0.00-1.00 s")}
    spec = chart(sec).to_dict()
    assert len(spec["hconcat"]) == 2 and "1,012 slower than 1 s" in json.dumps(spec)


def test_the_tables_say_what_was_measured() -> None:
    om = omission_table(_section())
    assert "| open loop | rate 1,000 tps, users max 64 queue 3,064 | 2.01 s | 4.00 s | 10,000 | 1,012 | 1,010 |" in om
    assert "| closed loop | users 8 |" in om and "](omission-1.svg)" in om
    ok = {"ok": 1, "achieved_tps": 990.0, "achieved_pct_of_asked": 99.0, "verdict": "within 1%",
          "client_us_per_tx": 9.1}
    sec = {"users": 64, "pairs": 1, "warmup": 1, "duration": 2, "arrivals": "evenly", "sysbench_note": "queue",
           "rates": [{"rate": 1000.0, "other_cores": 0.25,
                      "sysbench": {**ok, "response_ms_p50": 0.1, "response_ms_p99": 0.4},
                      "bench_dsl": {**ok, "offered_tps": 1000.0, "dropped": 2, "dropped_pct": 0.01, "lag_ms_p50": 0.05,
                                    "lag_ms_p99": 0.5}},
                     {"rate": 50000.0, "sysbench": {"ok": 0, "failures": ["sysbench event queue is full: ..."]},
                      "bench_dsl": {**ok, "verdict": "server did not keep up"}}]}
    table = rate_table(sec)
    assert ("| 1,000 (0.25) | sysbench --rate | asked | 990.0 (99.00%) | within 1% | - | not reported "
            "| 0.10 / 0.40 (") in table
    assert ("| 1,000 (0.25) | bench-dsl rate | 1,000.0 | 990.0 (99.00%) | within 1% | 2 (0.01%) "
            "| 0.050 / 0.500 |") in table
    assert "| 50,000 | sysbench --rate | | sysbench event queue is full: ... | failed |" in table
    assert "server did not keep up" in table
    doc = {"started_at": "now", "status": "completed", "settings": {"pairs": 1, "warmup": 1, "duration": 2,
                                                                   "tables": 1, "table_size": 10, "workers": None},
           "machine": {"cpu_model": "cpu", "cpu_logical": 2, "cpu_physical": 1, "memory_gib": 1, "os": "os",
                       "kernel": "k", "python": "3", "loadavg_start": "0"},
           "tools": {}, "notes": [], "errors": [], "rate": sec, "omission": {"skipped": "skipped: not ours"}}
    md = render(doc)
    assert "## Open-loop rate: schedule accuracy" in md and "## Coordinated omission\n\nskipped: not ours" in md


def test_a_stall_stops_a_process_and_always_resumes_it() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        p = psutil.Process(child.pid)
        stall = Stall(child.pid, 0.0, 60.0)
        stall.start()
        end = time.monotonic() + 10
        while p.status() != psutil.STATUS_STOPPED and time.monotonic() < end:
            time.sleep(0.02)
        assert p.status() == psutil.STATUS_STOPPED
        stall.close()  # long before its 60 s: resumed at once
        assert p.status() != psutil.STATUS_STOPPED and stall.stopped_s is not None and stall.at_s is not None
        never = Stall(child.pid, 60.0, 1.0)
        never.start()
        never.close()  # cancelled before its time: never stopped
        assert never.stopped_s is None and p.status() != psutil.STATUS_STOPPED
    finally:
        child.kill()
        child.wait()


def test_the_open_loop_sections_options() -> None:
    from bench.omission import settings
    from bench.run import _defaults, build_parser, main

    assert settings("rate=200,stall=1.5") == {"rate": 200.0, "stall": 1.5}
    with pytest.raises(Exception, match="unknown bogus"):
        settings("bogus=1")
    a = _defaults(build_parser().parse_args(["--sections", "rate,omission", "--rates", "500,2000"]))
    assert a.rates == [500, 2000] and a.rate_pairs == 2 and a.sections == ("rate", "omission")
    assert main(["--sections", "rate,bogus"]) == 2


@pytest.mark.slow
@pytest.mark.harness  # make test-machine: the benchmark's harness at full load, alone
def test_the_rate_and_omission_sections_run_end_to_end(tmp_path: Path) -> None:
    """One small rate, both clients, and a short stall, on the harness's own throwaway server."""
    r = subprocess.run([sys.executable, "-m", "bench.run", "--sections", "rate,omission", "--rates", "300",
                        "--rate-pairs", "1", "--rate-users", "8", "--warmup", "0", "--duration", "1", "--workers", "1",
                        "--omission", "rate=200,users=8,closed_users=2,stall=1.2,stall_at=0.3,warmup=0,duration=2",
                        "--out-dir", str(tmp_path)],
                       check=False, capture_output=True, text=True, cwd=ROOT, timeout=300,
                       env={k: v for k, v in os.environ.items() if k != "BENCH_DSN"})
    assert r.returncode == 0, r.stderr[-3000:]
    doc = json.loads((tmp_path / "latest.json").read_text())
    assert doc["errors"] == [], doc["errors"]
    (row,) = doc["rate"]["rates"]
    assert row["sysbench"]["ok"] == 1 and row["bench_dsl"]["ok"] == 1, row
    assert row["sysbench"]["response_ms_p99"] is not None and row["bench_dsl"]["lag_ms_p50"] is not None
    assert row["bench_dsl"]["client_us_per_tx"] is not None and row["sysbench"]["client_us_per_tx"] is not None
    om = doc["omission"]
    assert om["open"]["stopped_s"] > 0 and om["closed"]["stopped_s"] > 0 and om["open"]["expected"] >= 0
    assert om["open"]["timeline"] and om["closed"]["timeline"]
    assert all((tmp_path / Path(p).name).stat().st_size > 0 for p in om["chart"])
    md = (tmp_path / "latest.md").read_text()
    assert "## Open-loop rate: schedule accuracy" in md and "## Coordinated omission" in md
