"""Lines of text as a Rich renderable, and fixed-width cells: what every panel is made of."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console, ConsoleOptions, RenderResult
from rich.segment import Segment
from rich.text import Text


class Lines:
    """Text lines drawn as they are, each cut at the width and never wrapped: the screen is redrawn
    every second, and Rich's tables and wrapping cost far more than the figures they show."""

    def __init__(self, lines: Sequence[Text]) -> None:
        self.lines = list(lines)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        width = options.max_width
        new_line = Segment.line()
        for line in self.lines[:options.height or len(self.lines)]:
            if line.cell_len > width:
                line = line.copy()
                line.truncate(width, overflow="ellipsis")
            yield from line.render(console)
            yield new_line


def cells(parts: Sequence[tuple[str | Text, int, str]], style: str = "") -> Text:
    """One line of fixed-width cells: (text, width, justify "<" or ">"), a space after each."""
    line = Text(style=style)
    for value, width, justify in parts:
        t = value.copy() if isinstance(value, Text) else Text(value)
        if t.cell_len > width:
            t.truncate(width, overflow="ellipsis")
        pad = " " * (width - t.cell_len)
        if justify == ">":
            line.append(pad)
            line.append_text(t)
        else:
            line.append_text(t)
            line.append(pad)
        line.append(" ")
    line.rstrip()
    return line
