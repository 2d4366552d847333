"""The performance harness (bench/): its parsing and arithmetic, and that `python -m bench.run
--quick` runs end to end. The benchmark's figures are never asserted: only that they were measured."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest

from bench.clients import Target, bench_check, bench_env, bench_file, parse_sysbench_report, sysbench_workload
from bench.procs import Snapshot, usage
from bench.report import render
from bench.stats import bracketed_ratios, limit_note, paired_ratios, ratio_summary

from ..conftest import ROOT

# sysbench 1.0.20's final report after a --report-checkpoints reset, as it prints it.
SYSBENCH_REPORT = """SQL statistics:
    queries performed:
        read:                            104629
        write:                           0
        other:                           0
        total:                           104629
    transactions:                        104629 (34884.21 per sec.)
    queries:                             104629 (34884.21 per sec.)
    ignored errors:                      3      (0.00 per sec.)
    reconnects:                          0      (0.00 per sec.)

General statistics:
    total time:                          5.0014s
    total number of events:              104629

Latency (ms):
         min:                                    0.02
         avg:                                    0.11
         max:                                    6.52
         95th percentile:                        0.17
         sum:                                11922.06
"""

TARGET = Target("127.0.0.1", 3306, "root", "", "benchdsl", None, None, True)


def test_sysbench_report_is_parsed() -> None:
    fig = parse_sysbench_report(SYSBENCH_REPORT)
    assert fig == {"count": 104629, "tps": 34884.21, "queries": 104629, "qps": 34884.21, "p95_ms": 0.17,
                   "ignored_errors": 3, "reconnects": 0}


def test_a_truncated_sysbench_report_is_an_error() -> None:
    with pytest.raises(ValueError):
        parse_sysbench_report("SQL statistics:\n    queries performed:\n")


def test_ratios_are_paired_and_skip_missing_runs() -> None:
    assert paired_ratios([10.0, None, 20.0], [5.0, 7.0, 30.0]) == [0.5, 1.5]
    assert ratio_summary([10.0, 20.0, 10.0], [5.0, 30.0, 10.0]) == {"median": 1.0, "min": 0.5, "max": 1.5, "pairs": 3,
                                                                        "at_least_1": 2}
    assert ratio_summary([None], [1.0])["median"] is None


def test_bracketed_ratios_cancel_a_steady_drift() -> None:
    # the machine slows down by 10% a run: A 100, B 90, A 81, B 72.9, A 65.61; b equals a at any moment
    a, b = [100.0, 81.0, 65.61], [90.0, 72.9]
    assert paired_ratios(a[:2], b) == pytest.approx([0.9, 0.9])  # b pays for the drift
    assert bracketed_ratios(a, b) == pytest.approx([1.0, 1.0])
    # a failed reference leaves the other neighbour; a failed run is skipped
    assert bracketed_ratios([100.0, None, 50.0], [90.0, 60.0]) == pytest.approx([0.9, 1.2])
    assert bracketed_ratios([100.0, 81.0, 65.61], [None, 72.9]) == pytest.approx([1.0])
    # a run stopped before its closing reference: the last run keeps the one before it
    assert bracketed_ratios([100.0, 81.0], [90.0, 72.9]) == pytest.approx([1.0, 0.9])
    assert ratio_summary(a, b, bracketed=True) == {"median": 1.0, "min": 1.0, "max": 1.0, "pairs": 2, "at_least_1": 2}
    with pytest.raises(ValueError):
        bracketed_ratios([1.0], [1.0, 2.0, 3.0])


def test_limit_notes_name_the_bottleneck() -> None:
    assert limit_note("bench-dsl", 0.97, 0.95, 1.0, 0.8, 1.9, 2, 0.1).startswith("client: one Python process")
    assert limit_note("sysbench", 0.3, 0.3, 2.0, 1.8, 2.0, 2, 0.0).startswith("server:")
    assert limit_note("sysbench", 0.6, 0.6, 2.0, 1.2, 1.95, 2, 0.2).startswith("machine:")
    assert limit_note("sysbench", 0.2, 0.2, 1.0, 0.3, 0.6, 2, 0.1).startswith("round trips:")
    assert limit_note("sysbench", None, None, 1.0, None, None, 2, None) == "not measured"


def test_usage_charges_each_process_of_the_tree_once() -> None:
    a = Snapshot(0.0, {1: 1.0, 2: 5.0}, 10.0, 100.0, 0.0)
    b = Snapshot(2.0, {1: 2.0, 2: 6.5, 3: 0.5}, 13.0, 107.8, 0.0)  # pid 3 started inside the window
    u = usage(a, b)
    assert u.client_cpu_s == pytest.approx(3.0)
    assert u.client_busiest_cores == pytest.approx(0.75)
    assert u.client_processes == 3
    assert u.server_cores == pytest.approx(1.5)
    assert u.other_cores == pytest.approx(0.9)  # 3.9 busy cores - 1.5 client - 1.5 server


def test_generated_scenarios_validate_and_keep_passwords_out() -> None:
    wl = sysbench_workload("oltp_read_write", 2, 1000)
    text = bench_file("t", TARGET, wl, 4, 1, 2, 7, None)
    assert 'target "mysql://root@127.0.0.1:3306/benchdsl"' in text
    secret = Target("db1", 3306, "bench", "s3cret", "bench", None, None, False)
    hidden = bench_file("t", secret, wl, 4, 1, 2, 7, "auto")
    assert "s3cret" not in hidden and "workers auto" in hidden
    env = bench_env(secret)
    assert "mysql://bench:s3cret@db1:3306/bench" in env.values()
    assert secret.redacted() == "mysql://bench:***@db1:3306/bench"
    assert "--mysql-password=s3cret" in secret.sysbench_args()


def test_bench_check_accepts_the_generated_file(tmp_path: Path) -> None:
    src = tmp_path / "t.bench"
    src.write_text(bench_file("t", TARGET, sysbench_workload("oltp_point_select", 1, 1000), 1, 1, 1, 7, None))
    ok, msg = bench_check(src, bench_env(TARGET))
    assert ok, msg


def test_report_renders_skipped_and_failed_sections() -> None:
    doc = {"started_at": "now", "status": "interrupted", "settings": {"pairs": 1, "warmup": 1, "duration": 2,
                                                                      "tables": 1, "table_size": 10, "workers": None},
           "machine": {"cpu_model": "cpu", "cpu_logical": 2, "cpu_physical": 1, "memory_gib": 1, "os": "os",
                       "kernel": "k", "python": "3", "loadavg_start": "0"},
           "tools": {}, "notes": [], "errors": ["memory: boom"], "tpcc": {"skipped": "no tpcc yet"},
           "overhead": {"error": "boom"}}
    md = render(doc)
    assert "(interrupted)" in md and "no tpcc yet" in md and "failed: boom" in md and "memory: boom" in md


def _database(url: str, name: str) -> str:
    u = urlsplit(url)
    return urlunsplit((u.scheme, u.netloc, f"/{name}", u.query, u.fragment))


@pytest.mark.slow
@pytest.mark.harness  # make test-machine: the benchmark's harness at full load, alone
def test_quick_benchmark_runs_end_to_end(dsn_url: str, tmp_path: Path) -> None:
    assert shutil.which("sysbench") is not None, "sysbench is not installed: run scripts/setup.sh (make test does)"
    # A database of its own: the harness drops and reloads its sbtest tables.
    target = _database(dsn_url, "bench_harness")
    r = subprocess.run([sys.executable, "-m", "bench.run", "--quick", "--target", target, "--out-dir", str(tmp_path)],
                       check=False, capture_output=True, text=True, cwd=ROOT, timeout=240)
    assert r.returncode == 0, r.stderr[-3000:]
    doc = json.loads((tmp_path / "latest.json").read_text())
    assert doc["status"] == "completed" and doc["errors"] == []
    assert doc["prepare"]["layout_identical"] is True
    (point,) = doc["compare"]
    # one pair and its closing reference: sysbench ran twice around bench-dsl's run
    assert point["sysbench"]["ok"] == 2 and point["bench_dsl"]["ok"] == 1 and point["closing_sysbench"]["ok"]
    assert point["paired_ratios"]["tps"]["median"] is not None
    assert point["ratios"]["tps"]["median"] is not None
    assert point["ratios"]["cpu_per_10k_tx"]["median"] is not None
    assert point["bench_dsl"]["errors"] == 0
    for loop in ("asyncmy_loop", "raw_loop"):  # --quick runs both floors at its one point
        assert point["floor"][loop]["ok"] == 1
        assert point["floor"][loop]["bench_dsl_vs_loop"]["tps"]["median"] is not None
    assert doc["overhead"]["ns_per_tx"] > 0 and doc["server_start"]["seconds"] > 0
    assert doc["memory"]["errors"] == 0 and doc["memory"]["rss_per_user_kib"] > 0
    md = (tmp_path / "latest.md").read_text()
    assert "## Side by side" in md and "oltp_point_select | 4 |" in md and "## The floors" in md
    assert len(list(tmp_path.glob("2*.json"))) == 1


def test_the_ui_section_calls_ui_overhead_main_with_out_and_the_server(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.machinery
    import os
    import types

    from bench.run import Harness, _defaults, build_parser

    seen: dict[str, object] = {}

    def main(argv: list[str]) -> int:
        seen["argv"], seen["dsn"] = argv, os.environ.get("BENCH_DSN")
        Path(argv[1]).write_text(json.dumps({"overhead_pct": 1.5}))
        return 0

    fake = types.ModuleType("bench.ui_overhead")
    fake.__spec__ = importlib.machinery.ModuleSpec("bench.ui_overhead", None)
    fake.main = main  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "bench.ui_overhead", fake)
    monkeypatch.delenv("BENCH_DSN", raising=False)
    h = Harness(_defaults(build_parser().parse_args(["--quick", "--target", "mysql://root@127.0.0.1:3306/x"])))
    try:
        h.target = TARGET
        assert h._ui() == {"overhead_pct": 1.5}
    finally:
        h.a.keep_files = False
        h.close()
    assert seen["argv"][0] == "--out" and seen["dsn"] == TARGET.url()  # type: ignore[index]
    assert "BENCH_DSN" not in os.environ


def test_unknown_sections_are_a_usage_error() -> None:
    from bench.run import main

    assert main(["--sections", "compare,bogus"]) == 2


@pytest.mark.slow
@pytest.mark.harness  # make test-machine: the benchmark's harness at full load, alone
def test_the_tls_row_measures_both_ways(tmp_path: Path) -> None:
    """`--sections tls`: a throwaway server with a certificate made for the run, bench-dsl plain and
    over TLS alternated; every run measured, the TLS ones encrypted (a run without a cipher in its
    result counts as failed), the ratio reported."""
    r = subprocess.run([sys.executable, "-m", "bench.run", "--sections", "tls", "--pairs", "1", "--warmup", "1",
                        "--duration", "2", "--tables", "1", "--table-size", "2000", "--out-dir", str(tmp_path)],
                       check=False, capture_output=True, text=True, cwd=ROOT, timeout=600,
                       env={k: v for k, v in os.environ.items() if k != "BENCH_DSN"})  # its own server
    assert r.returncode == 0, r.stderr[-3000:]
    doc = json.loads((tmp_path / "latest.json").read_text())
    tls = doc["tls"]
    assert "failed" in tls, tls
    assert not tls["failed"] and len(tls["tps_plain"]) == 2 and len(tls["tps_tls"]) == 1
    assert tls["tps_ratio"]["median"] is not None and tls["cpu_ratio"]["median"] is not None
    assert "## TLS" in (tmp_path / "latest.md").read_text()


@pytest.mark.slow
@pytest.mark.harness  # make test-machine: the benchmark's harness at full load, alone
def test_the_sampling_row_measures_both_ways(tmp_path: Path) -> None:
    """`--sections sampling`: bench-dsl's runs without the sessions' sampling (BENCH_SAMPLE_SESSIONS=0)
    and with it alternated; each run sampled as it was asked to (one that did not counts as failed),
    the ratio reported beside the cost of one sample measured apart."""
    r = subprocess.run([sys.executable, "-m", "bench.run", "--sections", "sampling", "--pairs", "1", "--warmup", "1",
                        "--duration", "2", "--tables", "1", "--table-size", "2000", "--out-dir", str(tmp_path)],
                       check=False, capture_output=True, text=True, cwd=ROOT, timeout=600,
                       env={k: v for k, v in os.environ.items() if k not in ("BENCH_DSN", "BENCH_SAMPLE_SESSIONS")})
    assert r.returncode == 0, r.stderr[-3000:]
    sec = json.loads((tmp_path / "latest.json").read_text())["sampling"]
    assert "failed" in sec, sec
    assert not sec["failed"] and len(sec["tps_off"]) == 2 and len(sec["tps_on"]) == 1
    assert [run["sampling"] for run in sec["runs"]] == ["off", "on", "off"]
    assert sec["tps_ratio"]["median"] is not None and sec["processlist_samples"][0] >= 1
    assert sec["per_sample"]["client_cpu_ms"] > 0 and sec["per_sample"]["active_seen"] == 0  # idle sessions
    assert "## The sessions' sampling" in (tmp_path / "latest.md").read_text()
