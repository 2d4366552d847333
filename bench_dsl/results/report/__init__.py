"""`bench report`: an HTML report that opens offline and PNG/SVG charts of one or more results.

load.py finds and groups the results (no plotting library), data.py reads the numbers the charts
draw, charts.py builds the Vega-Altair charts, render.py writes them (vl-convert, no browser).
Importing this package imports altair; `bench check` and `bench run` never do.
"""

from __future__ import annotations

from bench_dsl.results.report.charts import Figure, figures
from bench_dsl.results.report.load import Configuration, ResultFile, group, load_results
from bench_dsl.results.report.render import render_html, write_html, write_images

__all__ = ["Configuration", "Figure", "ResultFile", "figures", "group", "load_results", "render_html",
           "write_html", "write_images"]
