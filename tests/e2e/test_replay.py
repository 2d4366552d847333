"""`bench replay`: a real short run watched on the live screen, then its result (and its --jsonl
stream) replayed at high speed to the same screen: the final state is the same; the result's events
fold back into the same document; without a terminal the console lines come out again; a file that is
not a result is a usage error."""

from __future__ import annotations

import asyncio
import io
import json
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from textual.pilot import Pilot

from bench_dsl.cli import main as cli
from bench_dsl.core.live_figures import BusyDisk, ClientLag
from bench_dsl.engine import events as ev
from bench_dsl.engine.events import Event
from bench_dsl.engine.plan import plan
from bench_dsl.engine.rows import StepRow
from bench_dsl.engine.runner import Run
from bench_dsl.engine.scenario_file import load as load_scenario
from bench_dsl.engine.stopping import StopReason
from bench_dsl.results.document import ResultDocument
from bench_dsl.results.player import Player
from bench_dsl.results.replay import fill_in, load
from bench_dsl.results.sinks import ConsoleSink, JsonLinesSink, JsonResultSink
from bench_dsl.tui.app import attach_ui, run_app, start_run
from bench_dsl.tui.replay_app import ReplayApp, attach_replay
from bench_dsl.tui.state import LiveState

from ..conftest import BENCH, ROOT
from ..fixtures.replay import screen_text, settled
from ..ui.test_tui_terminal import Tmux, tmux  # noqa: F401  (the fixture: a private tmux server)

BIG = (120, 40)
WAIT_S = 60.0

# Two named locks: throughput grows by half from 1 to 2 users (they meet on a lock half the time),
# then hardly; the plateau fires at step 3 (4 users) or so. One transaction in ten fails (1062), so errors are
# counted and described.
SCENARIO = """
scenario "replayed" {
  target env("BENCH_DSN")
  seed 11
  setup {
    sql "CREATE TABLE IF NOT EXISTS replay_dup (id INT PRIMARY KEY)"
    sql "INSERT IGNORE INTO replay_dup VALUES (1)"
  }
  workload custom {
    transaction locked weight 90 {
      let k = uniform(1, 2)
      query "SELECT GET_LOCK(CONCAT('bench-dsl-replay-', :k), 10)"
      query "SELECT SLEEP(0.01)"
      query "SELECT RELEASE_LOCK(CONCAT('bench-dsl-replay-', :k))"
    }
    transaction dup weight 10 {
      query "INSERT INTO replay_dup VALUES (1)"
    }
  }
  warmup 1s
  ramp step { start 1 users  step x2  settle 1s  hold 2s  max 16 users }
  stop when {
    p90(locked) > 2s
    tps plateau 25%
    p90 kink 20x
    error_rate > 50%
  }
  report every 1s
}
"""


@dataclass
class Live:
    """What the live run left: its files, its final screen and state, its console lines."""
    json: Path
    jsonl: Path
    screen: str
    state: LiveState
    console: list[str]
    exit_code: int


async def _until(cond: Any, what: str) -> None:
    for _ in range(int(WAIT_S / 0.02)):
        if cond():
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"{what} did not happen within {WAIT_S:g}s")


@pytest.fixture(scope="module")
async def live(dsn_url: str, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Live]:
    """The run, watched on the live screen (headless, 120x40) until its verdict."""
    d = tmp_path_factory.mktemp("replay")
    (d / "replayed.bench").write_text(SCENARIO)
    sc = load_scenario(d / "replayed.bench")
    out = io.StringIO()
    jsonl = (d / "r.jsonl").open("w", encoding="utf-8")
    sinks: list[Any] = [JsonResultSink(d / "r.json"), JsonLinesSink(jsonl, "jsonl"),
                        ConsoleSink(Console(file=out, width=300, color_system=None))]
    run = Run(sc, plan(sc), list(sinks))
    app = attach_ui(run, wait_for_key=True)
    task = asyncio.create_task(run_app(app, run, headless=True, size=BIG))
    await _until(lambda: app.done, "the live run's verdict")
    app.pull()  # what the last events changed, drawn now rather than at the screen's next timer
    await settled(Pilot(app))
    screen = screen_text(app)
    await Pilot(app).press("q")
    code = await task
    for s in sinks:
        s.close()
    yield Live(d / "r.json", d / "r.jsonl", screen, app.state, out.getvalue().splitlines(), code)


async def _replay(path: Path, speed: float = 200.0) -> tuple[str, ReplayApp]:
    """The replay of `path` on the screen, to its verdict; the screen as text."""
    player = Player(load(path), speed)
    app = attach_replay(player, path, wait_for_key=True)
    async with app.run_test(size=BIG) as pilot:
        start_run(app, player)
        await _until(lambda: app.done, "the replay's end")
        app.pull()
        await settled(pilot)
        text = screen_text(app)
        assert app.is_running  # the verdict stays until a key
        await pilot.press("q")
    return text, app


def panel(screen: str, title: str) -> list[str]:
    """The lines of the bordered panel whose title starts with `title`."""
    lines = screen.splitlines()
    top = next(i for i, ln in enumerate(lines) if f"─ {title}" in ln or f"━ {title}" in ln)
    left = lines[top].rfind("╭", 0, lines[top].index(title)) if "╭" in lines[top] else lines[top].index("┏")
    right = min(j for j in (lines[top].find("╮", left), lines[top].find("┓", left)) if j > 0)
    out = []
    for ln in lines[top + 1:]:
        if ln[left:left + 1] in ("╰", "┗"):
            return out
        out.append(ln[left:right + 1])
    raise AssertionError(f"the panel {title} has no bottom")


def figure(screen: str, label: str) -> str:
    """The value under a label of the figures row."""
    lines = screen.splitlines()
    i = next(i for i, ln in enumerate(lines) if ln.split()[:2] == ["users", "tps"])
    col = lines[i].index(label)
    return lines[i + 1][max(col - 8, 0):col + len(label) + 8].split()[0]


# the screen ----------------------------------------------------------------------------------------
@pytest.mark.slow
async def test_the_replayed_result_ends_on_the_screen_the_live_run_ended_on(live: Live) -> None:
    doc = json.loads(live.json.read_text())
    assert doc["stop"]["reason"] == "stop_condition" and live.exit_code == 0  # the run was the one meant
    text, app = await _replay(live.json)
    st, was = app.state, live.state
    assert text.splitlines()[0].startswith(f" replay of {live.json}")
    # users, the last interval's throughput, the saturation point, the condition that fired
    assert figure(text, "users") == figure(live.screen, "users") == str(doc["intervals"][-1]["users"])
    assert st.interval is not None and was.interval is not None
    assert st.interval["tps"] == was.interval["tps"] and st.saturation_users == was.saturation_users is not None
    # the end as the result says it (the live run's bottleneck holds its figures unrounded, as measured)
    assert st.fired == was.fired and st.finished is not None and was.finished is not None
    assert st.finished.to_json() == was.finished.to_json()
    assert st.step_points == was.step_points and st.last_step == was.last_step
    for part in ("stop conditions", "transactions", "what ran out", "verdict"):
        assert panel(text, part) == panel(live.screen, part), part
    assert any(f"FIRED  {doc['stop']['condition']}" in ln for ln in panel(text, "stop conditions"))
    # what ran out in the last step: its finding, its confidence, the step in the panel's border
    ran_out, last = " ".join(" ".join(ln[1:-1] for ln in panel(text, "what ran out")).split()), doc["steps"][-1]
    said = last["bottleneck"]
    assert ran_out.startswith(f"{said['confidence']} confidence: {' '.join(said['words'].split()[:4])}"), ran_out
    assert f"step {last['step']} · {last['users']} users" in text
    errors = [(e.code, e.count, e.message) for e in st.log.tail(50) if e.code is not None]
    assert errors and errors == [(e.code, e.count, e.message) for e in was.log.tail(50) if e.code is not None]


@pytest.mark.slow
async def test_the_replayed_event_stream_ends_on_the_same_screen(live: Live) -> None:
    text, app = await _replay(live.jsonl)
    assert app.state.finished is not None and live.state.finished is not None
    assert app.state.finished.to_json() == live.state.finished.to_json()
    assert app.state.step_points == live.state.step_points
    for part in ("stop conditions", "transactions"):
        assert panel(text, part) == panel(live.screen, part), part


@pytest.mark.slow
async def test_the_replay_of_an_interrupted_run_keeps_its_verdict_until_a_key(live: Live, tmp_path: Path) -> None:
    """Live, a run stopped on request leaves its screen at once; its replay is looked at."""
    doc = json.loads(live.json.read_text())
    doc.update(status="interrupted", exit_code=130, stop={"reason": "interrupted", "signal": "SIGINT"})
    path = tmp_path / "interrupted.json"
    path.write_text(json.dumps(doc))
    text, _ = await _replay(path)  # asserts the app is still there at the verdict
    assert "stopped on request" in " ".join(panel(text, "verdict")) and "exit 130" in text


@pytest.mark.slow
async def test_space_pauses_and_q_leaves_in_the_middle(live: Live) -> None:
    player = Player(load(live.json), 2.0)
    app = attach_replay(player, live.json, wait_for_key=True)
    async with app.run_test(size=BIG) as pilot:
        task = start_run(app, player)
        await _until(lambda: app.state.step is not None, "the first step")
        await pilot.press("space")
        assert player.paused and "paused" in screen_text(app).splitlines()[0]
        shown = len(app.state.series)
        await asyncio.sleep(1.5)  # three seconds of the run at 2x: nothing may come while paused
        assert len(app.state.series) == shown
        await pilot.press("n", "h")  # no run to step or hold: nothing changes
        assert player.paused and app.is_running
        await pilot.press("space")
        await _until(lambda: len(app.state.series) > shown, "the replay going on")
        await pilot.press("q")  # at once: nothing to save
        await _until(task.done, "the player's end")
        assert not app.is_running and app.state.finished is None


@pytest.mark.slow
def test_the_command_in_a_terminal(live: Live, tmux: Tmux, tmp_path: Path) -> None:  # noqa: F811
    """`bench replay` at a real terminal: the screen, the verdict kept until q, exit 0."""
    rc = tmp_path / "rc"
    tmux("new-session", "-d", "-s", "ui", "-x", "120", "-y", "40",
         f"cd {ROOT} && {sys.executable} -m bench_dsl.cli.main replay {live.json} --speed 4; echo $? > {rc}; sleep 60")
    tmux.wait_for("the replay's screen", lambda s: f"replay of {live.json}" in s and "step 1/" in s)
    done = tmux.wait_for("the verdict", lambda s: "press q or Enter to leave" in s)
    assert panel(done, "verdict") == panel(live.screen, "verdict") and not rc.exists()
    tmux("send-keys", "-t", "ui", "q")
    deadline = time.monotonic() + WAIT_S
    while not rc.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert rc.read_text().strip() == "0"


# the events ----------------------------------------------------------------------------------------
@pytest.mark.slow
def test_the_replayed_events_fold_back_into_the_same_document(live: Live) -> None:
    doc = json.loads(live.json.read_text())
    folded = ResultDocument()
    for _, e in load(live.json):
        folded.apply(e)
    assert json.loads(json.dumps(folded.doc, default=str)) == doc


def test_the_replayed_ticks_carry_the_server_side_and_the_client_s_lag(live: Live, tmp_path: Path) -> None:
    """The live screen showed replica lag, the busiest disk and the client's scheduling lag from the
    ticks; a replay makes its ticks from the intervals, which record all three."""
    doc = json.loads(live.json.read_text())
    hold = [i for i in doc["intervals"] if i["phase"] == "hold"]
    assert all("client_lag_ms_by_process" in i for i in hold)  # measured by every run
    hold[0]["replication"] = {"lag_s": 3.25, "lag_max_s": 4.0, "lag_min_s": 1.0, "replicas": []}
    hold[0]["disk"] = {"busiest": "nvme0n1", "util_pct": 71.5, "iops": 10.0, "await_ms": 0.2, "devices": {}}
    (tmp_path / "r.json").write_text(json.dumps(doc))
    ticks = [e for _, e in load(tmp_path / "r.json") if isinstance(e, ev.LiveTick) and e.phase == "hold"]
    first = ticks[0].figures
    assert first.lag_s == 3.25 and first.disk == BusyDisk("nvme0n1", 71.5)
    worst = max(f["p90"] for probes in hold[0]["client_lag_ms_by_process"].values() for f in probes.values() if f)
    assert first.client_lag == ClientLag(worst, 10.0)
    assert all(t.figures.lag_s is None for t in ticks[1:])  # no replica there


@pytest.mark.slow
def test_the_replay_keeps_the_runs_timing(live: Live) -> None:
    evs = load(live.json)
    times = [t for t, _ in evs]
    assert times == sorted(times)
    assert times[-1] == json.loads(live.json.read_text())["elapsed_s"]
    ticks = [e for _, e in evs if e.type == "tick"]
    intervals = [e for _, e in evs if e.type == "interval"]
    # a tick at each 1 s interval's end; an interval a loaded machine stretched (1.3 s in a fresh-clone
    # CI) may be drawn with one more
    assert {t.t for t in ticks} >= {i.row.t for i in intervals}  # type: ignore[attr-defined]
    assert len(intervals) <= len(ticks) <= len(intervals) + sum(i.row.figures["seconds"] > 1.2 for i in intervals)  # type: ignore[attr-defined]


def test_conditions_are_in_the_judges_words_at_each_step_and_when_one_fires() -> None:
    """Between steps a result keeps nothing of the conditions; at a step's end its verdicts: a value
    near its limit is near (judge.state_of), one judged within it ok, a fired one stays fired."""
    specs = (ev.ConditionSpec("p90 > 250ms", "p90 > 250ms", "threshold", "p90", ">", 250.0, "ms", None, True),
             ev.ConditionSpec("tps plateau 5%", "tps plateau 5%", "plateau", "tps", None, 5.0, "%", None, False),
             ev.ConditionSpec("cpu(server) > 80% for 15s", "cpu(server) > 80% for 15s", "threshold", "cpu(server)",
                              ">", 80.0, "%", 15.0, False))
    started = ev.Started("s", "t", "v", True, {}, [], [c.text for c in specs], specs)

    def verdict(c: ev.ConditionSpec, value: float, previous: float | None = None) -> dict[str, Any]:
        return {"condition": c.text, "kind": c.kind, "fired": False, "value": value, "previous": previous}

    step1 = ev.StepEnded(StepRow(1, 1, True, None, 0.0, {}, None, [verdict(specs[0], 210.0), verdict(specs[1], 100.0)]))
    step2 = ev.StepEnded(StepRow(2, 2, True, None, 0.0, {}, None, [verdict(specs[0], 100.0), verdict(specs[1], 105.5, 100.0)]))
    fired = ev.Fired(StopReason("stop_condition", condition=specs[2].text, value=91.0, window_s=15.0, step=3,
                                at_s=30.0))
    step3 = ev.StepEnded(StepRow(3, 3, True, None, 0.0, {}, None, [verdict(specs[0], 240.0)]))
    said = [e for _, e in fill_in([(0.0, started), (10.0, step1), (20.0, step2), (30.0, fired), (31.0, step3)])
            if isinstance(e, ev.Conditions)]
    assert [[(s.state, s.source) for s in c.states] for c in said] == [
        [("near", "step 1"), ("-", "step 1"), ("-", "")],  # 210 of 250ms; a plateau without a step before
        [("ok", "step 2"), ("near", "step 2"), ("-", "")],  # +5.5%: within 25% of the 5% it must gain
        [("ok", "step 2"), ("near", "step 2"), ("fired", "last 15s")],
        [("near", "step 3"), ("near", "step 2"), ("fired", "last 15s")],
    ]
    assert said[2].states[2].value == 91.0 and said[2].t == 30.0


def test_a_sustained_condition_is_replayed_at_the_worst_its_window_reached_in_each_step() -> None:
    from bench_dsl.results.replay import condition_specs

    text = "status(Threads_running) > 1000 for 5s"
    verdict = {"condition": text, "resolved": text, "kind": "threshold", "metric": "status(Threads_running)",
               "fired": False, "value": 870.0, "limit": 1000.0, "unit": "", "previous": None, "window_s": 5.0}
    doc = {"scenario": {"stop": [text]}, "steps": [{"step": 1, "users": 1, "complete": True, "start_s": 0.0, "conditions": [verdict]}], "stop": None}
    (spec,) = condition_specs(doc)  # known from the step's row, though it never fired
    assert (spec.op, spec.limit, spec.window_s) == (">", 1000.0, 5.0)
    started = ev.Started("s", "t", "v", True, {}, [], [text], (spec,))
    said = [e for _, e in fill_in([(0.0, started), (10.0, ev.StepEnded(StepRow.from_json(doc["steps"][0])))]) if isinstance(e, ev.Conditions)]
    assert [(s.value, s.state, s.source) for s in said[0].states] == [(870.0, "near", "step 1, worst 5s")]


async def test_the_player_keeps_the_pace_it_is_given() -> None:
    """Never ahead of the run's seconds divided by the speed; a speed ignored would take the run's 1s."""
    evs = [(t, ev.Log("info", f"at {t}", t)) for t in (0.0, 0.5, 1.0)]
    loop = asyncio.get_running_loop()

    async def play(speed: float | None) -> list[float]:
        seen: list[float] = []
        sink = type("Sink", (), {"emit": lambda self, e: seen.append(loop.time())})()
        began = loop.time()
        assert await Player(evs, speed, [sink]).execute() == 0
        return [t - began for t in seen]

    at = await play(4.0)
    assert len(at) == 3 and all(t >= due - 0.005 for t, due in zip(at, (0.0, 0.125, 0.25), strict=True)), at
    assert (await play(40.0))[-1] < 0.5 and (await play(None))[-1] < 0.2  # None: at once


# the command ---------------------------------------------------------------------------------------
@pytest.mark.slow
def test_without_a_terminal_it_prints_the_console_lines_of_the_run(live: Live,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["replay", str(live.json)]) == 0
    printed = capsys.readouterr().out.splitlines()

    def measured(lines: list[str]) -> list[str]:  # intervals, steps, the verdict: not the server's start
        return [ln for ln in lines if ln.startswith(("[", "step ", "saturation point", "measured:", "stop "))]

    intervals = [ln for ln in printed if ln.startswith("[")]
    assert len(intervals) == len(json.loads(live.json.read_text())["intervals"]) > 3
    assert measured(printed) == measured(live.console)


@pytest.mark.parametrize(("content", "says"), [
    pytest.param(None, "r.json: no such file", id="missing"),
    pytest.param("scenario x {}", "r.json: line 1: not JSON", id="not-json"),
    pytest.param('{"format": "bench-dsl-result", "format_version": 1, "intervals": []}', "r.json: tool: missing",
                 id="incomplete"),
    pytest.param('{"type": "interval"}\n', "r.json: line 1: not an event", id="bad-event"),
    pytest.param("", "is empty", id="empty"),
])
def test_a_file_that_is_not_a_result_is_a_usage_error(content: str | None, says: str, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "r.json"
    if content is not None:
        path.write_text(content)
    assert cli.main(["replay", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("bench: ") and says in " ".join(err.split()) and "Traceback" not in err


def test_a_reader_that_leaves_ends_the_replay_quietly() -> None:
    """`bench replay r.json | head -1`: the lines after the reader left find no pipe; exit 0, not rich's 1."""
    path = ROOT / "tests" / "fixtures" / "quickstart.jsonl"  # 10 s of run: about 1 s at 10x
    proc = subprocess.Popen([*BENCH, "replay", str(path), "--speed", "10"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=ROOT)
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.readline().strip()
    proc.stdout.close()
    assert proc.wait(timeout=60) == 0 and proc.stderr.read() == ""


def test_a_speed_that_is_no_speed_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    path = ROOT / "tests" / "fixtures" / "quickstart.jsonl"
    for speed in ("0", "-1", "nan"):
        assert cli.main(["replay", str(path), "--speed", speed]) == 2
        assert "--speed must be a number larger than 0" in capsys.readouterr().err


def test_a_recorded_stream_with_ticks_is_played_as_it_is() -> None:
    """The UI tests' recording has ticks, conditions and log lines: nothing is made up beside them."""
    path = ROOT / "tests" / "fixtures" / "steps.jsonl"
    recorded = [json.loads(ln) for ln in path.read_text().splitlines()]
    played: list[Event] = [e for _, e in load(path)]
    assert [json.loads(json.dumps(e.to_json())) for e in played] == recorded
