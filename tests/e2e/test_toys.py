"""The seams, proven (issue 40, 5): a load profile on an axis of its own, a fleet and a figure of the
server's, each one module of the tests (tests/toys) named in BENCH_DSL_PLUGINS, with no line of
bench-dsl naming them. A scenario that uses the three, and a condition on the figure, runs end to end;
the result, --jsonl, compare, the report and the replay's live screen show them. Without the plugins
the same file is a scenario error."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ..conftest import ROOT, run_bench, run_measured

pytestmark = pytest.mark.slow

TOYS = {"BENCH_DSL_PLUGINS": "tests.toys.clients_load,tests.toys.threads_fleet,tests.toys.rows_per_tx,tests.toys.rises"}
SCENARIO = ROOT / "tests" / "fixtures" / "toys" / "toys.bench"

# the replay on the live screen (headless), in a process of its own: plugins are read once a process
SCREEN = """
import asyncio, sys
from pathlib import Path
from bench_dsl.results.player import Player
from bench_dsl.results.replay import load
from bench_dsl.tui.app import start_run
from bench_dsl.tui.replay_app import attach_replay
from tests.fixtures.replay import screen_text, settled

async def main() -> None:
    path = Path(sys.argv[1])
    player = Player(load(path), 500.0)
    app = attach_replay(player, path, wait_for_key=True)
    async with app.run_test(size=(160, 40)) as pilot:
        start_run(app, player)
        for _ in range(3000):
            if app.done:
                break
            await asyncio.sleep(0.02)
        app.pull()
        await settled(pilot)
        print(screen_text(app))
        await pilot.press("q")

asyncio.run(main())
"""


def test_a_load_a_fleet_and_a_server_figure_from_outside_run_and_show_everywhere(dsn_url: str, tmp_path: Path) -> None:
    out, stream = tmp_path / "toys.json", tmp_path / "toys.jsonl"
    r, doc = run_measured("run", str(SCENARIO), "--headless", "--json", str(out), "--jsonl", str(stream), out=out,
                          env=TOYS)
    assert r.returncode == 0, r.stderr
    assert doc["fleet"] == "threads"  # the toy fleet ran the users
    # the toy load: its axis, each step's point on it (two users a client), the saturation point and expect on it
    assert doc["scenario"]["load_axis"] == "clients"
    assert [(s["users"], s["clients"]) for s in doc["steps"]] == [(2, 1), (4, 2)]
    assert doc["saturation"]["axis"] == "clients" and doc["saturation"]["clients"] == 2
    assert doc["expect"] == [{"expect": "saturation >= 2", "value": 2.0, "limit": 2.0, "unit": "clients",
                              "passed": True}]
    assert "2 clients met every condition" in r.stderr
    # the toy figure: declared in the result's catalog as the server's, in every step and the summary
    assert doc["figures"]["figures"]["rows_read_per_tx"]["side"] == "server"
    for s in doc["steps"]:
        assert 100 < s["rows_read_per_tx"] < 1000, s["rows_read_per_tx"]
        judged, rises = s["conditions"]
        assert judged["metric"] == "rows_read_per_tx" and judged["value"] == s["rows_read_per_tx"]
        # the toy condition: judged at the step's end on the same figure, against the step before's
        assert (rises["kind"], rises["metric"], rises["fired"]) == ("rises", "rows_read_per_tx", False)
        assert rises["held"] == {"figure": "rise", "op": ">"} and rises["value"] == s["rows_read_per_tx"]
    assert doc["steps"][1]["conditions"][1]["previous"] == doc["steps"][0]["rows_read_per_tx"]
    assert 100 < doc["summary"]["rows_read_per_tx"] < 1000
    events = [json.loads(line) for line in stream.read_text().splitlines()]
    assert any(e["type"] == "interval" and "rows_read_per_tx" in e for e in events)
    assert any(e["type"] == "workers" and e["fleet"] == "threads" for e in events)
    # the toy condition's state as the judge held it: its figure under its own name, against step 1
    risen = [s for e in events if e["type"] == "conditions" for s in e["states"]
             if s["text"] == "rows_read_per_tx rises 1000%" and "rise" in s]
    assert risen and all(s["against"] == 1 and abs(s["rise"]) < 1000 for s in risen), risen[-3:]

    (tmp_path / "again.json").write_bytes(out.read_bytes())  # compare takes two: the run against itself
    c = run_bench("compare", str(out), str(tmp_path / "again.json"), env=TOYS)
    assert c.returncode == 0, c.stderr
    assert "saturation (clients)" in c.stdout
    assert "rows read/tx @ 1 clients" in c.stdout and "rows read/tx @ 2 clients" in c.stdout

    html = tmp_path / "report" / "report.html"
    rep = run_bench("report", str(out), "-o", str(html), env=TOYS)
    assert rep.returncode == 0, rep.stderr
    page = html.read_text()
    assert "rows read/tx against clients" in page and "Throughput against clients" in page

    screen = subprocess.run([sys.executable, "-c", SCREEN, str(stream)], capture_output=True, text=True, cwd=ROOT,
                            env={**__import__("os").environ, **TOYS}, timeout=120)
    assert screen.returncode == 0, screen.stderr[-3000:]
    lines = screen.stdout.splitlines()
    head = next(i for i, ln in enumerate(lines) if "rows read/tx" in ln and "users" in ln.split()[:1])
    column = lines[head].index("rows read/tx")
    shown = lines[head + 1][column:column + len("rows read/tx")].split()
    assert shown and 100 < float(shown[0].replace(",", "")) < 1000, lines[head:head + 2]
    assert "2 clients" in screen.stdout, screen.stdout  # the verdict, on the toy's axis
    risen_row = next(ln for ln in lines if "rows_read_per_tx rises" in ln)  # worded by its declaration alone
    assert "rise > 1,000%" in risen_row and re.search(r"[-+]\d+\.\d% rise", risen_row), risen_row


def test_without_its_plugin_the_toys_scenario_is_refused_and_a_plugin_that_is_not_there_is_said() -> None:
    r = run_bench("check", str(SCENARIO))
    assert r.returncode == 2
    assert "unknown metric 'rows_read_per_tx'" in r.stderr and "threads" in r.stderr, r.stderr
    assert "unknown load 'clients'" in r.stderr
    assert "'rises' is no comparison" in r.stderr and "plateau, kink" in r.stderr
    r = run_bench("check", str(SCENARIO), env={"BENCH_DSL_PLUGINS": "tests.toys.no_such_toy"})
    assert r.returncode == 2 and "plugin 'tests.toys.no_such_toy' (BENCH_DSL_PLUGINS) cannot be imported" in r.stderr
    assert "Traceback" not in r.stderr
