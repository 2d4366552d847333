"""The live screen of an open-loop rate, fed the event stream of a real run (a short rate against the
session's server, --jsonl): offered against achieved, drops a second, the pool's busy users, and
the response time (from the due moment) against the service time (from the send)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bench_dsl.engine import events as ev
from bench_dsl.results.stream import read_stream

from ..conftest import run_bench
from ..fixtures.replay import screen_text
from .test_tui_app import replayed

pytestmark = pytest.mark.slow

SCENARIO = """scenario "paced" {
  target env("BENCH_DSN")
  workload custom { transaction t { query "SELECT SLEEP(0.005)" } }
  rate 100 tps
  users max 16
  duration 3s
  report every 1s
}
"""


async def test_the_screen_shows_offered_achieved_drops_busy_and_both_latencies(dsn_url: str, tmp_path: Path) -> None:
    f, stream = tmp_path / "r.bench", tmp_path / "r.jsonl"
    f.write_text(SCENARIO)
    r = run_bench("run", str(f), "--headless", "--jsonl", str(stream), "--workers", "1", "--json", str(tmp_path / "r.json"))
    assert r.returncode == 0, r.stderr
    evs = read_stream(stream).events
    last = [e for e in evs if isinstance(e, ev.LiveTick) and e.phase == "hold"][-1]
    async with replayed(evs[:evs.index(last) + 1]) as (app, _pilot, _controls, _sink):
        text = screen_text(app)
    # every label whole at 120 columns (a rate's figures once cut them to 9 letters), each above its value
    lines = text.splitlines()
    head = next(i for i, line in enumerate(lines) if "offered" in line)
    labels = lines[head]
    for label in ("users", "tps", "offered", "achieved", "dropped/s", "busy", "p99 resp", "p99 serv", "cpu server"):
        assert re.search(rf"(^|\s){re.escape(label)}(\s|$)", labels), labels
    figures = dict(zip(re.split(r"\s{2,}", labels.strip()), re.split(r"\s{2,}", lines[head + 1].strip()),
                       strict=True))
    # the tick's own offered rate, which is 100 a second give or take where a loaded machine's ticks end
    # (102.9 was seen)
    offered = last.figures.declared["offered_tps"]
    assert float(figures["offered"]) == pytest.approx(offered, abs=0.1) and abs(offered - 100) <= 5, figures
    assert figures["busy"].endswith("/16"), figures
    resp, serv = (float(figures[k].removesuffix(" ms")) for k in ("p99 resp", "p99 serv"))
    assert 5 <= serv <= resp, figures  # the response time holds the service time and the wait before it
