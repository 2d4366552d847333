"""Result files in and out: the one reader (bench_dsl/results/read.py) against hostile files, run
through the real commands (compare, report, replay) with a timeout so that a hang fails; the one
fold, which summary.json, `bench compare` and the report must agree on; the event stream, which
holds every event and is replayed as it was. The results are a real run's (tests/fixtures/result.py)
written as a run writes them, varied."""

from __future__ import annotations

import copy
import dataclasses
import json
import os
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest

from bench_dsl.core.cluster_info import ClusterInfo, ClusterNode
from bench_dsl.core.prepare_report import PrepareReport
from bench_dsl.engine import events as ev
from bench_dsl.results.files import write_atomically
from bench_dsl.results.read import BadResult, find_results, read_result
from bench_dsl.results.replay import load
from bench_dsl.results.report import data, group
from bench_dsl.results.sinks import JsonLinesSink
from bench_dsl.results.stream import encode, read_stream
from bench_dsl.results.summary import summarize

from ..conftest import run_bench
from ..fixtures.result import recorded_result

COMMANDS = ("compare", "report", "replay")
HANG_S = 60  # far beyond what reading a refused file takes; a FIFO read without O_NONBLOCK waits for ever


def _write(path: Path, doc: dict[str, Any]) -> Path:
    write_atomically(path, json.dumps(doc, indent=1) + "\n")  # as JsonResultSink writes a finished run
    return path


def _bench(command: str, bad: Path, good: Path, tmp: Path) -> subprocess.CompletedProcess[str]:
    args = {"compare": ("compare", str(good), str(bad)), "report": ("report", str(good), str(bad), "-o",
                                                                   str(tmp / "report.html")),
            "replay": ("replay", str(bad))}[command]
    return run_bench(*args, timeout=HANG_S)


@pytest.fixture
def good(tmp_path: Path) -> Path:
    return _write(tmp_path / "good.json", recorded_result())


# -- files that are not files ------------------------------------------------------------------------
@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom", "fifo"])
def test_a_device_or_a_fifo_is_refused_at_once(command: str, device: str, tmp_path: Path, good: Path) -> None:
    bad = tmp_path / "bad.json"
    if device == "fifo":
        os.mkfifo(bad)
    else:
        bad.symlink_to(device)
    r = _bench(command, bad, good, tmp_path)  # a hang or memory filled up is a timeout: the test fails
    assert r.returncode == 2, r.stderr
    kind = "a FIFO" if device == "fifo" else "a device"
    # without white space: the console folds a long path anywhere
    assert "".join(f"{bad}: is {kind}, not a regular file".split()) in "".join(r.stderr.split()), r.stderr
    assert "Traceback" not in r.stderr


def test_a_device_inside_a_directory_is_skipped_and_named(tmp_path: Path) -> None:
    d = tmp_path / "d"
    d.mkdir()
    _write(d / "a.json", recorded_result())
    (d / "zero.json").symlink_to("/dev/zero")
    found = find_results([d])
    assert [r.path for r in found.results] == [d / "a.json"]
    assert found.warnings() == [f"warning: {d / 'zero.json'}: skipped: is a device, not a regular file: results "
                                "are read from regular files only"]


# -- documents that are not results ----------------------------------------------------------------
def _steps(doc: dict[str, Any], key: str, value: Any) -> dict[str, Any]:
    doc["steps"][0][key] = value
    return doc


CASES: dict[str, tuple[Any, str]] = {
    "steps-negative": (lambda d: d.update(steps=-1), "steps: should be array, not an integer (-1)"),
    "scenario-negative": (lambda d: d.update(scenario=-1), "scenario: should be object, not an integer (-1)"),
    "tps-a-string": (lambda d: _steps(d, "tps", "fast"), "steps[0].tps: should be number, not a string ('fast')"),
    "users-a-number": (lambda d: _steps(d, "users", 1.5), "steps[0].users: should be integer, not a number (1.5)"),
    "tps-nan": (lambda d: _steps(d, "tps", float("nan")), "steps[0].tps: nan is not a figure"),
    # Python reads it as an int, whole: the first float() that met it raised OverflowError (exit 1)
    "tps-400-digits": (lambda d: _steps(d, "tps", 10**400), "steps[0].tps: a number of 401 digits is not a figure"),
    "elapsed-400-digits": (lambda d: d.update(elapsed_s=-(10**400)), "elapsed_s: a number of 401 digits is not a"),
    "tps-negative": (lambda d: _steps(d, "tps", -3.0), "steps[0].tps: -3.0 is below 0: this figure cannot be negative"),
    "p95-negative": (lambda d: d["intervals"][2]["latency_ms"].update(p95=-1),
                     "intervals[2].latency_ms.p95: -1 is below 0"),
    "saturation-a-string": (lambda d: d["saturation"].update(users="16"), "saturation.users: should be integer or null"),
    "status-unknown": (lambda d: d.update(status="great"), "status: 'great' is not a status of a run"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_damaged_result_is_exit_2_naming_the_file_and_the_field(case: str, tmp_path: Path, good: Path) -> None:
    change, says = CASES[case]
    doc = recorded_result()
    change(doc)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))  # json writes NaN as NaN: Python reads it back as a float
    with pytest.raises(BadResult) as caught:
        read_result(bad)
    assert str(caught.value).startswith(f"{bad}: ") and says in str(caught.value)
    for command in COMMANDS if case in ("tps-nan", "steps-negative", "tps-400-digits", "elapsed-400-digits") \
            else ("compare",):
        r = _bench(command, bad, good, tmp_path)
        assert r.returncode == 2 and says in " ".join(r.stderr.split()), (command, r.stderr)
        assert "Traceback" not in r.stderr and "internal error" not in r.stderr


LONG = '{"format": "bench-dsl-result", "format_version": 1, "elapsed_s": '


@pytest.mark.parametrize(("text", "says"), [
    pytest.param('{"format": "bench-dsl-result", "format_version": 1, "elapsed_s": 1e400}',
                 "elapsed_s: inf is not a figure", id="beyond-a-float"),
    # past the 4,300 digits Python reads an integer of: json.loads raised a ValueError of its own
    pytest.param(LONG + "9" * 5000 + "}", f"line 1, column {len(LONG) + 1}: a number of 5,000 digits is not a figure",
                 id="beyond-int-digits"),
    pytest.param('{"format": "bench-dsl-result", "format_version": 1, "x": ' + "[" * 100_000 + "]" * 100_000 + "}",
                 "nested deeper than 64 levels", id="nested-100000-deep"),
    pytest.param('{"format": "bench-dsl-result", "format_version": 1, "x": ' + "[" * 100 + "]" * 100 + "}",
                 "x" + "[0]" * 64 + ": nested deeper than 64 levels", id="nested-100-deep"),
    pytest.param('{"format": "bench-dsl-result", "format_version": 2}', "format_version: result format version 2",
                 id="another-version"),
])
@pytest.mark.parametrize("command", COMMANDS)
def test_json_no_result_can_be_is_exit_2(text: str, says: str, command: str, tmp_path: Path, good: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(text)
    r = _bench(command, bad, good, tmp_path)
    assert r.returncode == 2 and f"{bad}:" in r.stderr and says in "".join(r.stderr.split("\n")), r.stderr
    assert "Traceback" not in r.stderr


# -- the gate ------------------------------------------------------------------------------------------
def test_a_gate_that_meets_a_figure_it_cannot_judge_is_exit_2(tmp_path: Path, good: Path) -> None:
    nan = recorded_result()
    for s in nan["steps"]:
        s["tps"] = float("nan")
    (tmp_path / "nan.json").write_text(json.dumps(nan))
    r = run_bench("compare", str(good), str(tmp_path / "nan.json"), "--fail-if", "tps < -5%", timeout=HANG_S)
    assert r.returncode == 2 and "nan.json: steps[0].tps: nan is not a figure" in "".join(r.stderr.split("\n"))
    assert "passed" not in r.stderr
    # a baseline of 0 tps at one users count: no percentage of it, so the gate has not passed
    zero = recorded_result()
    zero["steps"][0]["tps"] = 0.0
    base = _write(tmp_path / "zero.json", zero)
    other = _write(tmp_path / "other.json", recorded_result())
    r = run_bench("compare", str(base), str(other), "--fail-if", "tps < -5%", timeout=HANG_S)
    flat = " ".join(r.stderr.split())
    assert r.returncode == 2 and "--fail-if tps < -5%: not judged:" in flat, r.stderr
    assert f"at {zero['steps'][0]['users']} users: the baseline's tps is 0" in flat and "passed" not in flat


# -- directories -----------------------------------------------------------------------------------------
def test_a_hard_link_counts_once_and_a_cut_result_is_named(tmp_path: Path) -> None:
    d = tmp_path / "d"
    d.mkdir()
    a = _write(d / "a.json", recorded_result())
    os.link(a, d / "b.json")
    (d / "c.json").symlink_to(a)
    other = recorded_result()
    other["scenario"]["name"] = "other"
    text = json.dumps(other, indent=1)
    (d / "cut.json").write_text(text[: len(text) // 2])  # a copy that stopped half way
    found = find_results([d, a])
    assert [r.path for r in found.results] == [a]
    assert found.warnings() == [f"warning: {d / 'cut.json'}: skipped: cut short (it ends in the middle of the JSON)"]
    r = run_bench("report", str(d), "-o", str(tmp_path / "r.html"), timeout=HANG_S)
    assert r.returncode == 0 and "report: 1 configuration from 1 result" in r.stderr
    assert f"warning: {d / 'cut.json'}: skipped: cut short" in "".join(r.stderr.split("\n")), r.stderr


# -- one fold: summary.json, bench compare and the report agree ----------------------------------------
def test_summary_compare_and_report_agree_on_a_study(tmp_path: Path) -> None:
    """A study of c2 and c10 (two repeats each; a directory sorted as text puts c10 first) whose
    repeats saturate at 4 and 16 users (c2) and 8 and 8 (c10): the median of 4 and 16 is 10, a users
    count between two steps, which the report once drew as 4 and summary.json as 10."""
    base = recorded_result()
    users = {s["step"]: s["users"] for s in base["steps"]}
    study = tmp_path / "study"
    for cid, saturations in (("c2", (4, 16)), ("c10", (8, 8))):
        for k, sat_users in enumerate(saturations, 1):
            doc = copy.deepcopy(base)
            doc["configuration"] = {"id": cid, "label": f"io={cid}", "values": {"io": cid}, "repeat": k,
                                    "repeats": 2, "study": "agree", "study_id": "abc"}
            step = next(n for n, u in users.items() if u == sat_users)
            doc["saturation"].update(users=sat_users, step=step)
            for s in doc["steps"]:
                s["tps"] = round(s["tps"] * (1 + k / 10), 3)
            _write(study / f"{cid}-io" / f"repeat-{k}.json", doc)
    found = find_results([study])
    assert not found.skipped
    summary = summarize(found.results, base=study)
    _write(study / "summary.json", summary)  # as the study writes it (and a directory read again skips it)
    r = run_bench("compare", str(study), "--json", str(tmp_path / "cmp.json"), timeout=HANG_S)
    assert r.returncode == 0, r.stderr
    table = json.loads((tmp_path / "cmp.json").read_text())
    sat_row = next(row for row in table["rows"] if row["metric"] == "saturation")
    configs = group(find_results([study]).results)
    on_curve = data.saturation_rows(configs, data.tps)
    table_rows = data.summary_rows(configs)
    expected = [("io=c2", 10), ("io=c10", 8)]
    assert [(c["label"], c["saturation"]["users"]["median"]) for c in summary["configurations"]] == expected
    assert [(c["label"], cell["value"]) for c, cell in zip(table["configurations"], sat_row["cells"])] == expected
    assert [(c.label, c.saturation["median"] if c.saturation else None) for c in configs] == expected
    assert [(row["configuration"], row["users"]) for row in on_curve] == expected
    assert [row["saturation"] for row in table_rows] == ["10 users (4-16 over 2 repeats)", "8 users (8-8 over 2 repeats)"]
    # the report drawn by the command says the same, in the same order
    r = run_bench("report", str(study), "-o", str(tmp_path / "r.html"), timeout=HANG_S)
    assert r.returncode == 0, r.stderr
    page = (tmp_path / "r.html").read_text()
    assert page.index("10 users (4-16 over 2 repeats)") < page.index("8 users (8-8 over 2 repeats)")
    # the figures by users agree too: the report's curve is summary.json's medians
    curve = {(row["configuration"], row["users"]): row["value"] for row in data.by_users(configs, data.tps)}
    for c in summary["configurations"]:
        for e in c["by_users"]:
            assert curve[(c["label"], e["users"])] == e["tps"]["median"]


# -- the event stream --------------------------------------------------------------------------------------
def _every_event() -> list[ev.Event]:
    """A run's events as its result keeps them, and those a result cannot (a front end's control,
    the load's progress): every type there is."""
    evs = [e for _, e in load_doc()]
    evs[3:3] = [ev.Prepare(500, 1000, 250.0, 2.0, 1.5), ev.Prepared(PrepareReport(False, 1000, 4.0)),
                ev.Workers(2),
                ev.Cluster(ClusterInfo("ray", (ClusterNode("ab" * 28, "client1", "10.0.0.5", 2, 2,
                                                           ("worker 1", "worker 2"), 0),), 2.1))]
    evs.insert(-2, ev.Control("hold", True, 12.5))
    evs.insert(-2, ev.WorkerLostEvent(13.0, ["worker 2 on node abababab (client1) lost"], 1, 4))
    evs.insert(-2, ev.Power("rapl /sys/class/powercap", None))
    return evs


def load_doc() -> list[tuple[float, ev.Event]]:
    return _load_written(recorded_result())


def _load_written(doc: dict[str, Any]) -> list[tuple[float, ev.Event]]:
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        return load(_write(Path(d) / "r.json", doc))


def _stream(path: Path, evs: list[ev.Event]) -> Path:
    with path.open("w", encoding="utf-8") as f:
        sink = JsonLinesSink(f, "test")
        for e in evs:
            sink.emit(e)
    return path


def test_every_event_type_is_written_with_its_version_and_read_back_verbatim(tmp_path: Path) -> None:
    evs = _every_event()
    assert {e.type for e in evs} == set(ev.EVENT_TYPES)  # all 20
    path = _stream(tmp_path / "r.jsonl", evs)
    lines = [json.loads(ln) for ln in path.read_text().splitlines()]
    assert len(lines) == len(evs) and all(ln["format_version"] == 1 for ln in lines)
    stream = read_stream(path)
    assert stream.versioned and not stream.warnings

    def lean(e: ev.Event) -> ev.Event:  # a stream keeps no histograms (the result does)
        if isinstance(e, ev.Totals) and e.summary:
            return ev.Totals({k: v for k, v in e.summary.items() if k != "histograms"}, e.executor, e.stop, e.elapsed_s)
        if isinstance(e, ev.StepEnded):
            return ev.StepEnded(dataclasses.replace(e.row, histograms={}))
        return e

    assert [json.loads(json.dumps(encode(e))) for e in stream.events] == \
        [json.loads(json.dumps(encode(lean(e)))) for e in evs]
    assert [e for _, e in load(path)] == stream.events  # played as recorded: nothing derived, nothing added


def test_a_stream_cut_in_its_last_line_is_replayed_up_to_it(tmp_path: Path) -> None:
    path = _stream(tmp_path / "r.jsonl", _every_event())
    data = path.read_bytes()
    whole = data.splitlines(keepends=True)
    cut = tmp_path / "cut.jsonl"
    cut.write_bytes(b"".join(whole[:-1]) + whole[-1][: len(whole[-1]) // 2])
    r = run_bench("replay", str(cut), timeout=HANG_S)
    assert r.returncode == 0, r.stderr
    n = len(whole)
    assert f"warning: {cut}: line {n} is cut short" in "".join(r.stderr.split("\n")) and \
        f"replayed up to line {n - 1}" in " ".join(r.stderr.split()), r.stderr
    full = run_bench("replay", str(path), timeout=HANG_S)
    assert full.returncode == 0 and full.stdout.startswith(r.stdout) and r.stdout.count("\n") > 10
    # a bad line that is not the last is no cut: the stream is refused, naming the line
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b"".join(whole[:3]) + b'{"type": "interval", "format_version": 1, "t": "x"}\n'
                    + b"".join(whole[3:]))
    r = run_bench("replay", str(bad), timeout=HANG_S)
    assert r.returncode == 2 and f"{bad}: line 4: not an event" in "".join(r.stderr.split("\n")), r.stderr


def test_a_number_beyond_a_float_in_any_event_of_a_stream_is_exit_2_naming_the_line(tmp_path: Path) -> None:
    path = _stream(tmp_path / "r.jsonl", _every_event())
    lines = path.read_text().splitlines()
    n = next(i for i, ln in enumerate(lines) if json.loads(ln)["type"] == "totals")
    totals = json.loads(lines[n])
    totals["elapsed_s"] = 10**400
    lines[n] = json.dumps(totals)
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join(lines) + "\n")
    r = run_bench("replay", str(bad), timeout=HANG_S)
    flat = " ".join(r.stderr.split())
    assert r.returncode == 2 and f"line {n + 1}: not an event (elapsed_s: a number of 401 digits is not a figure" \
        in flat, r.stderr


def test_outputs_get_one_permission_policy(tmp_path: Path) -> None:
    old = os.umask(0o027)
    try:
        p = write_atomically(tmp_path / "x" / "out.json", "{}\n")
    finally:
        os.umask(old)
    assert stat.S_IMODE(p.stat().st_mode) == 0o640 and p.read_text() == "{}\n"
    assert [f.name for f in p.parent.iterdir()] == ["out.json"]  # no temporary file left
    link = tmp_path / "link.json"
    link.symlink_to(p)
    with pytest.raises(OSError, match="symbolic link"):
        write_atomically(link, "{}")
