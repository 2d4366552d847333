"""`bench report`: an HTML report that opens offline and PNG/SVG charts of one or more results.

The results are read by bench_dsl/results/read.py and grouped and folded by bench_dsl/results/fold.py
(the same figures summary.json and `bench compare` give); data.py turns those into the rows the
charts draw, charts.py builds the Vega-Altair charts (first, for results of a workload that declares
the throughput they lead with, the storage brief's exhibits per configuration: docs/storage-brief.md),
html.py writes them (vl-convert, no browser).
Importing this package imports altair; `bench check` and `bench run` never do.
"""

from __future__ import annotations

from bench_dsl.results.fold import FoldedConfiguration, group
from bench_dsl.results.read import ResultFile, find_results
from bench_dsl.results.report.charts import ReportChart, figures
from bench_dsl.results.report.html import render_html, write_html, write_images

__all__ = ["FoldedConfiguration", "ReportChart", "ResultFile", "figures", "find_results", "group", "render_html",
           "write_html", "write_images"]
