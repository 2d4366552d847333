"""Planner, metrics, stop conditions and generators: pure code, no clock, no database."""

from __future__ import annotations

import random
import subprocess
import sys
from collections import Counter

import pytest

from bench_dsl.engine.judge import WindowedConditions, judge
from bench_dsl.engine.phases import Phase
from bench_dsl.engine.plan import plan
from bench_dsl.engine.rows import IntervalRow
from bench_dsl.engine.scenario_file import load
from bench_dsl.language import model as m
from bench_dsl.language.generators import compile_value, nurand, special, zipf
from bench_dsl.measure.metrics import Aggregate, TickStats
from bench_dsl.measure.txstats import HIGHEST_US, TxStats, new_histogram
from bench_dsl.measure.recorder import Recorder

from ..conftest import ROOT


def test_step_plan_is_exact() -> None:
    sc = load(ROOT / "examples/step-saturation.bench", env={})
    p = plan(sc)
    assert p.steps == 64  # 4, 8, ... 256
    assert p.phases[:4] == (Phase("warmup", None, 4, 4, 10.0), Phase("hold", 1, 4, 4, 20.0, "step"),
                            Phase("settle", 2, 8, 8, 5.0), Phase("hold", 2, 8, 8, 20.0, "step"))
    assert p.phases[-1] == Phase("hold", 64, 256, 256, 20.0, "step")
    small = plan(sc, time_scale=0.1, max_steps=2)
    assert small.phases == (Phase("warmup", None, 4, 4, 1.0), Phase("hold", 1, 4, 4, 2.0, "step"),
                            Phase("settle", 2, 8, 8, 1.0), Phase("hold", 2, 8, 8, 2.0, "step"))


def test_multiplicative_and_linear_plans() -> None:
    assert m.StepRamp(1, None, 2.0, 0, 1, 16).user_counts() == [1, 2, 4, 8, 16]
    assert m.StepRamp(32, 32, None, 0, 1, 100).user_counts() == [32, 64, 96]
    sc = load(ROOT / "examples/custom-hot-rows.bench", env={})
    assert plan(sc).phases == (Phase("ramp", 1, 1, 32, 30.0, "interval"), Phase("hold", 1, 32, 32, 30.0, "interval"))


def _agg(latencies_us: list[int], seconds: float = 1.0, errors: int = 0, cpu: float | None = None) -> Aggregate:
    st = TxStats()
    for v in latencies_us:
        st.hist.record_value(v)
    st.count = len(latencies_us)
    st.errors = Counter({1213: errors}) if errors else Counter()
    agg = Aggregate(("t",))
    agg.add(TickStats(seconds, seconds, "hold", 1, 1, {"t": st}, {"server": cpu, "host": None, "client": None}))
    return agg


def _cond(text: str, ramp: str = "ramp step { start 1 users step +1 users hold 10s max 4 users }") -> m.Condition:
    sc = load("c.bench", env={}, text=f'scenario "c" {{ workload custom {{ transaction t {{ query "SELECT 1" }} }} '
                                       f'{ramp} stop when {{ {text} }} }}')
    return sc.stop[0]


def test_thresholds_plateau_kink() -> None:
    fast, slow = _agg([1000] * 100), _agg([10_000] * 100)
    p90 = _cond("p90(t) > 5ms")
    assert not judge(p90, fast).fired and judge(p90, slow).fired
    # seconds inside, ms when shown; HDR keeps 3 significant digits
    assert judge(p90, slow).value == pytest.approx(10.0 / 1000, rel=1e-3)
    assert judge(p90, slow).to_json()["value"] == pytest.approx(10.0, rel=1e-3)
    kink = _cond("p90 kink 3x")
    assert judge(kink, slow, fast).fired and not judge(kink, fast, slow).fired
    plateau = _cond("tps plateau 5%")
    assert judge(plateau, _agg([1] * 104), _agg([1] * 100)).fired  # +4% < 5%
    assert not judge(plateau, _agg([1] * 110), _agg([1] * 100)).fired
    err = _cond("error_rate > 1%")
    assert judge(err, _agg([1] * 98, errors=2)).fired and not judge(err, _agg([1] * 99, errors=1)).fired
    cpu = _cond("cpu(server) > 80% for 3s")
    assert judge(cpu, _agg([1], cpu=90.0)).fired


def test_windowed_condition_needs_a_full_window() -> None:
    c = _cond("cpu(server) > 80% for 3s")
    w = WindowedConditions((c,), ("t",))
    ticks = [TickStats(i, 1.0, "hold", 1, 1, {"t": TxStats()}, {"server": v, "host": None, "client": None})
             for i, v in enumerate([95, 95, 60, 95, 95, 95])]
    fired = [any(v.fired for v in w.add(t)) for t in ticks]
    # window of 3 ticks: (95,95,60)=83.3 fires at the 3rd tick already: the mean of the window is judged
    assert fired == [False, False, True, True, True, True]
    w.reset()
    assert w.add(ticks[0]) == []


def test_recorder_swap_and_wire_roundtrip_merge_exactly() -> None:
    rec = Recorder(("a", "b"))
    rng = random.Random(1)
    for _ in range(5000):
        rec.ok(0, rng.randint(100, 50_000), 3)
    rec.error(1, 1213)
    rec.retry(0)
    first = rec.swap()
    assert first["a"].count == 5000 and first["a"].queries == 15000 and first["a"].retries == 1
    assert first["b"].errors == Counter({1213: 1})
    assert rec.swap()["a"].count == 0
    # two "processes" merged over the wire give the same percentiles as one
    half1, half2, whole = TxStats(), TxStats(), TxStats()
    for i in range(10_000):
        v = 100 + (i * 7919) % 90_000
        (half1 if i % 2 else half2).hist.record_value(v)
        whole.hist.record_value(v)
    half1.count = half2.count = 5000
    whole.count = 10_000
    merged = TxStats.from_wire(half1.to_wire())
    merged.merge(TxStats.from_wire(half2.to_wire()))
    assert merged.latency_ms() == whole.latency_ms()


def test_generators_stay_in_range_and_are_skewed() -> None:
    rng = random.Random(7)
    z = zipf(1, 1000, 1.1)
    zs = [z(rng) for _ in range(20_000)]
    assert min(zs) >= 1 and max(zs) <= 1000
    assert zs.count(1) > zs.count(10) > zs.count(500)
    nu = nurand(1023, 1, 3000, 123)
    assert all(1 <= nu(rng) <= 3000 for _ in range(5000))
    sp = special(1, 10_000)
    vals = [sp(rng) for _ in range(20_000)]
    middle = sum(1 for v in vals if 4950 <= v <= 5051)
    assert 0.70 < middle / len(vals) < 0.85  # sysbench: 75% of values in 1% of the range
    seq = compile_value(m.Generator("sequence", (10,)), seed=1, offset=5)
    assert [seq(rng) for _ in range(3)] == [15, 16, 17]
    rs = compile_value(m.Generator("randstr", (3, 5)), seed=1)
    assert all(3 <= len(str(rs(rng))) <= 5 for _ in range(100))


def test_special_draws_what_sysbench_s_loop_draws() -> None:
    """The unrolled default (12 draws) gives the values of sysbench's rand_special loop, draw for draw."""
    def loop(rng: random.Random, a: int = 1, b: int = 50_000, iters: int = 12) -> int:
        t = b - a
        rnd = rng.random()
        if rnd * t * (100.0 / 25.0) < t:
            s = 0.0
            for _ in range(iters):
                s += rng.random()
            return a + int(s * t * (1.0 / iters))
        return a + int(rnd * (t * 0.01 + 1) + t / 2 - t * 0.005)

    sp, r1, r2 = special(1, 50_000), random.Random(3), random.Random(3)
    assert [sp(r1) for _ in range(50_000)] == [loop(r2) for _ in range(50_000)]
    sp5, r1, r2 = special(1, 50_000, iters=5), random.Random(4), random.Random(4)
    assert [sp5(r1) for _ in range(20_000)] == [loop(r2, iters=5) for _ in range(20_000)]


def test_engine_and_model_import_without_textual() -> None:
    code = ("import sys\nimport bench_dsl.cli.main, bench_dsl.engine.runner, bench_dsl.language.model, bench_dsl.language.validate, bench_dsl.results.sinks\n"
            "bad = [m for m in sys.modules if m == 'textual' or m.startswith('textual.')]\n"
            "assert not bad, bad\nprint('clean')")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "clean" in r.stdout


def test_a_scenario_is_read_with_every_kind_known_and_no_driver_loaded() -> None:
    """`bench check` reads a file with every workload and fleet kind (bench_dsl.engine.scenario_file): the
    fleets' declarations come without their drivers (asyncmy, the C executor, Ray)."""
    code = ("import sys\nfrom bench_dsl.engine.scenario_file import load\n"
            "sc = load('examples/cluster.bench', env={'BENCH_DSN': 'mysql://u@db.example/d'})\n"
            "bad = [m for m in ('asyncmy', 'bench_dsl.native._native', 'ray', 'bench_dsl.fleet.local', "
            "'bench_dsl.fleet.ray') if m in sys.modules]\n"
            "assert sc.cluster == 'ray' and not bad, bad\nprint('clean')")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0 and "clean" in r.stdout, r.stderr


def test_recorder_counts_exactly_what_a_histogram_would() -> None:
    """Recording by dict and folding into HDR at the swap gives the figures of recording each value."""
    rng = random.Random(7)
    values = [int(rng.lognormvariate(7, 1.2)) + 1 for _ in range(20_000)] + [HIGHEST_US * 2]
    rec = Recorder(("a", "b"))
    direct = new_histogram()
    for v in values:
        rec.ok(0, v, 3)
        direct.record_value(min(v, HIGHEST_US))
    rec.error(1, 1213)
    rec.retry(1)
    stats = rec.swap()
    a = stats["a"]
    assert a.count == len(values) and a.queries == 3 * len(values)
    assert a.total_us == sum(values)
    for p in (50, 90, 99, 99.9, 100):
        assert a.hist.get_value_at_percentile(p) == direct.get_value_at_percentile(p)
    assert a.hist.get_total_count() == direct.get_total_count()
    assert stats["b"].count == 0 and stats["b"].errors == {1213: 1} and stats["b"].retries == 1
    assert rec.swap()["a"].count == 0  # a swap starts afresh


def test_result_checkpoints_encode_each_interval_once_and_read_back_whole(tmp_path) -> None:
    import json
    import time

    from bench_dsl.engine import events as ev
    from bench_dsl.results.sinks import JsonResultSink

    path = tmp_path / "r.json"
    sink = JsonResultSink(path)
    sink.emit(ev.Begin("1", "now", ev.ScenarioInfo('a "quoted" name'), ev.Machine.from_json({})))
    for i in range(30):
        sink.emit(ev.Interval(IntervalRow(i, i, "hold", 1, True, {"tps": i * 1.5,
                                                                  "note": "\x00intervals\x00" if i == 3 else None})))
        sink.emit(ev.Totals(None, None, None, float(i)))
        if i % 10 == 9:  # let the writer catch up: what it wrote must read back as the document
            deadline = time.monotonic() + 60  # a hung writer's; a busy machine's ends when it has written
            while time.monotonic() < deadline and not (
                    path.exists() and len(json.loads(path.read_text())["intervals"]) == i + 1):
                time.sleep(0.01)
            assert json.loads(path.read_text()) == sink.document.doc
    sink.close()
    doc = sink.document.doc
    assert json.loads(path.read_text()) == doc and len(doc["intervals"]) == 30
    assert len(sink._encoded) == 30  # each interval encoded once, whatever the number of checkpoints
    sink = JsonResultSink(path)  # the final document: indented, whole
    sink.emit(ev.Begin("1", "now", ev.ScenarioInfo("n"), ev.Machine.from_json({})))
    sink.emit(ev.Finished("completed", 0, None, None, [], None, 1.0, "later"))
    sink.close()
    assert json.loads(path.read_text()) == sink.document.doc and "\n " in path.read_text()
    assert sink.document.doc["status"] == "completed"


_FULL_DISK = r"""
import json, resource, signal, sys
from bench_dsl.engine import events as ev
from bench_dsl.engine.rows import IntervalRow
from bench_dsl.results.sinks import JsonLinesSink

signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # past the limit, write() fails with EFBIG
resource.setrlimit(resource.RLIMIT_FSIZE, (5000, resource.RLIM_INFINITY))
sink = JsonLinesSink(open(sys.argv[1], "w", encoding="utf-8"))
failed = 0
for i in range(4):
    try:
        sink.emit(ev.Interval(IntervalRow(i, i, "hold", 1, True, {"note": "x" * 1900})))
    except OSError:
        failed += 1
sink.close()
print(failed)
"""


def test_event_stream_lines_that_do_not_fit_are_cut_back_whole(tmp_path) -> None:
    """A full disk (here: a file size limit of 5,000 bytes, ~2.5 lines) leaves whole lines only."""
    import json

    path = tmp_path / "s.jsonl"
    out = subprocess.run([sys.executable, "-c", _FULL_DISK, str(path)], capture_output=True, text=True,
                         check=True, cwd=ROOT)
    assert out.stdout.strip() == "2"  # the third line crossed the limit, the fourth did not fit
    text = path.read_text()
    assert text.endswith("\n") and [json.loads(line)["t"] for line in text.splitlines()] == [0, 1]


_CHECKPOINTS = r"""
import json, resource, signal, sys, time
from pathlib import Path
from bench_dsl.engine import events as ev
from bench_dsl.engine.rows import IntervalRow
from bench_dsl.results.sinks import JsonResultSink

signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (3000, resource.RLIM_INFINITY))  # a disk that fills up
path = Path(sys.argv[1])
heard = []
sink = JsonResultSink(path)
sink.emit(ev.Begin("1", "now", ev.ScenarioInfo(), ev.Machine.from_json({})))
count = 0

def written(n):
    try:
        return len(json.loads(path.read_text())["intervals"]) == n  # replaced whole: never half a file
    except FileNotFoundError:
        return False

def checkpoint(n):
    global count
    while count < n:
        sink.emit(ev.Interval(IntervalRow(count, count, "hold", 1, True, {"pad": "x" * 20})))
        count += 1
    before = sink._error
    heard.extend(e.message for e in sink.emit(ev.Totals(None, None, None, float(n))) or [])  # warnings come back
    # the writer thread's turn: until this checkpoint is written, or its write failed (a new error)
    deadline = time.monotonic() + 30
    while not ((sink._error is None and written(n)) or (sink._error is not None and sink._error is not before)):
        assert time.monotonic() < deadline, f"checkpoint {n} neither written nor failed"
        time.sleep(0.005)

checkpoint(10)   # ~300 bytes: written
checkpoint(200)  # ~6 KB: does not fit
checkpoint(201)  # told now (the emit after the failure); fails again, not told twice
checkpoint(202)
resource.setrlimit(resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))  # room again
checkpoint(203)  # written
checkpoint(204)  # told it was written again
sink.close()
print(json.dumps(heard))
print(len(json.loads(path.read_text())["intervals"]))
"""


def test_a_checkpoint_that_cannot_be_written_is_said_at_once_and_so_is_its_recovery(tmp_path) -> None:
    import json

    path = tmp_path / "r.json"
    out = subprocess.run([sys.executable, "-c", _CHECKPOINTS, str(path)], capture_output=True, text=True,
                         check=True, cwd=ROOT)
    heard, written = out.stdout.splitlines()
    heard = json.loads(heard)
    assert len(heard) == 2, heard
    assert heard[0].startswith(f"could not write {path}: ") and "File too large" in heard[0]
    assert heard[1] == f"{path} written again"
    assert written == "204"


def test_the_workload_digest_tells_workloads_apart_by_what_they_run() -> None:
    from bench_dsl.engine.outcome import workload_digest
    from bench_dsl.engine.scenario_file import load

    def custom(sql: str, where: str = "") -> str:
        return f'{where}scenario "c" {{ workload custom {{ transaction t {{ query "{sql}" }} }} users 1 duration 1s }}'

    same_a = workload_digest(load("a.bench", text=custom("SELECT 1"), env={}))
    same_b = workload_digest(load("b.bench", text=custom("SELECT 1", where="# moved down a line\n"), env={}))
    other = workload_digest(load("a.bench", text=custom("SELECT 2"), env={}))
    assert same_a == same_b  # where it is written does not matter
    assert other != same_a  # the same transaction names running other SQL do not compare
