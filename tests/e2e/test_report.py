"""`bench report`: charts of real results, an HTML page that draws offline in a real browser, images
of the sizes asked for. The fast tests read a recorded run (tests/fixtures/steps.jsonl, replayed into
its result document); the slow one makes two real runs and opens the page in headless Chromium."""

from __future__ import annotations

import copy
import json
import re
import shutil
import struct
import subprocess
import sys
import xml.etree.ElementTree as ET
import zlib
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from bench_dsl.results.read import ResultFile, find_results
from bench_dsl.results.report import data, group, write_html, write_images
from bench_dsl.results.report.charts import HEIGHT, WIDTH, figures

from ..conftest import ROOT, run_bench, small_disk
from ..fixtures.result import recorded_result

STEPS = ROOT / "tests" / "fixtures" / "steps.jsonl"  # four locks: six steps, p90(locked) fires at step 6
# a tag that fetches from another host (the bundle's own strings hold `<img src="${url}">` templates)
NETWORK = re.compile(r"<(script|link|img|iframe|object|embed)\b[^>]*\b(src|href)\s*=\s*[\"']?(https?:)?//", re.I)
CHARTS = ["throughput-vs-users", "latency-vs-users", "timeline", "latency-spectrum", "cpu-vs-users"]
# a run's response-time consistency (bench_dsl.measure.consistency): the recording predates it
CONSISTENCY = ["latency-stddev-ms-vs-users", "p99-p50-ratio-vs-users", "tps-cv-pct-vs-users"]


def load_results(paths: list[Path]) -> list[ResultFile]:
    return find_results(paths).results


_recorded = recorded_result


def _as_repeat(doc: dict[str, Any], cid: str, label: str, repeat: int, tps_factor: float) -> dict[str, Any]:
    d = copy.deepcopy(doc)
    d["configuration"] = {"id": cid, "label": label, "values": {}, "repeat": repeat, "repeats": 3, "study": "s"}
    for s in d["steps"]:
        s["tps"] *= tps_factor
    return d


def png_size(path: Path) -> tuple[int, int]:
    raw = path.read_bytes()
    assert raw[:8] == b"\x89PNG\r\n\x1a\n" and raw[12:16] == b"IHDR", f"{path} is not a PNG"
    return struct.unpack(">II", raw[16:24])


def png_pixels(path: Path) -> tuple[int, int, list[bytes]]:
    """Width, height and RGB(A) pixels of an 8-bit RGB or RGBA PNG, decoded with zlib alone (no
    imaging library is a dependency): the five row filters of the PNG specification undone."""
    raw = path.read_bytes()
    width, height = png_size(path)
    depth, colour = raw[24], raw[25]
    assert depth == 8 and colour in (2, 6), f"{path}: bit depth {depth}, colour type {colour}"
    bpp = 3 if colour == 2 else 4
    pos, idat = 8, b""
    while pos < len(raw):
        n, kind = struct.unpack(">I4s", raw[pos:pos + 8])
        if kind == b"IDAT":
            idat += raw[pos + 8:pos + 8 + n]
        pos += 12 + n
    stream, stride = zlib.decompress(idat), width * bpp
    prev, pixels = bytearray(stride), []
    for y in range(height):
        f, line = stream[y * (stride + 1)], bytearray(stream[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a, b = line[i - bpp] if i >= bpp else 0, prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        pixels.extend(bytes(line[i:i + 3]) for i in range(0, stride, bpp))
        prev = line
    return width, height, pixels


# -- the numbers ------------------------------------------------------------------------------------

def test_repeats_fold_into_median_and_range() -> None:
    doc = _recorded()
    docs = [_as_repeat(doc, "c1", "io=100", r, f) for r, f in ((1, 1.0), (2, 1.5), (3, 0.5))]
    docs.append(_as_repeat(doc, "c2", "io=200", 1, 2.0))
    configs = group([ResultFile(d) for d in docs])
    assert [c.label for c in configs] == ["io=100", "io=200"] and len(configs[0].results) == 3
    rows = {(r["configuration"], r["users"]): r for r in data.by_users(configs, data.tps)}
    first = doc["steps"][0]
    r = rows[("io=100", first["users"])]
    assert r["value"] == pytest.approx(first["tps"]) and r["runs"] == 3
    assert (r["min"], r["max"]) == pytest.approx((first["tps"] * 0.5, first["tps"] * 1.5))
    assert rows[("io=200", first["users"])]["runs"] == 1
    sat = data.saturation_rows(configs, data.tps)
    assert [(s["configuration"], s["users"]) for s in sat] == [("io=100", 16), ("io=200", 16)]


def test_plain_files_of_one_scenario_are_told_apart_by_file_name(tmp_path: Path) -> None:
    doc = _recorded()
    for name in ("a.json", "b.json"):
        (tmp_path / name).write_text(json.dumps(doc))
    other = copy.deepcopy(doc)
    other["scenario"]["name"] = "other"
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "c.json").write_text(json.dumps(other))
    (tmp_path / "summary.json").write_text(json.dumps({"format": "bench-dsl-matrix"}))  # passed over
    labels = [c.label for c in group(load_results([tmp_path, tmp_path / "a.json"]))]
    # once two clash, every plain run by its file name (fold._labels: the rule summary.json's is too)
    assert labels == ["a.json", "b.json", "c.json"]


def test_a_matrix_directory_is_read_whole(tmp_path: Path) -> None:
    doc = _recorded()
    for cid, label, repeats in (("c1", "io=100", (2, 1)), ("c2", "io=200", (1,))):
        for k in repeats:
            (tmp_path / f"{cid}-x").mkdir(exist_ok=True)
            (tmp_path / f"{cid}-x" / f"repeat-{k}.json").write_text(json.dumps(_as_repeat(doc, cid, label, k, 1.0)))
    (tmp_path / "summary.json").write_text("{}")
    (tmp_path / "report.html").write_text("<html></html>")
    configs = group(load_results([tmp_path]))
    assert [(c.label, [r.path.name for r in c.results if r.path]) for c in configs] == [
        ("io=100", ["repeat-1.json", "repeat-2.json"]), ("io=200", ["repeat-1.json"])]
    # plain results of one scenario, both called repeat-1.json: their directories tell them apart
    for d in ("x", "y"):
        (tmp_path / d).mkdir()
        (tmp_path / d / "repeat-1.json").write_text(json.dumps(doc))
    labels = [c.label for c in group(load_results([tmp_path / "x", tmp_path / "y"]))]
    assert labels == ["x/repeat-1.json", "y/repeat-1.json"]


def test_two_studies_c1_are_two_configurations() -> None:
    """Two studies' runs in one directory, both called c1 (the same scenario name, other values):
    drawn as two configurations, not as repeats of one."""
    doc = _recorded()
    a, b = _as_repeat(doc, "c1", "u=1", 1, 1.0), _as_repeat(doc, "c1", "u=2", 1, 2.0)
    a["configuration"]["values"], b["configuration"]["values"] = {"u": "1"}, {"u": "2"}
    configs = group([ResultFile(a), ResultFile(b)])
    assert [(c.label, len(c.results)) for c in configs] == [("u=1", 1), ("u=2", 1)]


def test_a_report_on_a_full_disk_is_exit_1_with_its_cause(tmp_path: Path) -> None:
    result = tmp_path / "r.json"
    result.write_text(json.dumps(_recorded()))
    with small_disk(tmp_path / "disk", "64k") as disk:
        r = run_bench("report", str(result), "-o", str(disk / "report.html"))
        assert r.returncode == 1, r.stderr
        # without white space: the console folds a long path anywhere
        assert "".join(f"cannot write the report to {disk / 'report.html'}: No space left on device".split()) \
            in "".join(r.stderr.split()), r.stderr
        assert "()" not in r.stderr and "Traceback" not in r.stderr
        assert list(disk.iterdir()) == []  # no half report, no temporary file left behind


def test_spectrum_reads_percentiles_from_the_histograms() -> None:
    configs = group([ResultFile(_recorded())])
    rows = [r for r in data.spectrum(configs) if r["users"] == 8]  # 10..90 ms, evenly
    at = {round(r["percentile"], 2): r["latency_ms"] for r in rows}
    assert at[0.0] == pytest.approx(10, rel=0.01) and at[90.0] == pytest.approx(82, rel=0.02)
    assert max(r["latency_ms"] for r in rows) == pytest.approx(90, rel=0.01)
    assert [r["x"] for r in rows] == sorted(r["x"] for r in rows)


def test_timeline_marks_steps_and_the_stop_condition() -> None:
    doc = _recorded()
    points, bounds, stops = data.timeline(doc, "x")
    assert len(points) == len(doc["intervals"])
    assert [b["label"] for b in bounds] == [f"{s['users']} users" for s in doc["steps"]]
    assert stops == [{"configuration": "x", "t": 41.826, "label": "fired: p90(locked) > 200ms"}]


# -- files ------------------------------------------------------------------------------------------

def test_images_have_the_size_of_their_charts(tmp_path: Path) -> None:
    doc = _recorded()
    pngs = write_images([doc], tmp_path / "png")
    svgs = write_images([doc], tmp_path / "svg", fmt="svg")
    assert [p.stem for p in pngs] == CHARTS == [p.stem for p in svgs]
    for png, svg in zip(pngs, svgs):
        root = ET.parse(svg).getroot()
        w, h = float(root.get("width") or 0), float(root.get("height") or 0)
        assert w >= WIDTH and h >= HEIGHT, f"{svg.name}: {w}x{h}"
        assert png_size(png) == (round(2 * w), round(2 * h)), png.name  # drawn at scale 2
        texts = " ".join(t.text or "" for t in root.iter("{http://www.w3.org/2000/svg}text"))
        assert "users" in texts or "percentile" in texts, svg.name
    width, height, pixels = png_pixels(pngs[0])
    colours = Counter(pixels)
    drawn = width * height - colours.get(b"\xff\xff\xff", 0)
    assert len(colours) > 50 and drawn > 0.02 * width * height, f"{len(colours)} colours, {drawn} pixels drawn"


def test_html_is_self_contained_and_escapes_labels(tmp_path: Path) -> None:
    doc = _recorded()
    doc["scenario"]["name"] = "</script><b>x</b>"
    page = write_html([doc], tmp_path / "r.html").read_text()
    assert not NETWORK.search(page), "the page loads something over the network"
    assert "</script><b>" not in page and "&lt;/script&gt;&lt;b&gt;" in page
    assert page.count('class="chart"') == len(CHARTS)


def test_a_run_that_measured_nothing_draws_no_empty_charts(tmp_path: Path) -> None:
    lost = _recorded()
    lost.update(steps=[], intervals=[], saturation=None, status="target_failed", stop={"reason": "target_failed"})
    assert write_images([lost], tmp_path / "png") == []
    assert "there is nothing to draw" in write_html([lost], tmp_path / "r.html").read_text()
    assert [p.stem for p in write_images([lost, _recorded()], tmp_path / "both")] == CHARTS


# -- the command ------------------------------------------------------------------------------------

def test_check_does_not_import_the_plotting_libraries() -> None:
    code = "import sys, bench_dsl.cli.main as c; c.build_parser(); print(sorted(m for m in sys.modules " \
           "if m.split('.')[0] in ('altair', 'vl_convert')))"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert r.stdout.strip() == "[]"


@pytest.mark.parametrize("make, args, said", [
    (None, ["missing.json", "-o", "r.html"], "missing.json: no such file"),  # the one reader's words (results/read.py)
    ("{}", ["f.json", "-o", "r.html"], "not a bench-dsl result"),
    ("not json", ["f.json", "-o", "r.html"], "f.json: not JSON"),
    (None, ["empty", "-o", "r.html"], "no bench-dsl result files in this directory"),
    ('{"format": "bench-dsl-result", "format_version": 1, "steps": {}}', ["f.json", "-o", "r.html"],
     "f.json: tool: missing"),  # the first field the schema wants that it lacks (test_results_files: wrong types)
    ('{"format": "bench-dsl-result", "format_version": 2}', ["f.json", "-o", "r.html"], "format version 2"),
    ("result", ["f.json"], "nothing to write"),
    ("result", ["f.json", "-o", "empty"], "a directory"),
    ("result", ["f.json", "--png", "f.json"], "not a directory"),
])
def test_usage_errors_exit_2_without_traceback(make: str | None, args: list[str], said: str, tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    if make is not None:
        (tmp_path / "f.json").write_text(json.dumps(_recorded()) if make == "result" else make)
    r = run_bench("report", *args, cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    assert said in r.stderr.replace("\n", " ") and "Traceback" not in r.stderr


# -- real runs, a real browser ----------------------------------------------------------------------

SCENARIO = """
scenario "report test" {
  target env("BENCH_DSN", "mysql://root@127.0.0.1:3306/benchdsl")
  workload sysbench oltp_read_write { tables = 1  table_size = 1000 }
  warmup 1s
  ramp step { start 1 users  step x2  settle 1s  hold 2s  max 4 users }
  stop when { p90(oltp_read_write) > 5s  error_rate > 5% }
  report every 1s
}
"""


def _chromium(*args: str, timeout: float = 90) -> subprocess.CompletedProcess[str]:
    browser = shutil.which("chromium")
    assert browser, "chromium is not installed: scripts/setup.sh installs Debian's package"
    offline = ["--proxy-server=127.0.0.1:9", "--proxy-bypass-list=<-loopback>",  # no network at all
               "--host-resolver-rules=MAP * ~NOTFOUND"]
    return subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                           *offline, "--enable-logging=stderr", "--v=0", "--virtual-time-budget=20000", *args],
                          capture_output=True, text=True, timeout=timeout)


@pytest.mark.slow
def test_report_of_real_runs_draws_in_a_headless_browser(dsn_url: str, tmp_path: Path) -> None:
    # its steps hold 1 s at this time scale: one second has no spread of throughput (tps_cv_pct null)
    LIVE_CHARTS = CHARTS + CONSISTENCY[:2]  # noqa: N806
    bench = tmp_path / "r.bench"
    bench.write_text(SCENARIO)
    for name in ("a.json", "b.json"):  # one after the other: they share the server's tables
        r = run_bench("run", str(bench), "--headless", "--json", str(tmp_path / name), "--time-scale", "0.5")
        assert r.returncode == 0, r.stderr
    html, png, svg = tmp_path / "out" / "report.html", tmp_path / "png", tmp_path / "svg"
    r = run_bench("report", str(tmp_path / "a.json"), str(tmp_path / "b.json"), "-o", str(html),
                  "--png", str(png), "--svg", str(svg))
    assert r.returncode == 0, r.stderr
    assert "2 configurations from 2 results" in r.stderr
    page = html.read_text()
    assert not NETWORK.search(page)
    assert 500_000 < len(page.encode()) < 3_000_000  # the Vega libraries are inside, and not much more
    docs = [json.loads((tmp_path / n).read_text()) for n in ("a.json", "b.json")]
    assert all(len(d["steps"]) == 3 and all(s["histograms"] for s in d["steps"]) for d in docs)

    shot = tmp_path / "shot.png"
    # one browser for both: the page as drawn, and its document after drawing
    dom = _chromium(f"--screenshot={shot}", "--window-size=1280,2400", "--dump-dom", html.as_uri())
    console = [line for line in dom.stderr.splitlines() if "CONSOLE" in line]
    assert not console, "the page logged:\n" + "\n".join(console)
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert f'data-drawn="{len(LIVE_CHARTS)}"' in dom.stdout, "not every chart was drawn"
    body = dom.stdout[dom.stdout.index("<body"):]
    for i in range(len(LIVE_CHARTS)):  # each chart's <div> holds the <svg> vega-embed drew
        part = body[body.index(f'id="fig{i}"'):]
        part = part[:part.index(f'id="fig{i + 1}"' if i + 1 < len(LIVE_CHARTS) else "<script")]
        assert re.search(r'<svg[^>]*class="marks"', part) and 'class="error"' not in part, f"{LIVE_CHARTS[i]} not drawn"
    width, height, pixels = png_pixels(shot)
    assert (width, height) == (1280, 2400)
    colours = Counter(pixels)
    white = colours.get(b"\xff\xff\xff", 0)
    assert len(colours) > 200, f"{len(colours)} colours: the charts were not drawn"
    assert white < 0.97 * width * height

    images = sorted(png.iterdir())
    assert [p.stem for p in images] == sorted(LIVE_CHARTS) and all(p.suffix == ".png" for p in images)
    by_name = {p.stem: png_size(p) for p in images}
    assert by_name["throughput-vs-users"][0] >= 2 * WIDTH and by_name["timeline"][0] >= 4 * 420  # two panels
    assert sorted(p.stem for p in svg.iterdir()) == sorted(LIVE_CHARTS)
    assert [f.name for f in figures(group(load_results([tmp_path / "a.json"])))] == LIVE_CHARTS
