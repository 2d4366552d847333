"""The text panels as pure Rich renderables built from LiveState: header, figures, the transaction
and condition tables, the log and the verdict. The widgets only call these with their size."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from rich.console import RenderableType
from rich.text import Text

from bench_dsl.core import mysql_errors
from bench_dsl.core.axis import LiveCell
from bench_dsl.core.dsn import redact
from bench_dsl.core.live_figures import TickFigures, TxFigures, of_row_transactions
from bench_dsl.engine import events as ev
from bench_dsl.results import verdict as verdict_words
from bench_dsl.workloads import registry

from .lines import Lines, cells
from .live_conditions import ConditionRow
from .state import LiveState, LogEntry

DIM = "bright_black"


def clock(seconds: float) -> str:
    s = int(seconds)
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60}:{s % 60:02d}"


def short_version(version: str) -> str:
    """'10.11.19-MariaDB-0+deb12u1' -> 'MariaDB 10.11.19'; '8.0.36' -> 'MySQL 8.0.36'."""
    if not version:
        return ""
    number = version.split("-")[0]
    return f"MariaDB {number}" if "mariadb" in version.lower() else f"MySQL {number}"


def short_target(target: str) -> str:
    """The target without its scheme; redacted again, so a password can never reach the screen."""
    t = redact(target)
    return t.split("://", 1)[1] if "://" in t else t


def bar(fraction: float, width: int) -> Text:
    """A progress bar in eighths of a cell."""
    width = max(width, 1)
    fraction = min(max(fraction, 0.0), 1.0)
    eighths = round(fraction * width * 8)
    full, part = divmod(eighths, 8)
    s = "█" * full + (" ▏▎▍▌▋▊▉"[part] if part and full < width else "")
    return Text(s.ljust(width), style="green on grey23")


def fmt_int(v: float | None) -> str:
    return "-" if v is None else f"{v:,.0f}"


def fmt_rate(v: float | None) -> str:
    if v is None:
        return "-"
    return f"{v:,.0f}" if v >= 1000 else f"{v:.1f}"


def fmt_ms(v: float | None) -> str:
    """Latency in ms in at most 5 characters."""
    if v is None:
        return "-"
    if v >= 10_000:
        return f"{v / 1000:.0f}s"
    if v >= 100:
        return f"{v:.0f}"
    if v >= 10:
        return f"{v:.1f}"
    return f"{v:.2f}"


def fmt_pct(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.0f}%"


# header ---------------------------------------------------------------------------------------------
def header(st: LiveState, width: int, waiting_for_key: bool = False, title: str = "bench-dsl") -> Lines:
    """Two lines: what runs where (`title`: the app's, "replay of ..." in a replay), and where the run is."""
    top = Text(no_wrap=True, overflow="ellipsis")
    top.append(f" {title} ", "bold reverse")
    top.append(" ")
    top.append(st.scenario or "starting…", "bold")
    if st.target:
        where = short_target(st.target)
        top.append("  on ", DIM)
        top.append(short_version(st.server_version) or "server", "cyan")
        top.append(f" {where}")
        if st.embedded:
            top.append(" (throwaway)", DIM)
    elapsed = f"elapsed {clock(st.t)} "
    top.truncate(max(width - len(elapsed) - 2, 1), overflow="ellipsis")  # the clock always stays in sight
    top.append(" " * max(width - top.cell_len - len(elapsed), 2))
    top.append(elapsed, "bold")

    line = Text(no_wrap=True, overflow="ellipsis")
    line.append(" ")
    fin = st.finished
    if fin is not None:
        style = "bold green" if fin.exit_code == 0 else "bold red"
        line.append(f"finished: {fin.status}, exit {fin.exit_code}", style)
        if waiting_for_key:
            line.append("   q or Enter to leave", DIM)
    elif st.stopping:
        line.append("stopping: saving what was measured…", "bold yellow")
    elif st.fired is not None:
        line.append(" FIRED ", "bold white on red")
        line.append(f" {st.fired.condition}", "bold red")
        line.append(f" at step {st.fired.step}: ending the run and saving the results…")
    elif st.phase == "starting":
        line.append("starting: connecting to the target…", DIM)
    elif st.phase == "prepare":
        p = st.prepare
        if p and p.get("total"):
            frac = p["done"] / p["total"]
            line.append("prepare ", "bold")
            line.append_text(bar(frac, min(30, max(width // 4, 10))))
            line.append(f" {frac:4.0%}  {p['done']:,}/{p['total']:,} rows")
            if p.get("rows_per_s"):
                line.append(f" · {p['rows_per_s']:,.0f} rows/s", DIM)
            if p.get("eta_s") is not None:
                line.append(f" · {clock(p['eta_s'])} left", DIM)
        else:
            line.append("prepare: checking and loading the data…", "bold")
    else:
        _phase_line(st, line, width)
    return Lines([top, line])


def _phase_line(st: LiveState, line: Text, width: int) -> None:
    line.append(ev.phase_label(st.phase, st.step, st.steps), "bold")
    tick = st.tick
    same_phase = tick is not None and tick.phase == st.phase and tick.step == st.step
    users = tick.users if tick is not None and same_phase else st.phase_users
    if users is not None:
        line.append(f" · {users} users")
    if st.holding:
        line.append("  ")
        line.append(" HOLDING ", "bold black on yellow")
        line.append("  h to go on", DIM)
        return
    total = st.phase_seconds
    left = st.remaining_s
    if left is not None:
        line.append(f" · {left:.0f}s left")
    if total and left is not None:
        line.append("  ")
        line.append_text(bar(1 - left / total, min(24, max(width // 5, 8))))


# figures --------------------------------------------------------------------------------------------
def figures(st: LiveState, width: int) -> Lines:
    """The headline figures of the last second: labels above, values below, evenly spread."""
    tick = st.tick
    t = tick.figures if tick is not None else TickFigures()
    items: list[tuple[str, str, str]] = [("users", fmt_int(tick.users if tick is not None else None), "bold")]
    # the declared throughputs that are headlines (one of a transaction when the workload has it)
    for d in registry.METRICS.measuring("throughput"):
        if d.live and (d.transaction is None or d.name in t.declared):
            per_s = d.per == 1
            items.append((d.heading, (fmt_rate if per_s else fmt_int)(t.declared.get(d.name)), "bold bright_green"
                          if d.transaction is not None else "bold bright_cyan" if per_s else "bold cyan"))
    for d in registry.METRICS:  # each derived figure the run measures that is a headline (declared live)
        if d.derive is not None and d.live and d.figure_name in (st.figures if st.figures is not None else t.declared):
            v = t.declared.get(d.figure_name)
            items.append((d.heading, fmt_pct(v) if d.measures == "share" else fmt_rate(v), "bold"))
    # a load that asks (a rate): its own cells
    asked = tick is not None and st.axis.asked is not None and st.axis.asked in t.declared
    cells = st.axis.live_cells(t, tick.users, st.interval or {}) if asked and tick is not None else ()
    items += [(c.label, _live_cell(c), _TONE[c.tone]) for c in cells]
    errors, retries = t.errors_per_s, t.retries_per_s
    items += [
        ("errors/s", "-" if errors is None else f"{errors:.1f}", "bold red" if errors else "bold"),
        ("retries/s", "-" if retries is None else f"{retries:.1f}", "bold yellow" if retries else "bold"),
        ("cpu server", fmt_pct(t.cpu.server) if tick is not None else "-", "bold"),
        ("cpu client", fmt_pct(t.cpu.client) if tick is not None else "-", "bold"),
    ]
    if lag := t.client_lag:  # bench-dsl's own processes waiting for a core
        items.append(("client lag", f"{lag.p90_ms:.1f} ms", "bold yellow" if lag.p90_ms > lag.bound_ms else "bold"))
    if t.stall_s is not None:  # the step's longest time without a completion, once it is a stall
        items.append(("stall", f"{t.stall_s:.1f}s", "bold yellow"))
    if t.lag_s is not None:  # measured only with replicas
        items.append(("replica lag", f"{t.lag_s:.2f}s", "bold yellow" if t.lag_s >= 1 else "bold"))
    if disk := t.disk:
        items.append((f"disk {disk.device}", fmt_pct(disk.util_pct), "bold"))
    items = _fitting(items, width, cells, asked)
    cell = max(width // len(items), 1)
    margin = " " * max((width - cell * len(items)) // 2, 0)
    labels, values = Text(margin), Text(margin)
    room = max(cell - 2, 1)  # a figure too wide even alone is cut, never run into the next
    for label, value, style in items:
        labels.append(label[:room].center(cell), DIM)
        values.append(value[:room].center(cell), style)
    return Lines([labels, values])


# The headline's figures given up first when they do not all fit (each needs its label's width and two
# spaces): what another figure says too (tpm is tps a minute) or the table below shows, then what is
# rarely the limit. A rate's open-loop figures made a 120-column headline cut its labels to 9 letters.
_GIVEN_UP = ("tpm", "retries/s", "disk", "replica lag", "cpu client", "errors/s", "client lag")
# Then, narrower still (a rate's figures at 80 columns, anything at 40): the labels ran together
# ("offered achieveddropped/") and the values into one number. What the header or another figure
# says too goes first (the users are in the phase line; a load's cells given up "early", as a rate's
# busy users and service time), then the screen's own, then the load's "late" ones (a rate's response
# time); its other cells (a rate's offered, achieved and dropped) last.
_NARROW_GIVEN_UP = ("stall", "cpu server", "users")


def _fitting(items: list[tuple[str, str, str]], width: int, cells: Sequence[LiveCell], asked: bool) -> list[
        tuple[str, str, str]]:
    """`cells`, a load's own (`asked`: they say the throughput, and tps goes before)."""
    def fits(xs: list[tuple[str, str, str]]) -> bool:
        return width // len(xs) >= max(max(len(label), len(value)) for label, value, _ in xs) + 2

    early, late = ([c.label for c in cells if c.narrow == when] for when in ("early", "late"))
    for name in (*_GIVEN_UP, *(("tps",) if asked else ()), *early, *_NARROW_GIVEN_UP, *late):
        if fits(items) or len(items) <= 1:
            break
        items = [i for i in items if not i[0].startswith(name)]
    while not fits(items) and len(items) > 1:  # the last ones that do not fit go from the right
        items = items[:-1]
    return items


def _with_ms(v: float | None) -> str:
    said = fmt_ms(v)
    return said if v is None or said.endswith("s") else f"{said} ms"


_TONE = {"": "bold", "good": "bold bright_green", "warn": "bold yellow", "bad": "bold red"}


def _live_cell(c: LiveCell) -> str:
    return (c.text if c.form == "text" else _with_ms(c.value) if c.form == "ms" else
            ("-" if c.value is None else f"{c.value:.1f}") if c.form == "decimal" else fmt_rate(c.value))


# transactions ---------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class _Col:
    key: str
    head: str
    group: str  # "w" the last interval, "s" the step, "" the name
    width: int
    keep: int  # the higher, the longer it stays when the table is too wide


_COLS = (
    _Col("name", "transaction", "", 14, 99),
    _Col("count", "count", "w", 7, 2), _Col("tps", "tps", "w", 7, 9), _Col("p50", "p50", "w", 5, 4),
    _Col("p90", "p90", "w", 5, 8), _Col("p95", "p95", "w", 5, 1), _Col("p99", "p99", "w", 5, 6),
    _Col("max", "max", "w", 5, 3), _Col("errors", "err", "w", 5, 7),
    _Col("count", "count", "s", 7, 9), _Col("tps", "tps", "s", 7, 9), _Col("p50", "p50", "s", 5, 5),
    _Col("p90", "p90", "s", 5, 9), _Col("p95", "p95", "s", 5, 2), _Col("p99", "p99", "s", 5, 8),
    _Col("max", "max", "s", 5, 4), _Col("errors", "err", "s", 6, 8),
)


def tx_columns(width: int, name_width: int = 14) -> list[_Col]:
    """The columns that fit: the least needed go first when the table is narrow."""
    cols = [_Col("name", "transaction", "", name_width, 99) if c.key == "name" else c for c in _COLS]
    # each column has a space after it; one more column separates the interval's from the step's
    while sum(c.width + 1 for c in cols) + 2 > width and len(cols) > 3:
        cols.remove(min((c for c in cols if c.key != "name"), key=lambda c: c.keep))
    return cols


def tx_title(st: LiveState) -> str:
    iv = st.interval
    window = f"last {iv['seconds']:.0f}s" if iv and iv.get("seconds") else "last interval"
    if st.step_so_far is not None and iv is not None:
        step = f"step {iv.get('step')} so far"
    elif st.last_step is not None:
        step = f"step {st.last_step.get('step')} (ended)"
    else:
        step = "step"
    return f"transactions: {window} │ {step}"


def _cell(fig: TxFigures | None, key: str) -> str:
    if fig is None:
        return "-"
    if key in ("count", "errors"):
        return fmt_int(fig.count if key == "count" else fig.errors)
    return fmt_rate(fig.tps) if key == "tps" else fmt_ms(fig.latency_ms.at(key) if fig.latency_ms else None)


def tx_table(st: LiveState, width: int) -> Lines:
    iv = st.interval or {}
    names = st.transactions or list((iv.get("transactions") or {}).keys())
    cols = tx_columns(width, min(20, max([len("transaction"), *(len(n) for n in names)])))
    window, window_all = of_row_transactions(iv)
    so_far = st.step_so_far
    step, step_all = (so_far.transactions, so_far.whole()) if so_far is not None else of_row_transactions(st.last_step)
    layout: list[_Col | None] = []  # None: the rule between the interval's columns and the step's
    for col in cols:
        if col.group == "s" and layout and layout[-1] is not None and layout[-1].group == "w":
            layout.append(None)
        layout.append(col)
    head: list[tuple[str | Text, int, str]] = []
    for c in layout:
        if c is None:
            head.append((Text("│", DIM), 1, "<"))
        else:
            head.append((Text(c.head, "bold cyan" if c.group == "s" else "bold"), c.width,
                         "<" if c.key == "name" else ">"))
    lines = [cells(head)]
    rows: list[tuple[str, TxFigures | None, TxFigures | None]] = [(n, window.get(n), step.get(n)) for n in names]
    if len(names) > 1:
        rows.append(("all", window_all, step_all))
    for name, w, s in rows:
        parts: list[tuple[str | Text, int, str]] = []
        for c in layout:
            if c is None:
                parts.append((Text("│", DIM), 1, "<"))
            elif c.key == "name":
                parts.append((Text(name, "bold" if name == "all" else ""), c.width, "<"))
            else:
                value = _cell(w if c.group == "w" else s, c.key)
                style = "red" if c.key == "errors" and value not in ("-", "0") else "cyan" if c.group == "s" else ""
                parts.append((Text(value, style), c.width, ">"))
        lines.append(cells(parts))
    return Lines(lines)


# conditions -----------------------------------------------------------------------------------------
STATE_STYLE = {"ok": "green", "near": "bold yellow", "over": "bold dark_orange", "FIRED": "bold white on red",
               "-": DIM}


def conditions_table(rows: Sequence[ConditionRow], width: int, header: bool = True) -> RenderableType:
    if not rows:
        return Text("no stop conditions: the run goes to its last step", DIM)
    show_from = width >= 64
    now_w = max(7, *(len(r.value) for r in rows))
    limit_w = max(7, *(len(r.limit) for r in rows))
    from_w = min(16, max(4, *(len(r.source) for r in rows))) if show_from else 0
    fixed = 6 + now_w + limit_w + (from_w + 1 if show_from else 0) + 4
    text_w = max(width - fixed, 10)
    lines: list[Text] = []
    if header:
        head: list[tuple[str | Text, int, str]] = [("state", 6, "<"), ("condition", text_w, "<"), ("now", now_w, ">"),
                                                  ("limit", limit_w, ">")]
        if show_from:
            head.append(("from", from_w, "<"))
        lines.append(cells(head, "bold"))
    for r in rows:
        badge = Text(f"{r.state:^5}" if r.state != "-" else "  -  ", STATE_STYLE[r.state])
        parts: list[tuple[str | Text, int, str]] = [
            (badge, 6, "<"), (r.text, text_w, "<"), (Text(r.value, "bold" if r.state != "-" else DIM), now_w, ">"),
            (r.limit, limit_w, ">")]
        if show_from:
            parts.append((Text(r.source, DIM), from_w, "<"))
        lines.append(cells(parts))
    return Lines(lines)


# log ------------------------------------------------------------------------------------------------
LEVEL_STYLE = {"info": "", "warning": "yellow", "error": "red"}


def log_line(e: LogEntry) -> Text:
    t = Text(no_wrap=True, overflow="ellipsis")
    t.append(clock(e.t) if e.t is not None else "    ", DIM)
    t.append(" ")
    if e.count > 1:  # first, so that a line cut at the pane's edge keeps it
        t.append(f"{e.count:,}× ", "bold")
    if e.code is not None:
        name = mysql_errors.name(e.code)
        t.append(f"error {e.code}" + (f" {name}" if name else ""), "bold red")
        if e.where:
            t.append(f" in {', '.join(sorted(e.where))}", "red")
        if e.message:
            t.append(f": {e.message}", "red")
    else:
        t.append(e.message, LEVEL_STYLE.get(e.level, ""))
    return t


def log_text(entries: Sequence[LogEntry], width: int) -> Lines:
    return Lines([log_line(e) for e in entries])


# verdict --------------------------------------------------------------------------------------------
# the tones of the verdict's words (bench_dsl.results.verdict), as this screen styles them
TONE_STYLE = {"plain": "", "dim": DIM, "strong": "bold", "good": "bold bright_green", "bad": "bold red",
              "error": "red", "warn": "bold yellow", "note": "yellow"}


def said(line: verdict_words.Line, headline: bool = False) -> Text:
    """A line of the verdict's words in this screen's styles; a headline begins with a capital."""
    out = Text()
    for i, (words, tone) in enumerate(line):
        out.append(words[:1].upper() + words[1:] if headline and i == 0 else words, TONE_STYLE.get(tone, ""))
    return out


def verdict(st: LiveState, results: Path | None, waiting_for_key: bool) -> RenderableType:
    fin = st.finished  # None only before the end (the verdict is shown from then on)
    sat = fin.saturation.to_json() if fin is not None and fin.saturation is not None else None
    head, *rest = verdict_words.verdict_lines(sat, fin.stop if fin else None)
    lines = [said(head, headline=True), *(said(line) for line in rest)]
    summary = fin.summary if fin else None
    if summary:
        lat = summary.get("latency_ms") or {}
        lines.append(Text(f"measured {summary.get('count', 0):,} transactions in {clock(summary.get('seconds') or 0)}: "
                          f"tps {fmt_rate(summary.get('tps'))}, p90 {fmt_ms(lat.get('p90'))} ms, "
                          f"p99 {fmt_ms(lat.get('p99'))} ms, errors {summary.get('errors', 0):,}", DIM))
    lines += [said(verdict_words.expect_line(e.to_json())) for e in (fin.expect if fin else [])]
    res = Text("results ", DIM)
    res.append(str(results) if results is not None else "not written (no JSON output)", "bold")
    lines.append(res)
    tail = Text(f"status {fin.status if fin else None} · exit {fin.exit_code if fin else None}", DIM)
    if waiting_for_key:
        tail.append("   press q or Enter to leave", "bold")
    lines.append(tail)
    return Lines(lines)


HELP = """\
[b]Keys[/b]
  [b]q[/b]      stop the run and save what was measured (asks first); after the verdict: leave
  [b]n[/b]      end this step now and go to the next one (a hold is judged on what it measured)
  [b]h[/b]      hold at the current users until pressed again (the phase's clock stands still)
  [b]?[/b]      this help          [b]ctrl+c[/b]  stop and save at once, as in a shell

[b]Stop conditions[/b]
  [green]ok[/green]     the current value is clear of its limit
  [yellow]near[/yellow]   within 20% of the limit
  [orange]over[/orange]   past the limit so far; the engine judges it at the step's end
  [white on red]FIRED[/white on red]  the engine judged it: the run ends, the step before is the saturation point
  "now" is read over the same window the engine judges: the step so far (a linear ramp: the last
  interval; a `for D` condition: the last D seconds).

[b]Charts[/b]
  left: throughput each second, dim while not measured (warmup, settle); a dotted line where a
  step begins, with its users.  right: each step's throughput ([cyan]●[/cyan], left axis) and p90
  ([magenta]◆[/magenta], right axis, ms) against users; the p90 limit in red, the saturation point in green.

Press ? or Escape to close."""
