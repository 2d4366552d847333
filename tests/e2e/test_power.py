"""`power` end to end against the tests' server: a served powercap tree (tests/powercap.py: 100 W,
counters that wrap every second or two) read as RAPL, a condition on it, the figures in every row,
--jsonl and the console; a run without a source, and with a source that never answers, says why it
has no power figure and never shows 0 W."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ..conftest import ROOT, run_bench, run_measured
from ..powercap import WATTS, served
from .test_toys import SCREEN

pytestmark = pytest.mark.slow

CLIMB = """scenario "power" {{
  target env("BENCH_DSN")
  workload custom {{ transaction one {{ query "SELECT 1" }} }}
  ramp step {{ start 1  step +1  max 2  settle 1s  hold 3s }}
  {power}
  stop when {{ {stop} }}
}}
"""
POWER = ("power_w", "power_max_w", "energy_j", "tx_per_joule")


def _write(tmp_path: Path, power: str, stop: str = "stall > 30s") -> Path:
    f = tmp_path / "power.bench"
    f.write_text(CLIMB.format(power=power, stop=stop))
    return f


def test_rapl_counters_that_wrap_give_each_row_its_power_and_a_condition_on_it_fires(dsn_url: str,
                                                                                   tmp_path: Path) -> None:
    out, stream = tmp_path / "r.json", tmp_path / "r.jsonl"
    with served(tmp_path / "sys") as powercap:
        f = _write(tmp_path, f'power rapl "{powercap}"', f"power(server) > {WATTS / 2:g}W")
        r, doc = run_measured("run", str(f), "--headless", "--json", str(out), "--jsonl", str(stream), out=out)
    assert r.returncode == 0, r.stderr
    assert doc["power"] == {"source": f"rapl {powercap}", "measured": True, "no_power_figure": None}
    # the condition fired at the first step: the machine drew about the served 100 W (the package's 80
    # and DRAM's 20; the core's 50 are inside the package), its counters wrapping all along
    assert doc["stop"]["condition"] == "power(server) > 50W" and len(doc["steps"]) == 1
    (step,) = doc["steps"]
    assert WATTS * 0.5 < step["power_w"] < WATTS * 2, step
    assert step["power_max_w"] >= step["power_w"] * 0.999
    assert step["tx_per_joule"] == pytest.approx(step["tps"] / step["power_w"], rel=0.01)
    assert step["energy_j"] > 0  # over the readings' own span (the arithmetic: tests/unit/test_power_figures.py)
    assert all(k in doc["summary"] for k in POWER)
    assert doc["figures"]["figures"]["power_w"]["unit"] == "W" and doc["figures"]["figures"]["power_w"]["side"] == "host"
    lines = [json.loads(line) for line in stream.read_text().splitlines()]
    assert any("power_w" in e for e in lines if e["type"] == "interval")
    assert any(e["type"] == "tick" and "power_w" in e for e in lines)  # the live screen's headline
    last_tick = [e for e in lines if e["type"] == "tick"][-1]
    assert "power_w " in r.stderr and "tx_per_joule " in r.stderr  # the console's step line
    again = tmp_path / "again.json"
    again.write_text(out.read_text())
    compared = run_bench("compare", str(out), str(again))
    assert compared.returncode == 0 and "power W @ 1 users" in compared.stdout and "tx per joule" in compared.stdout
    # the live screen's headline, as the replay shows the stream
    screen = subprocess.run([sys.executable, "-c", SCREEN, str(stream)], capture_output=True, text=True, cwd=ROOT,
                            timeout=120, check=False)
    assert screen.returncode == 0, screen.stderr
    lines = screen.stdout.splitlines()
    head = next(i for i, ln in enumerate(lines) if "power W" in ln and "users" in ln.split()[:1])
    shown = lines[head + 1][lines[head].index("power W"):][:len("power W") + 2].split()
    # the headline is the last tick's: its power, or a dash when no reading fell in it (the run's last
    # tick on a machine busy with the suite's other processes, seen once), never 0 W
    if last_tick.get("power_w") is None:
        assert shown == ["-"], lines[head:head + 2]
    else:
        assert shown and WATTS * 0.5 < float(shown[0]) < WATTS * 2, lines[head:head + 2]


def test_without_a_source_the_result_says_why_and_shows_no_power_at_all(dsn_url: str, tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    r, doc = run_measured("run", str(_write(tmp_path, "")), "--headless", "--json", str(out), "--max-steps", "1",
                          out=out)
    assert r.returncode == 0, r.stderr
    assert doc["power"]["measured"] is False and doc["power"]["source"] is None
    assert doc["power"]["no_power_figure"].startswith("no power source: the scenario has no `power`")
    text = out.read_text()
    assert all(k not in text for k in POWER)  # never 0 W: no figure, no catalog entry
    assert "no power figure" not in r.stderr  # nothing asked: nothing to warn of


def test_a_source_that_never_answers_is_a_reason_or_with_a_condition_the_scenarios_error(dsn_url: str,
                                                                                        tmp_path: Path) -> None:
    missing = tmp_path / "no-powercap"
    out = tmp_path / "r.json"
    r, doc = run_measured("run", str(_write(tmp_path, f'power rapl "{missing}"')), "--headless", "--json", str(out),
                          "--max-steps", "1", out=out)
    assert r.returncode == 0, r.stderr
    why = doc["power"]["no_power_figure"]
    assert doc["power"]["measured"] is False and f"{missing} does not exist: this machine has no powercap" in why
    assert f"no power figure: rapl {missing}" in r.stderr
    rows = [*doc["intervals"], *doc["steps"], doc["summary"]]
    assert rows and not [k for row in rows for k in POWER if k in row]  # gaps, never 0 W
    # a condition on it could never be judged: refused when the run starts, before any load
    r = run_bench("run", str(_write(tmp_path, f'power rapl "{missing}"', "power(server) > 400W")), "--headless",
                  "--json", str(tmp_path / "c.json"))
    assert r.returncode == 2, r.stderr
    assert "power(server) > 400W: the power cannot be read: rapl" in r.stderr and "does not exist" in r.stderr
