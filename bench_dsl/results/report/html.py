"""Charts to files: PNG/SVG through vl-convert (Vega run in an embedded JavaScript engine, no browser),
and one self-contained HTML page that carries the Vega libraries inline (no network when opened)."""

from __future__ import annotations

import datetime as dt
import functools
import html
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import altair as alt
import vl_convert as vlc

from bench_dsl import __version__
from bench_dsl.core.cache import cache_file
from bench_dsl.results.files import write_atomically
from bench_dsl.results.fold import FoldedConfiguration, group
from bench_dsl.results.read import ResultFile
from bench_dsl.results.report import data
from bench_dsl.results.report.charts import ReportChart, figures

PNG_SCALE = 2.0  # pixels per CSS pixel: sharp enough for a paper or a README on a dense screen


def vl_version() -> str:
    """The Vega-Lite version altair writes, as vl-convert names it ("v5_20"): the libraries in the
    page and the converter must read the specification altair wrote."""
    return "v" + "_".join(alt.SCHEMA_VERSION.lstrip("v").split(".")[:2])


def _configs(docs: Sequence[dict[str, Any] | ResultFile]) -> list[FoldedConfiguration]:
    configs = group(docs)
    if not configs:
        raise ValueError("no results to report on")
    return configs


def write_images(docs: Sequence[dict[str, Any] | ResultFile], directory: str | Path, fmt: str = "png",
                 scale: float = PNG_SCALE) -> list[Path]:
    """One image per chart in `directory` (made if need be), named after the chart. Returns them."""
    if fmt not in ("png", "svg"):
        raise ValueError(f"image format {fmt!r}: png or svg")
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    version = vl_version()
    for fig in figures(_configs(docs)):
        path = out / f"{fig.name}.{fmt}"
        spec = fig.spec()
        if fmt == "png":
            write_atomically(path, vlc.vegalite_to_png(spec, vl_version=version, scale=scale))
        else:
            write_atomically(path, vlc.vegalite_to_svg(spec, vl_version=version).encode("utf-8"))
        written.append(path)
    return written


def write_html(docs: Sequence[dict[str, Any] | ResultFile], path: str | Path) -> Path:
    """The report as one HTML file that opens offline: the Vega libraries and the data are inside."""
    configs = _configs(docs)
    page = render_html(configs, figures(configs))
    return write_atomically(path, page)


def _script_json(value: Any) -> str:
    """JSON inside <script>: a label holding "</script>" must not end the script early."""
    return json.dumps(value, separators=(",", ":")).replace("<", "\\u003c").replace(">", "\\u003e") \
        .replace("&", "\\u0026")


STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 2em auto;
       max-width: 1200px; padding: 0 1em; color: #222; }
h1 { font-size: 1.5em; margin-bottom: 0.2em; } h2 { font-size: 1.15em; margin-top: 2em; }
p.meta, p.caption { color: #555; font-size: 0.9em; }
table { border-collapse: collapse; font-size: 0.85em; margin: 1em 0; }
th, td { border: 1px solid #ccc; padding: 0.3em 0.6em; text-align: left; vertical-align: top; }
th { background: #f3f3f3; } td.num { text-align: right; }
.chart { margin: 0.5em 0 1em 0; } .error { color: #b00; font-weight: bold; }
details { margin-top: 2em; font-size: 0.85em; }
"""

# vegaEmbed per chart; a chart that fails says so on the page and in the console instead of
# leaving a blank space, and the page counts what it drew (the tests read it back)
EMBED = """
const figures = %s;
const drawn = [];
for (const f of figures) {
  vegaEmbed("#" + f.id, f.spec, {renderer: "svg", actions: false})
    .then(() => { drawn.push(f.id); document.body.dataset.drawn = drawn.length; })
    .catch((e) => { console.error("chart " + f.id + ": " + e);
                    document.getElementById(f.id).innerHTML =
                      '<p class="error">this chart could not be drawn: ' + String(e).replace(/</g, "&lt;") + '</p>'; });
}
"""


@functools.cache
def _bundle(version: str) -> str:
    """Vega's ~0.9 MB of JavaScript, which takes vl-convert seconds to bundle: once per machine and
    version, kept in the user's private cache (bench_dsl.core.cache; every report and every
    study's end would otherwise pay it), and once per process when that cannot be used."""
    path = cache_file(f"vega-bundle-{getattr(vlc, '__version__', 'unknown')}-{version}.js")
    try:
        if path is not None and path.exists():
            return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        pass
    text: str = vlc.javascript_bundle(vl_version=version)  # type: ignore[call-arg]  # the stub forgets the default
    try:
        if path is not None:
            write_atomically(path, text)
    except OSError:
        pass  # a full disk: this process's copy does
    return text


def render_html(configs: list[FoldedConfiguration], figs: list[ReportChart]) -> str:
    bundle = _bundle(vl_version())
    esc = html.escape
    rows = data.summary_rows(configs)
    cols = [("configuration", "configuration"), ("scenario", "scenario"), ("runs", "runs"),
            ("saturation", "saturation point"), ("stopped_by", "stopped by"), ("ran_out", "what ran out"),
            ("best_tps", "best tps"),
            ("status", "status"), ("server", "server")]
    table = "<table><tr>" + "".join(f"<th>{esc(t)}</th>" for _, t in cols) + "</tr>\n"
    for r in rows:
        table += "<tr>" + "".join(f'<td{" class=num" if k in ("runs", "best_tps") else ""}>{esc(str(r[k]))}</td>'
                                  for k, _ in cols) + "</tr>\n"
    table += "</table>"
    studies = sorted({str(c.results[0].doc["configuration"]["study"]) for c in configs
                      if isinstance(c.results[0].doc.get("configuration"), dict)
                      and c.results[0].doc["configuration"].get("study")})
    heading = "bench-dsl report" + (f": {', '.join(studies)}" if studies else "")
    files = [str(r.path) for c in configs for r in c.results if r.path is not None]
    runs = sum(len(c.results) for c in configs)
    body = [f"<h1>{esc(heading)}</h1>",
            f'<p class="meta">{len(configs)} configuration{"s" if len(configs) != 1 else ""}, {runs} '
            f'run{"s" if runs != 1 else ""}; written {esc(dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"))} '
            f"by bench-dsl {esc(__version__)}</p>", table]
    if not figs:
        body.append('<p class="error">No result measured a step: there is nothing to draw.</p>')
    for i, f in enumerate(figs):
        body.append(f"<h2>{esc(f.title)}</h2>\n<p class=\"caption\">{esc(f.caption)}</p>\n"
                    f'<div class="chart" id="fig{i}"></div>')
    if files:
        body.append("<details><summary>result files</summary><ul>"
                    + "".join(f"<li>{esc(p)}</li>" for p in files) + "</ul></details>")
    specs = [{"id": f"fig{i}", "spec": f.spec()} for i, f in enumerate(figs)]
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            f"<title>{esc(heading)}</title>\n<style>{STYLE}</style>\n"
            # the libraries, inline: lab machines often have no internet, and the page must still draw
            f"<script>\n{bundle}\n</script>\n</head>\n<body>\n" + "\n".join(body)
            + f"\n<script>\n{EMBED % _script_json(specs)}\n</script>\n</body>\n</html>\n")
