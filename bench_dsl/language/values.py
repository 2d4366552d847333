"""Values as the validator reads them: numbers with their units, env() and $names (`let`),
durations, counts, server settings and generators, each checked where it is used and reported with
where it came from. Checker also collects the diagnostics of one file; every part of validation
(bench_dsl/language/validate.py and each workload's plugin) reports through it."""

from __future__ import annotations

import difflib
import functools
import math
import re
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from typing import Self, TypeVar

from bench_dsl.core.dsn import redact
from bench_dsl.core.errors import Diagnostic, Span, line_starts
from bench_dsl.core.numbers import num
from bench_dsl.language import model as m
from bench_dsl.language import syntax as ast
from bench_dsl.language.generators import GENERATORS
from bench_dsl.language.metric_decls import CORE_TABLE, Table

TIME_UNITS = {"us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
SIZE_UNITS = {"K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4}


# Bounds that keep what `bench check` accepts plannable and runnable (a plan of 10^20 users would
# only fail later, out of memory): documented in docs/language.md.
MAX_USERS = 100_000
MAX_COUNT = 10**12  # rows, tables, warehouses
MAX_SECONDS = 30 * 86400  # any duration, and a whole run
MIN_SECONDS = 0.001  # any duration but 0 (a settle, a warmup): shorter is a slip of the unit
MAX_NUMBER = 2**53 - 1  # any other number: beyond it a float no longer holds every whole number


@dataclass(frozen=True, slots=True)
class Quantity:
    value: float
    unit: str | None  # None: a bare number
    span: Span
    origin: str = ""  # " (the environment variable N holds '1')": said by every message about it


class EnvText(str):
    """The text of an environment variable: a string, read as a number where one is expected.

    It keeps the variable's name so that text that is not a number can be reported as such.
    """

    variable: str
    span: Span

    def __new__(cls, text: str, variable: str, span: Span) -> Self:
        obj = super().__new__(cls, text)
        obj.variable = variable
        obj.span = span
        return obj


Value = Quantity | str | bool | ast.Call | None

@functools.cache
def _env_quantity(words: tuple[str, ...]) -> re.Pattern[str]:
    # the unit words after a space: users, and the throughputs' own (metric_decls.Table.throughput_units)
    return re.compile(r"\s*(-?[0-9]+(?:\.[0-9]+)?)"
                      r"(?:(us|ms|s|m|h|%|K|M|G|T|x|kW|W)|[ \t]+(" + "|".join(map(re.escape, ("users", "user", *words)))
                      + r"))?\s*")


def env_quantity(v: EnvText, metrics: Table = CORE_TABLE) -> Quantity | None:
    """"16", "250ms", "16 users", "100 tps": the same values as in a file; None for anything else."""
    mt = _env_quantity(tuple(metrics.throughput_units())).fullmatch(v)
    if mt is None:
        return None
    unit = mt.group(2) or mt.group(3)
    return Quantity(float(mt.group(1)), "users" if unit == "user" else unit, v.span,
                    f" (the environment variable {v.variable} holds {str(v)!r})")


class Checker:
    """One file's validation: its diagnostics, its environment and its `let` values."""

    def __init__(self, file: str, text: str, env: Mapping[str, str], metrics: Table = CORE_TABLE) -> None:
        self.file = file
        self.text = text
        self.env = env
        self.metrics = metrics  # what a condition can name: CORE and the workload kinds' own
        self.diags: list[Diagnostic] = []
        self.lets: dict[str, Value] = {}
        self.unset_lets: dict[str, str] = {}  # let name -> the unset variable of its env() without default
        self.others: dict[str, str] = {}  # the texts of values given with -D, by their spans' name ("-D rows")
        self.declared: set[str] = set()  # every let of the file, also those not read yet
        self.error_count = 0  # errors said so far: a part asks whether it added any without copying them all
        self.places: list[Place] | None = None  # a file's own check records them (configurations.Parts)

    def error(self, message: str, span: Span | None, hint: str | None = None) -> None:
        self.diags.append(Diagnostic(message, span, hint))
        self.error_count += 1

    def wrong(self, v: Quantity, message: str, hint: str | None = None) -> None:
        """An error about a value, saying where it came from when that was the environment."""
        self.error(message + v.origin, v.span, hint)

    def warning(self, message: str, span: Span | None, hint: str | None = None) -> None:
        self.diags.append(Diagnostic(message, span, hint, severity="warning"))

    def errors(self) -> list[Diagnostic]:
        # a value read twice (a $name used by two checks) is reported once
        return list(dict.fromkeys(d for d in self.diags if d.severity == "error"))

    def source(self, span: Span | None) -> str:
        """The text of the file (or of a -D value) that `span` covers, as written."""
        text = self.others.get(span.file, self.text) if span is not None else self.text
        return text[offset(text, span):offset_end(text, span)]

    def place(self, key: Hashable, exprs: tuple[ast.Expr | None, ...], check: Callable[[Checker], _T]) -> _T:
        """`check(self)`, a check whose every outcome (said nothing, or said something) rests on `key`
        and the values of `exprs` alone, never on the entry's name or place, and whose result is
        read into the model only: a study's configuration then checks each distinct value once
        for all the places of the same key (1,500 `weight $u` over 1,000 values: 1.5 million checks)."""
        if self.places is None:
            return check(self)
        before = len(self.diags)
        got = check(self)
        self.places.append(Place(key, exprs, check, len(self.diags) == before))
        return got

    # values ------------------------------------------------------------------------------------
    def value(self, e: ast.Expr) -> Value:
        match e:
            case ast.Num(value=v, span=s):
                return Quantity(float(v), None, s)
            case ast.Qty(value=v, unit=u, span=s):
                return Quantity(v, u, s)
            case ast.Str(value=v):
                return v
            case ast.Word(name=n):
                return n
            case ast.Var(name=n, span=s):
                if n not in self.lets:
                    close = difflib.get_close_matches(n, list(self.lets), n=1)
                    hint = (f"let {n} is declared further down: declare it before its use" if n in self.declared
                            else f"did you mean ${close[0]}?" if close else f"declare it first: let {n} = ...")
                    self.error(f"${n} is not defined", s, hint)
                    return None
                held = self.lets[n]
                # point errors at the use, not the let
                if isinstance(held, Quantity):
                    return Quantity(held.value, held.unit, s, held.origin)
                if isinstance(held, EnvText):
                    return EnvText(held, held.variable, s)
                return held
            case ast.WithUnit(inner=inner, unit=u, span=s):
                number = self.value(inner)
                if number is None:
                    return None
                if isinstance(number, EnvText):
                    number = self.from_env(number, f"'{u}'", "a number", f"{number.variable}=16")
                    if number is None:
                        return None
                if not isinstance(number, Quantity) or number.unit is not None:
                    self.error(f"'{u}' must follow a plain number", s, f"8 {u}")
                    return None
                return Quantity(number.value, "users" if u == "user" else u, s)
            case ast.Call(name="env", args=args, span=s):
                if args and isinstance(args[0], ast.Word):
                    written = ", ".join([f'"{args[0].name}"', *(self.source(a.span) for a in args[1:])])
                    self.error("the name of an environment variable is written in double quotes", args[0].span,
                               f"env({written})")
                    return None
                if not 1 <= len(args) <= 2 or not isinstance(args[0], ast.Str) or isinstance(args[-1], ast.Call):
                    self.error("env() takes a variable name in double quotes and an optional default", s,
                               'env("BENCH_DSN", "mysql://root@127.0.0.1:3306/bench") or env("USERS", 8)')
                    return None
                name = args[0].value
                if name in self.env:
                    return EnvText(self.env[name], name, s)
                return self.value(args[1]) if len(args) == 2 else None
            case ast.Call():
                return e
        raise AssertionError(e)

    def from_env(self, v: EnvText, what: str, expected: str, example: str) -> Quantity | None:
        """The number an environment variable holds, or an error that says what it held."""
        q = env_quantity(v, self.metrics)
        if q is None:
            self.error(f"{what}: the environment variable {v.variable} holds {redact(str(v))!r}, not {expected}",
                       v.span, f"set it to {expected}, e.g. {example}")
        return q

    def numeric(self, e: ast.Expr, what: str, expected: str = "a number", example: str = "16") -> Value:
        """The value of e, with the text of an env() read as a number."""
        v = self.value(e)
        if isinstance(v, EnvText):
            return self.from_env(v, what, expected, f"{v.variable}={example}")
        if v is None and (variable := self.unset_env(e)) is not None:
            self.error(f"{what}: the environment variable {variable} is not set and there is no default",
                       span_of(e), f'give a default: env("{variable}", {example})')
        return v

    def unset_env(self, e: ast.Expr) -> str | None:
        """The variable of an env() without a default that is not set, used directly or through a let."""
        if isinstance(e, ast.Call) and e.name == "env" and len(e.args) == 1 and isinstance(e.args[0], ast.Str):
            return e.args[0].value if e.args[0].value not in self.env else None
        if isinstance(e, ast.Var):
            return self.unset_lets.get(e.name)
        return None

    def number(self, e: ast.Expr | None, what: str, *, integer: bool = False, minimum: float | None = None,
               maximum: float | None = None, allow_units: tuple[str, ...] = ()) -> float | None:
        if e is None:
            return None
        v = self.numeric(e, what)
        if v is None:
            return None
        if not isinstance(v, Quantity) or (v.unit is not None and v.unit not in allow_units):
            self.error(f"{what} must be a number, not {shown(v)}" + getattr(v, "origin", ""), span_of(e),
                       f"a plain number{' (or with ' + ', '.join(allow_units) + ')' if allow_units else ''}: "
                       f"{what} 16" if " " not in what else "a plain number, e.g. 16")
            return None
        return self.bounded(v, v.value, what, integer=integer, minimum=minimum, maximum=maximum)

    def bounded(self, v: Quantity, value: float, what: str, *, integer: bool = False, minimum: float | None = None,
                maximum: float | None = None, shown_as: str = "") -> float | None:
        """`value` (what `v` stands for, in its unit) within its bounds, or None with a diagnostic."""
        if value < -MAX_NUMBER:  # -10^400 from the environment: below any bound, never "too large"
            least = minimum if minimum is not None else -MAX_NUMBER
            self.wrong(v, f"{what} must be at least {num(least)}{shown_as}", f"write {num(least)} or more")
            return None
        if not math.isfinite(value) or (maximum is None and abs(value) > MAX_NUMBER):
            self.wrong(v, f"{what} is too large", f"at most {num(maximum if maximum is not None else MAX_NUMBER)}"
                       f"{shown_as}")
            return None
        if integer and not float(value).is_integer():
            near = round(value)  # the whole number nearest, within the bounds: never "e.g. 0" where 1 is the least
            near = max(near, math.ceil(minimum)) if minimum is not None else near
            near = min(near, math.floor(maximum)) if maximum is not None else near
            self.wrong(v, f"{what} must be a whole number", f"e.g. {num(near)}")
            return None
        if minimum is not None and value < minimum:
            self.wrong(v, f"{what} must be at least {num(minimum)}{shown_as}", f"write {num(minimum)} or more")
            return None
        if maximum is not None and value > maximum:
            self.wrong(v, f"{what} must be at most {num(maximum)}{shown_as}",
                       f"write {num(maximum)} or less: bench-dsl plans no run larger than that")
            return None
        return value

    def users(self, e: ast.Expr | None, what: str, minimum: int = 1) -> int | None:
        v = self.number(e, what, integer=True, minimum=minimum, maximum=MAX_USERS, allow_units=("users",))
        return int(v) if v is not None else None

    def count(self, e: ast.Expr | None, what: str, minimum: float = 1, integer: bool = True) -> int | float | None:
        """A row or table count; K and M multiply by a thousand and a million (100K rows)."""
        if e is None:
            return None
        v = self.numeric(e, what)
        if isinstance(v, Quantity) and v.unit in ("K", "M"):
            n = v.value * (1000 if v.unit == "K" else 1_000_000)
            checked = self.bounded(v, n, what, integer=True, minimum=minimum, maximum=MAX_COUNT)
            return int(checked) if checked is not None else None
        n2 = self.number(e, what, integer=integer, minimum=minimum, maximum=MAX_COUNT)
        if n2 is None:
            return None
        return int(n2) if float(n2).is_integer() else n2

    def duration(self, e: ast.Expr | None, what: str, *, allow_zero: bool = False) -> float | None:
        if e is None:
            return None
        v = self.numeric(e, what, "a duration", "60s")
        if v is None:
            return None
        if not isinstance(v, Quantity) or v.unit not in TIME_UNITS:
            self.error(f"{what} must be a duration" + getattr(v, "origin", ""), span_of(e),
                       "write a unit against the number: 500ms, 10s, 2m, 1h")
            return None
        secs = v.value * TIME_UNITS[v.unit]
        if secs < 0 or (secs == 0 and not allow_zero):
            self.wrong(v, f"{what} must be longer than 0", "e.g. 500ms, 10s, 2m")
            return None
        if 0 < secs < MIN_SECONDS:  # 1e-320s was planned as a second: no phase is that short
            self.wrong(v, f"{what} must be at least 1ms", "e.g. 500ms, 10s, 2m (phases last whole seconds)")
            return None
        if not math.isfinite(secs) or secs > MAX_SECONDS:
            self.wrong(v, f"{what} is too long", f"at most {MAX_SECONDS // 86400} days ({MAX_SECONDS // 3600}h)")
            return None
        return secs

    def scalar(self, e: ast.Expr) -> int | float | str | None:
        """A setting value: 256M -> bytes, on/off -> ON/OFF, words and strings as written."""
        v = self.value(e)
        if isinstance(v, EnvText):
            v = env_quantity(v, self.metrics) or v  # a setting may be a string: text that is no number stays text
        if isinstance(v, Quantity):
            n = v.value * (SIZE_UNITS.get(v.unit, 1) if v.unit else 1) * TIME_UNITS.get(v.unit or "", 1)
            if not math.isfinite(n):  # 10^300 T, or an environment variable of 400 digits: no integer
                self.wrong(v, "the value is too large a number",
                           "a server setting's number is at most 18446744073709551615 (2^64 - 1)")
                return None
            if v.unit in SIZE_UNITS or (v.unit is None and n.is_integer()):
                # a float holds 2^64 - 1 as 2^64, one more than a server variable does; larger ones are refused
                return 2**64 - 1 if n == 2.0**64 else int(n)
            return n
        if isinstance(v, str):
            return v.upper() if v.lower() in ("on", "off", "true", "false") else v
        if isinstance(v, ast.Call):
            self.error(f"{v.name}() cannot be used here", v.span, "a number, a size (256M), a word or a \"string\"")
        return None

    def generator(self, e: ast.Expr, where: str) -> m.Generator | int | float | str | None:
        v = self.value(e)
        if isinstance(v, EnvText):
            v = env_quantity(v, self.metrics) or v  # a constant may be a string
        if v is None and (variable := self.unset_env(e)) is not None:
            self.error(f"the environment variable {variable} is not set and there is no default", span_of(e),
                       f'give a default: env("{variable}", 1)')
        if isinstance(v, Quantity):
            if v.unit is not None:
                self.error(f"a {where} value is a plain number, string or generator", v.span,
                           "42, \"text\" or a generator such as uniform(1, 1000)")
                return None
            return int(v.value) if v.value.is_integer() else v.value
        if isinstance(v, str):
            return v
        if isinstance(v, ast.Call):
            kind = GENERATORS.get(v.name)
            if kind is None:
                close = difflib.get_close_matches(v.name, list(GENERATORS), n=1)
                self.error(f"unknown generator {v.name}()", name_span(v.span, v.name),
                           f"did you mean {GENERATORS[close[0]].signature}?" if close
                           else "generators: " + ", ".join(k.signature for k in GENERATORS.values()))
                return None
            if len(v.args) < kind.min_args or (kind.max_args is not None and len(v.args) > kind.max_args):
                self.error(f"{v.name}() takes {kind.arity()}", v.span, f"write {kind.signature}")
                return None
            args: list[int | float | str] = []
            for a in v.args:
                av = self.value(a) if kind.text_arguments else self.numeric(a, f"{v.name}()")
                if av is None:
                    return None  # already reported: an undefined $name or an env() that holds no number
                if isinstance(av, Quantity) and av.unit is None:
                    args.append(int(av.value) if av.value.is_integer() else av.value)
                elif isinstance(av, str) and kind.text_arguments:
                    args.append(av)
                else:
                    self.error(f"arguments of {v.name}() are plain numbers", span_of(a), f"write {kind.signature}")
                    return None
            if (problem := kind.problem(tuple(args))) is not None:
                self.error(f"{v.name}(): {problem}", v.span, f"write {kind.signature}")
                return None
            return m.Generator(v.name, tuple(args), v.span)
        return None


_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class Place:
    key: Hashable
    exprs: tuple[ast.Expr | None, ...]
    check: Callable[[Checker], object]
    quiet: bool  # said nothing in the file's own check


def shown(v: Value) -> str:
    """How a value that has the wrong type is named in a message."""
    if isinstance(v, Quantity):
        return f"a number with the unit '{v.unit}'"
    if isinstance(v, ast.Call):
        return f"{v.name}()"
    return repr(redact(str(v)))


def span_of(e: object) -> Span | None:
    return getattr(e, "span", None)


def name_span(span: Span, name: str) -> Span:
    """The name that starts an entry (`tabels = 2`, `neworder 45%`): where a caret should point."""
    return Span(span.file, span.line, span.col, span.line, span.col + len(name))


def plain(v: Value) -> object:
    """A value as the scenario's parameters and resolved conditions show it: 16, "250ms", "8 users"."""
    if isinstance(v, Quantity):
        n = int(v.value) if v.value.is_integer() else v.value
        if v.unit is None:
            return n
        attached = v.unit in TIME_UNITS or v.unit in SIZE_UNITS or v.unit in ("%", "x", "W", "kW")  # 10s, but 8 users
        return f"{num(v.value)}{'' if attached else ' '}{v.unit}"
    if isinstance(v, ast.Call):
        return f"{v.name}(...)"
    if isinstance(v, EnvText):
        q = env_quantity(v)
        return plain(q) if q is not None and q.unit is None else str(v)
    return v


def offset(text: str, span: Span | None) -> int:
    """Where `span` starts in `text`, counted in characters."""
    if span is None:
        return 0
    starts = line_starts(text)
    return starts[min(span.line, len(starts)) - 1] + span.col - 1


def offset_end(text: str, span: Span | None) -> int:
    """Where `span` ends in `text` (exclusive), counted in characters."""
    if span is None:
        return 0
    starts = line_starts(text)
    return starts[min(span.end_line, len(starts)) - 1] + span.end_col - 1
