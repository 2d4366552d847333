"""One base error, the exit statuses, and diagnostics that point into a .bench file."""

from __future__ import annotations

import enum
from dataclasses import dataclass

from bench_dsl.dsn import redact


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
        if self.span is None:
            out = f"{self.severity}: {message}"
        else:
            s = self.span
            out = f"{s.file}:{s.line}:{s.col}: {self.severity}: {message}"
            if source is not None:
                lines = source.splitlines()
                if 1 <= s.line <= len(lines):
                    text = redact(lines[s.line - 1])  # a target line may hold a password
                    width = (s.end_col - s.col) if s.end_line == s.line and s.end_col > s.col else 1
                    width = max(1, min(width, len(text) - s.col + 1))
                    out += f"\n  {s.line:>4} | {text}\n       | {' ' * (s.col - 1)}{'^' * width}"
        if self.hint:
            out += f"\n  hint: {self.hint}"
        return out


class BenchError(Exception):
    """Base of every error bench-dsl reports to a person; carries the exit status."""

    exit_code: ExitCode = ExitCode.FAILURE


class ScenarioError(BenchError):
    """The .bench file cannot be run as written; carries every diagnostic found."""

    exit_code = ExitCode.BAD_SCENARIO

    def __init__(self, diagnostics: list[Diagnostic], source: str | None) -> None:
        self.diagnostics = diagnostics
        self.source = source
        super().__init__(self.render())

    def render(self) -> str:
        return "\n".join(d.render(self.source) for d in self.diagnostics)


class UsageError(BenchError):
    exit_code = ExitCode.BAD_SCENARIO


class TargetError(BenchError):
    """The server could not be reached, started, or was lost."""

    exit_code = ExitCode.TARGET_FAILED
