"""The harness's ray section (bench/ray.py): its arithmetic, its page, and that its scenario
validates. Not its run: a Ray node, a server and two runs take ~35 s even with --quick
(`python -m bench.run --quick --sections ray` is the smoke), more than this suite spends on a check."""

from __future__ import annotations

import os
from pathlib import Path

from bench.clients import bench_check
from bench.ray import figures, ray_table, scenario, session_groups_off, summarise
from bench.run import _defaults, build_parser


def _run(side: str, tps: float | None, us: float = 40.0) -> dict:
    if tps is None:
        return {"side": side, "ok": False, "error": f"bench --workers {side} exit 1: boom"}
    return {"side": side, "ok": True, "tps": tps, "p95_ms": 10.0, "client_us_per_tx": us, "outside_us_per_tx": us + 2,
            "ray_processes_us_per_tx": 2.0, "workers": 2, "errors": 0, "actors_ready_s": None,
            "outside": {"bench_cores": 0.4, "actors_cores": 0.0, "ray_cores": 0.02, "server_cores": 0.9,
                        "other_cores": 0.5}}


def test_ratios_are_ray_over_auto_per_pair_and_a_failed_run_drops_its_pair() -> None:
    runs = [_run("ray", 960, 44), _run("auto", 1000, 40), _run("ray", None), _run("auto", 990),
            _run("ray", 900, 48), _run("auto", 1000, 40)]
    sec = summarise(runs)
    assert sec["tps_ratio_per_pair"] == [0.96, None, 0.9]
    assert sec["ratios"]["tps"] == {"median": 0.93, "min": 0.9, "max": 0.96, "pairs": 2, "at_least_1": 0}
    assert sec["ratios"]["client_us_per_tx"]["median"] == 1.15
    assert sec["lost_pct"] == 7.0 and sec["goal"]["met"] is False
    assert sec["sides"]["ray"]["ok"] == 2 and sec["sides"]["ray"]["failures"] == ["bench --workers ray exit 1: boom"]
    assert sec["sides"]["auto"]["tps"] == 1000 and sec["sides"]["auto"]["cores"]["server"] == 0.9
    sec |= {"settings": {"test": "oltp_point_select", "users": 64, "pairs": 3, "warmup": 2, "duration": 8,
                         "ray_cpus": 2}, "loadavg": {"start": "1.00", "end": "2.00"}}
    md = ray_table(sec)
    assert "**0.930x** (0.900-0.960)" in md and "7.0%" in md and "not met ✗" in md and "1 failed run(s)" in md
    met = summarise([_run("ray", 1010), _run("auto", 1000)])
    assert met["goal"]["met"] is True and met["lost_pct"] == -1.0


def test_client_cpu_per_transaction_comes_from_the_result_s_processes() -> None:
    doc = {"workers": 2, "cluster": {"kind": "ray", "actors_ready_s": 2.5},
           "summary": {"tps": 10_000.0, "count": 40_000, "seconds": 4.0, "latency_ms": {"p95": 12.0}, "errors": 0,
                       "cpu": {"client": 22.0, "server": 45.0, "host": 100.0},
                       "client_cpu_by_process": {"coordinator": 1.0, "worker 1": 21.0, "worker 2": 22.0}}}
    f = figures(doc, {"bench_cores": 0.01, "actors_cores": 0.43, "ray_cores": 0.03})
    # 0.44 cores over 4 s for 40,000 transactions: 44 us each; with Ray's processes 0.47 cores
    assert f["client_us_per_tx"] == 44.0 and f["outside_us_per_tx"] == 47.0 and f["ray_processes_us_per_tx"] == 3.0
    assert f["actors_ready_s"] == 2.5 and f["cpu_client_pct_of_machine"] == 22.0


def test_the_section_is_known_and_its_scenario_validates(tmp_path: Path) -> None:
    a = _defaults(build_parser().parse_args(["--quick", "--sections", "ray"]))
    assert a.sections == ("ray",) and a.pairs == 1
    src = tmp_path / "ray.bench"
    src.write_text(scenario(1, 1000, 1, 2, 7))
    ok, msg = bench_check(src, {**os.environ, "BENCH_DSN": "mysql://root@127.0.0.1:3306/x"})
    assert ok, msg
    assert "workers" not in src.read_text()  # each side's --workers picks it


def test_the_pairs_run_without_session_groups_and_the_setting_comes_back(tmp_path: Path) -> None:
    """On a copy of the kernel's knob (the real one is the machine's: the suite never turns it)."""
    knob = tmp_path / "sched_autogroup_enabled"
    knob.write_text("1\n")
    with session_groups_off(knob) as said:
        assert knob.read_text() == "0" and said == "autogroup off for the pairs (on before, and after)"
    assert knob.read_text() == "1"
    knob.write_text("1\n")
    try:
        with session_groups_off(knob):
            raise KeyboardInterrupt  # Ctrl-C in the middle of a pair
    except KeyboardInterrupt:
        pass
    assert knob.read_text() == "1"
    knob.write_text("0\n")
    with session_groups_off(knob) as said:
        assert said == "autogroup off"
    with session_groups_off(tmp_path / "absent") as said:
        assert said == "as the kernel does (no autogroup)"
    # a knob that reads but cannot be written, whoever runs this (root writes through a file's mode)
    with session_groups_off(Path("/proc/version")) as said:
        assert said.startswith("autogroup on: it could not be turned off")
