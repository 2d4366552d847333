"""Text from files (a scenario's name, a result's labels and messages) as a terminal may be given
it: control characters escaped, so that a name holding `ESC ] 0 ; ... BEL` or `ESC [2J` is shown
as those characters instead of retitling the window or clearing the screen.

Rich markup is a separate matter: whatever reaches rich as a string with markup=True is escaped
at that place (rich.markup.escape); nothing here reads text as markup."""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from rich.console import Console, ConsoleOptions, ConsoleRenderable, RenderableType, RenderHook, RenderResult
from rich.segment import Segment

# C0 and C1 controls and DEL; also the invisible marks that reorder or break what is shown around
# them (bidirectional overrides and isolates, Unicode's own line and paragraph separators)
_CONTROLS = "\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069"
_UNSAFE = re.compile(f"[{_CONTROLS}]")


def _escape(m: re.Match[str]) -> str:
    code = ord(m.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str) -> str:
    """`text` with every control character written as an escape (`\\x1b`); line breaks and tabs
    kept: our own output has them, and they command a terminal to do nothing else."""
    return _UNSAFE.sub(_escape, text)


def printable_data(value: Any) -> Any:
    """`value` (an event, a row: dataclasses, dicts, lists of them) with every string in it made
    printable: for a screen that draws fields one by one, each of which a file may have set."""
    if isinstance(value, str):
        return printable(value) if _UNSAFE.search(value) else value
    if isinstance(value, dict):
        return {printable_data(k): printable_data(v) for k, v in value.items()}
    if isinstance(value, tuple) and hasattr(value, "_fields"):  # a named tuple
        return type(value)(*(printable_data(v) for v in value))
    if isinstance(value, (list, tuple)):
        return type(value)(printable_data(v) for v in value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.replace(value, **{f.name: printable_data(getattr(value, f.name))
                                             for f in dataclasses.fields(value) if f.init})
    return value


class _Escaped:
    """A renderable drawn as rich draws it, its text escaped on the way out (rich's own control
    segments, cursor moves and the like, pass)."""

    def __init__(self, inner: RenderableType) -> None:
        self.inner = inner

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        for seg in console.render(self.inner, options):
            yield seg if seg.control or not _UNSAFE.search(seg.text) else Segment(printable(seg.text), seg.style)


class _EscapeHook(RenderHook):
    def process_renderables(self, renderables: list[ConsoleRenderable]) -> list[ConsoleRenderable]:
        return [_Escaped(r) for r in renderables]


def escaping(console: Console) -> Console:
    """`console`, from now on escaping the control characters of everything it prints: the one
    place where every command's console output is made safe, whatever field of a file it shows."""
    console.push_render_hook(_EscapeHook())
    return console
