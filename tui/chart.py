"""The two charts, drawn with braille dots (2x4 per character cell) as pure Rich renderables:
throughput over time with the step boundaries, and throughput and p90 against users, one point per
step, with the p90 limit and the saturation point. No Textual here: the widgets only size them."""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from rich.console import Console, ConsoleOptions, RenderResult
from rich.style import Style
from rich.text import Text

from bench_dsl.core.axis import number

from .lines import Lines
from .state import Boundary, Point, StepPoint

BRAILLE = 0x2800
# the bit of each dot of a braille cell, by (x, y) inside the cell
DOTS = ((0x01, 0x02, 0x04, 0x40), (0x08, 0x10, 0x20, 0x80))

TPS = Style(color="bright_cyan")
TPS_DIM = Style(color="cyan", dim=True)
P90 = Style(color="magenta")
LIMIT = Style(color="red")
MARK = Style(color="bright_black")
SAT = Style(color="bright_green", bold=True)
AXIS = Style(color="bright_black")
LABEL = Style(color="white", dim=True)


class Canvas:
    """A grid of braille cells; each cell takes the style of the last thing drawn in it, and a text
    label written over a cell replaces its dots."""

    def __init__(self, cols: int, rows: int) -> None:
        self.cols, self.rows = max(cols, 1), max(rows, 1)
        self.bits = [[0] * self.cols for _ in range(self.rows)]
        self.styles: list[list[Style | None]] = [[None] * self.cols for _ in range(self.rows)]
        self.text: dict[tuple[int, int], tuple[str, Style]] = {}

    @property
    def width(self) -> int:
        return self.cols * 2

    @property
    def height(self) -> int:
        return self.rows * 4

    def dot(self, x: int, y: int, style: Style) -> None:
        """Pixel (x, y), y = 0 at the bottom."""
        if 0 <= x < self.width and 0 <= y < self.height:
            row, col = self.rows - 1 - y // 4, x // 2
            self.bits[row][col] |= DOTS[x % 2][3 - y % 4]
            self.styles[row][col] = style

    def line(self, x0: int, y0: int, x1: int, y1: int, style: Style) -> None:
        dx, dy = abs(x1 - x0), -abs(y1 - y0)
        sx, sy = (1 if x0 < x1 else -1), (1 if y0 < y1 else -1)
        err = dx + dy
        while True:
            self.dot(x0, y0, style)
            if x0 == x1 and y0 == y1:
                return
            e2 = 2 * err
            if e2 >= dy:
                err += dy
                x0 += sx
            if e2 <= dx:
                err += dx
                y0 += sy

    def vline(self, x: int, style: Style, dotted: bool = True) -> None:
        for y in range(0, self.height, 2 if dotted else 1):
            self.dot(x, y, style)

    def hline(self, y: int, style: Style) -> None:
        for x in range(0, self.width, 2):
            self.dot(x, y, style)

    def free(self, col: int, row: int, length: int) -> bool:
        """No dot and no text in these cells (and all of them on the canvas)."""
        if not (0 <= row < self.rows and col >= 0 and col + length <= self.cols):
            return False
        return all(not self.bits[row][c] and (row, c) not in self.text for c in range(col, col + length))

    def label(self, col: int, row: int, text: str, style: Style) -> None:
        """Text over the dots, from cell (col, row), row 0 at the top; cut at the edge."""
        for i, ch in enumerate(text):
            if 0 <= col + i < self.cols and 0 <= row < self.rows:
                self.text[(row, col + i)] = (ch, style)

    def lines(self) -> list[Text]:
        """One Text per row, cells of the same style appended together (one span per run, not one
        per cell: this is drawn every second)."""
        out = []
        for r in range(self.rows):
            t = Text()
            run: list[str] = []
            run_style: Style | None = None
            for c in range(self.cols):
                st: Style | None
                if (r, c) in self.text:
                    ch, st = self.text[(r, c)]
                elif self.bits[r][c]:
                    ch, st = chr(BRAILLE + self.bits[r][c]), self.styles[r][c]
                else:
                    ch, st = " ", None
                if st != run_style and run:
                    t.append("".join(run), run_style)
                    run = []
                run_style = st
                run.append(ch)
            if run:
                t.append("".join(run), run_style)
            out.append(t)
        return out


def nice_ceiling(v: float) -> float:
    """The top of an axis: v rounded up to a round number (1, 1.5, 2, 2.5, 3, 4, 5, 6, 8 times a
    power of ten), so the middle label is round too and the plot uses most of its height."""
    if v <= 0 or not math.isfinite(v):
        return 1.0
    exp = 10 ** math.floor(math.log10(v))
    for m in (1, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10):
        if v <= m * exp + 1e-9:
            return m * exp
    return 10 * exp


def fmt_num(v: float) -> str:
    if v >= 1_000_000:
        return f"{v / 1_000_000:.3g}M"
    if v >= 10_000:
        return f"{v / 1000:.3g}k"
    if v == int(v):
        return f"{int(v)}"
    return f"{v:.3g}"


def fmt_time(s: float) -> str:
    s = round(s)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}" if s % 60 else f"{s // 60}m"
    return f"{s // 3600}h{(s % 3600) // 60:02d}"


def time_ticks(lo: float, hi: float, n: int) -> list[float]:
    """Round instants (1 2 5 10 15 30 s, minutes, hours) between lo and hi, at most n of them."""
    for step in (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 14400, 21600, 43200, 86400):
        if math.floor(hi / step) - math.ceil(lo / step) + 1 <= max(n, 1):
            break
    first = math.ceil(lo / step) * step
    out: list[float] = []
    v = first
    while v <= hi + 1e-9:
        out.append(v)
        v += step
    return out


class Frame:
    """The parts around a plot: y labels on the left (and right), x labels under it."""

    def __init__(self, width: int, height: int, left: Sequence[str], right: Sequence[str] = ()) -> None:
        self.lw = max((len(s) for s in left), default=0) + 1
        self.rw = (max((len(s) for s in right), default=0) + 1) if right else 0
        self.cols = max(width - self.lw - self.rw, 1)
        self.rows = max(height - 1, 1)

    def compose(self, canvas: Canvas, left: Sequence[str], right: Sequence[str], xlabels: Text,
                left_style: Style = LABEL, right_style: Style = LABEL) -> list[Text]:
        """left/right: labels for the top, middle and bottom rows (blank strings elsewhere)."""
        body = canvas.lines()
        out = []
        marks = _axis_rows(self.rows, len(left))
        rmarks = _axis_rows(self.rows, len(right))
        for r, line in enumerate(body):
            t = Text()
            lab = left[marks.index(r)] if r in marks else ""
            t.append(lab.rjust(self.lw - 1), left_style)
            t.append("┤" if r in marks else "│", AXIS)
            t.append_text(line)
            if self.rw:
                t.append("├" if r in rmarks else "│", AXIS)
                lab = right[rmarks.index(r)] if r in rmarks else ""
                t.append(lab.ljust(self.rw - 1), right_style)
            out.append(t)
        bottom = Text(" " * self.lw)
        bottom.append_text(xlabels)
        out.append(bottom)
        return out


def _axis_rows(rows: int, n: int) -> list[int]:
    """Rows of n labels spread from the top (the highest value) to the bottom row."""
    if n <= 0:
        return []
    if n == 1 or rows == 1:
        return [0]
    return [round(i * (rows - 1) / (n - 1)) for i in range(n)]


def _y_labels(top: float, rows: int) -> list[str]:
    n = 3 if rows >= 5 else 2
    return [fmt_num(top * (n - 1 - i) / (n - 1)) for i in range(n)]


def _place(width: int, items: Iterable[tuple[int, str]]) -> Text:
    """Labels at columns, left to right, dropping any that would overlap the one before."""
    chars = [" "] * width
    end = -1
    for col, s in sorted(items):
        col = max(0, min(col - len(s) // 2, width - len(s)))
        if col <= end:
            continue
        for i, ch in enumerate(s):
            if col + i < width:
                chars[col + i] = ch
        end = col + len(s)
    return Text("".join(chars).rstrip(), LABEL)


@dataclass
class ThroughputChart:
    """tps against time: measured seconds bright, warmup and settle dim, a dotted line where each
    step begins (labelled with its users when there is room)."""

    points: Sequence[Point]
    boundaries: Sequence[Boundary]
    width: int
    height: int

    def lines(self) -> list[Text]:
        if not self.points or self.width < 12 or self.height < 3:
            return [Text("waiting for the first second of load…", LABEL)]
        top = nice_ceiling(max(p.hi for p in self.points) * 1.05)
        rows = self.height - 1
        left = _y_labels(top, rows)
        frame = Frame(self.width, self.height, left)
        cv = Canvas(frame.cols, frame.rows)
        t0 = self.points[0].t - 1.0  # the first point is the end of the first second
        t1 = max(self.points[-1].t, t0 + 10.0)

        def x_of(t: float) -> int:
            return round((t - t0) / (t1 - t0) * (cv.width - 1))

        def y_of(v: float) -> int:
            return round(v / top * (cv.height - 1))

        last_label_end = -1
        for b in self.boundaries:
            if t0 <= b.t <= t1:
                x = x_of(b.t)
                cv.vline(x, MARK)
                label = f"{b.users}u"
                col = x // 2 + 1
                if col > last_label_end and col + len(label) <= cv.cols:
                    cv.label(col, 0, label, MARK)
                    last_label_end = col + len(label)
        prev: tuple[int, int] | None = None
        for p in self.points:
            x, y = x_of(p.t), y_of(p.tps)
            style = TPS if p.measured else TPS_DIM
            if p.hi > p.lo:  # merged seconds: show their spread
                cv.line(x, y_of(p.lo), x, y_of(p.hi), style)
            if prev is not None:
                cv.line(prev[0], prev[1], x, y, style)
            else:
                cv.dot(x, y, style)
            prev = (x, y)
        ticks = time_ticks(t0, t1, max(2, cv.cols // 10))  # a label every ten columns or so
        xl = _place(cv.cols, [(x_of(v) // 2, fmt_time(v)) for v in ticks])
        return frame.compose(cv, left, [], xl)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield Lines(self.lines())


@dataclass
class UsersChart:
    """tps (left axis) and p90 in ms (right axis) against users, one point per step; the p90 limit
    as a red line; the saturation point as a green line. Users doubling from step to step are
    spaced evenly (a log scale), users growing by a constant on a linear scale."""

    points: Sequence[StepPoint]
    width: int
    height: int
    p90_limit_ms: float | None = None
    saturation: float | None = None  # on the load axis
    next_users: float | None = None  # the step in progress, on the load axis: the axis makes room for it
    log_scale: bool = False

    def lines(self) -> list[Text]:
        pts = [p for p in self.points if _x(p) > 0]
        if not pts or self.width < 16 or self.height < 3:
            return [Text("a point per step, once the first step has been measured", LABEL)]
        rows = self.height - 1
        tps_top = nice_ceiling(max(p.tps for p in pts) * 1.05)
        lats = [p.p90_ms for p in pts if p.p90_ms is not None]
        lat_top = nice_ceiling(max([*lats, self.p90_limit_ms or 0.0, 0.001]) * 1.05)
        left, right = _y_labels(tps_top, rows), _y_labels(lat_top, rows)
        frame = Frame(self.width, self.height, left, right)
        cv = Canvas(frame.cols, frame.rows)
        users = [_x(p) for p in pts] + ([self.next_users] if self.next_users else [])
        u0, u1 = min(users), max(users)
        log = self.log_scale and u0 > 0

        def fx(u: float) -> float:
            return math.log2(u) if log else u

        lo, hi = fx(u0), fx(u1)
        pad = (hi - lo) * 0.04 or 1.0  # first and last points stay off the axes

        def x_of(u: float) -> int:
            return round((fx(u) - lo + pad) / (hi - lo + 2 * pad) * (cv.width - 1))

        def y_tps(v: float) -> int:
            return round(v / tps_top * (cv.height - 1))

        def y_lat(v: float) -> int:
            return round(v / lat_top * (cv.height - 1))

        limit_row: int | None = None
        if self.p90_limit_ms is not None:
            y = y_lat(self.p90_limit_ms)
            cv.hline(y, LIMIT)
            limit_row = cv.rows - 1 - y // 4
        if self.saturation is not None:
            x = x_of(self.saturation)
            cv.vline(x, SAT, dotted=False)
            text = f"sat {self.saturation}"
            at = x // 2 + 1 if x // 2 + 1 + len(text) <= cv.cols else max(x // 2 - len(text), 0)
            cv.label(at, 0, text, SAT)
        for series, y_of, style, marker in (
                ([(_x(p), p.p90_ms) for p in pts if p.p90_ms is not None], y_lat, P90, "◆"),
                ([(_x(p), p.tps) for p in pts], y_tps, TPS, "●")):
            prev: tuple[int, int] | None = None
            for u, v in series:
                x, y = x_of(u), y_of(v)
                if prev is not None:
                    cv.line(prev[0], prev[1], x, y, style)
                prev = (x, y)
            for u, v in series:
                x, y = x_of(u), y_of(v)
                cv.label(x // 2, cv.rows - 1 - y // 4, marker, style)
        if limit_row is not None:
            # named where it hides nothing: above or below the line, at the left or the right
            text = "p90 limit"
            for row in (limit_row - 1, limit_row + 1):
                col = next((c for c in (1, cv.cols - len(text) - 1) if cv.free(c, row, len(text))), None)
                if col is not None:
                    cv.label(col, row, text, LIMIT)
                    break
        xl = _place(cv.cols, [(x_of(u) // 2, number(u)) for u in sorted({_x(p) for p in pts})])
        return frame.compose(cv, left, right, xl, left_style=Style(color="cyan"), right_style=Style(color="magenta"))

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield Lines(self.lines())


def doubling(users: Sequence[float]) -> bool:
    """Do the steps multiply the users (1 2 4 8 ...)? Then a log scale spaces them evenly."""
    if len(users) < 3 or users[0] <= 0:
        return False
    ratios = [b / a for a, b in itertools.pairwise(users)]
    return min(ratios) >= 1.5 and max(ratios) / min(ratios) < 1.5


def _x(p: StepPoint) -> float:
    """A step's point on the run's load axis: its users, or the rate it offered."""
    return p.x if p.x is not None else p.users
