"""One base error, the exit statuses, and diagnostics that point into a .bench file."""

from __future__ import annotations

import bisect
import enum
import functools
import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass

from bench_dsl.core.dsn import redact
from bench_dsl.core.printable import printable


class ExitCode(enum.IntEnum):
    OK = 0
    FAILURE = 1
    BAD_SCENARIO = 2
    EXPECT_FAILED = 3
    TARGET_FAILED = 4
    HANGUP = 129
    INTERRUPTED = 130
    TERMINATED = 143


@dataclass(frozen=True, slots=True)
class Span:
    """Where a node came from: 1-based line and column, end exclusive."""

    file: str
    line: int
    col: int
    end_line: int
    end_col: int


@dataclass(frozen=True, slots=True)
class Diagnostic:
    message: str
    span: Span | None
    hint: str | None = None
    severity: str = "error"

    def render(self, source: str | None) -> str:
        """`file:line:col: message`, the source line, a caret under the offending text, a hint."""
        message = redact(self.message)  # it may quote a value given with -D or read from the environment
        if len(message) > MESSAGE:  # a value quoted whole: 900 KB of an address in a string
            cut = len(message) - MESSAGE // 2 - 60
            message = f"{message[:MESSAGE // 2]} ... ({cut:,} characters) ... {message[-60:]}"
        if self.span is None:
            out = f"{self.severity}: {message}"
        else:
            s = self.span
            out = f"{s.file}:{s.line}:{s.col}: {self.severity}: {message}"
            if source is not None and (line := source_line(source, s.line)) is not None:
                out += "\n" + _excerpt(line, s)
        if self.hint:  # it may quote the file's text as well: env("DSN", "mysql://u:pw@h/db")
            out += f"\n  hint: {redact(self.hint)}"
        return out


def normal_newlines(text: str) -> str:
    """The one definition of a line: ended by '\n'. The parser reads a CRLF (Windows) or a lone CR (old
    Mac) end as '\n' before lark counts lines (by '\n' only), so that the spans, the excerpts and the
    text read back by span (source_line, language.values.offset) all number the same lines. Other
    characters str.splitlines() breaks at (form feed, U+2028, ...) end no line."""
    return text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text


# str.splitlines breaks at them, and some editors show them as line ends; a .bench file does not
OTHER_BREAKS = "\v\f\x1c\x1d\x1e\x85\u2028\u2029"
_OTHER_BREAK = re.compile(f"[{OTHER_BREAKS}]")


def break_in_comment(text: str, pos: int | None) -> str | None:
    """The hint for a comment before `pos` that ran on past a character some programs show as a line
    break. One pass: the text already searched for a '#', or back for its line's start, is not searched
    again (900,000 form feeds on one line took 4 s when each looked back to the line's start)."""
    searched = line_start = 0
    for found in _OTHER_BREAK.finditer(text, 0, len(text) if pos is None else pos):
        b = found.start()
        if (newline := text.rfind("\n", searched, b)) >= 0:
            line_start = newline + 1
        if text.find("#", max(searched, line_start), b) >= 0:
            return (f"U+{ord(found.group()):04X} in a comment (line {text.count(chr(10), 0, b) + 1}) ends no line: the "
                    "comment runs on to the next line break; end the file's lines with ordinary line breaks")
        searched = b
    return None


def source_line(source: str, number: int) -> str | None:
    """Line `number` (1-based) of a text, as normal_newlines defines a line."""
    starts = line_starts(source)
    if not 1 <= number <= len(starts):
        return None
    end = starts[number] - 1 if number < len(starts) else len(source)
    return source[starts[number - 1]:end]


@functools.lru_cache(maxsize=4)
def line_starts(source: str) -> tuple[int, ...]:
    """Where each line of a text starts: one pass, shared by every diagnostic and span of the text."""
    return (0, *(m.end() for m in re.finditer("\n", source)))


def span_at(file: str, source: str, start: int, length: int) -> Span:
    """The span of `length` characters of `source` from `start`, on one line (bench_dsl.language.values.offset
    is the way back)."""
    starts = line_starts(source)
    line = bisect.bisect_right(starts, start)
    col = start - starts[line - 1] + 1
    return Span(file, line, col, line, col + length)


MESSAGE = 400  # a longer message is shown by its start and its end
CONTEXT = 160  # a line longer than this is shown around the caret only


def _excerpt(line: str, s: Span) -> str:
    """The offending line, a caret under the offending text. A long line is shown around the caret
    only (a thousand errors on one long line stay a thousand short excerpts); a tab before the
    caret stays a tab under it, so the caret lines up however wide the terminal draws tabs."""
    width = (s.end_col - s.col) if s.end_line == s.line and s.end_col > s.col else 1
    width = min(width, CONTEXT)  # a string of 90 KB: its start is underlined
    start, end = 0, len(line)
    if len(line) > CONTEXT:
        start = max(0, s.col - 1 - CONTEXT // 2)
        end = min(len(line), s.col - 1 + max(width, 1) + CONTEXT // 2)
    shown = line[start:end]
    col = s.col - 1 - start  # the caret's place in what is shown
    head, tail = ("..." if start else ""), ("..." if end < len(line) else "")
    text = redact(head + shown + tail)  # a target line may hold a password
    if len(text) != len(head + shown + tail):  # the password hidden: carets past it would drift
        col = min(col, max(0, len(text) - len(tail) - 1 - len(head)))
        shown = text[len(head):len(text) - len(tail)]
    width = max(1, min(width, len(shown) - col))
    # placed on the line as the terminal shows it: a control character written as its escape (\x1b,
    # four columns), a wide (CJK) character two columns, a zero-width one none
    before, under = printable(head + shown[:col]), printable(shown[col:col + width])
    pad = "".join("\t" if ch == "\t" else " " * _columns(ch) for ch in before)
    carets = "^" * max(1, sum(_columns(ch) for ch in under))
    return f"  {s.line:>4} | {printable(text)}\n       | {pad}{carets}"


def _columns(ch: str) -> int:
    """The columns a terminal gives a character."""
    if unicodedata.combining(ch) or unicodedata.category(ch) in ("Mn", "Me", "Cf"):
        return 0
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


MAX_SHOWN = 50  # diagnostics printed of one file; the rest counted


class BenchError(Exception):
    """Base of every error bench-dsl reports to a person; carries the exit status."""

    exit_code: ExitCode = ExitCode.FAILURE


class ScenarioError(BenchError):
    """The .bench file cannot be run as written; carries every diagnostic found."""

    exit_code = ExitCode.BAD_SCENARIO

    def __init__(self, diagnostics: list[Diagnostic], source: str | None,
                 others: Mapping[str, str] | None = None) -> None:
        self.diagnostics = diagnostics
        self.source = source
        self.others = dict(others or {})  # the texts of spans in no file, by their name: "-D rows" -> its value
        super().__init__()

    def __str__(self) -> str:  # rendered when shown, once: not on raising (a long file's excerpts cost)
        return self.render()

    def render(self) -> str:
        shown = [d.render(self.others.get(d.span.file, self.source) if d.span else self.source)
                 for d in self.diagnostics[:MAX_SHOWN]]
        rest = len(self.diagnostics) - MAX_SHOWN
        if rest > 0:
            shown.append(f"... and {rest} more error{'s' if rest > 1 else ''} (fix these first)")
        return "\n".join(shown)


class UsageError(BenchError):
    exit_code = ExitCode.BAD_SCENARIO


class TargetError(BenchError):
    """The server could not be reached, started, or was lost."""

    exit_code = ExitCode.TARGET_FAILED


_PY_TYPE = re.compile(r"'(\w+)' object")
_JSON_WORDS = {"int": "a number", "float": "a number", "str": "a string", "NoneType": "null", "list": "a list",
               "dict": "an object", "bool": "true or false"}


def error_reason(exc: BaseException) -> str:
    """An error as a person reads it, never as Python names it: a driver's or the system's
    `(code) message`, an HTTP status, urllib's cause without its `<urlopen error ...>` wrapping."""
    args: tuple[object, ...] = tuple(getattr(exc, "args", ()))
    if len(args) >= 2 and isinstance(args[0], int):
        return f"({args[0]}) {args[1]}"
    code, reason = getattr(exc, "code", None), getattr(exc, "reason", None)
    if isinstance(code, int) and isinstance(reason, str):  # urllib's HTTPError
        return f"HTTP {code} {reason}"
    if isinstance(reason, BaseException):  # urllib's URLError around the socket's error
        return error_reason(reason)
    if isinstance(reason, str) and reason:
        return reason
    if isinstance(exc, KeyError) and len(args) == 1 and isinstance(args[0], str):  # a document's missing part
        return f"no {args[0]!r}" if " " not in args[0] else args[0]
    if isinstance(exc, (TypeError, AttributeError)):  # a document's part of another kind: in JSON's words
        return _PY_TYPE.sub(lambda m: _JSON_WORDS.get(m.group(1), "a value"), str(exc))
    # an error that says nothing (a bare TimeoutError): its name in words, not Python's spelling
    return str(exc) or re.sub(r"(?<=[a-z])(?=[A-Z])", " ", type(exc).__name__).lower()
