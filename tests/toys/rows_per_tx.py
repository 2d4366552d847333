"""A toy figure of the server's: the rows the server read per transaction, derived from its status
(Rows_read) over each tick, interval, step and the run. Declared once here; a condition may
name it (`stop when { rows_read_per_tx > 100 }`), and the rows, the summary, compare and the live
screen carry it. Its registry line is METRICS."""

from __future__ import annotations

from bench_dsl.language.metric_decls import MetricDecl, StatusWindow


def _per_tx(w: StatusWindow) -> float | None:
    rows = w.grew("Rows_read")
    return rows / w.transactions if rows is not None and w.transactions else None


METRICS = (MetricDecl(
    "rows_read_per_tx", "gauge", "rows", "plain", title="rows read/tx", example="rows_read_per_tx {op} 100",
    arg="none", arg_error=("rows_read_per_tx is the server's, over every transaction: it takes no (name)",
                           "rows_read_per_tx > 100"),
    status=("Rows_read",), derive=_per_tx, description="rows the server read per transaction completed",
    higher_is_better=False, summarized=True, compared=True, live=True),)
