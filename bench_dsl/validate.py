"""Syntax tree -> typed Scenario. Collects every diagnostic before giving up."""

from __future__ import annotations

import difflib
import os
import random
import re
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Self

from bench_dsl import model as m
from bench_dsl import syntax as ast
from bench_dsl.dsn import parse_dsn, redact
from bench_dsl.errors import Diagnostic, ScenarioError, Span
from bench_dsl.generators import GENERATORS
from bench_dsl.parser import parse, parse_expr

TIME_UNITS = {"us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
SIZE_UNITS = {"K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4}

RETRYABLE = {"deadlock": 1213, "lock_wait_timeout": 1205, "lock_wait": 1205}

_RATE_METRICS = {"tps", "tpm", "qps", "nopm"}
_METRICS = ["p50", "p90", "p95", "p99", "p99.9", "avg", "max", "min", "tps", "tpm", "qps", "nopm",
            "error_rate", "cpu", "saturation"]
_CPU_SOURCES = ("server", "host", "client")


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

_ENV_QUANTITY = re.compile(r"\s*(-?[0-9]+(?:\.[0-9]+)?)(?:(us|ms|s|m|h|%|K|M|G|T|x)|[ \t]+(users|user|tps|tpm|qps|nopm))?\s*")


def _env_quantity(v: EnvText) -> Quantity | None:
    """"16", "250ms", "16 users": the same values as in a file; None for anything else."""
    mt = _ENV_QUANTITY.fullmatch(v)
    if mt is None:
        return None
    unit = mt.group(2) or mt.group(3)
    return Quantity(float(mt.group(1)), "users" if unit == "user" else unit, v.span,
                    f" (the environment variable {v.variable} holds {str(v)!r})")


class _Checker:
    def __init__(self, file: str, text: str, env: Mapping[str, str]) -> None:
        self.file = file
        self.text = text
        self.env = env
        self.diags: list[Diagnostic] = []
        self.lets: dict[str, Value] = {}
        self.unset_lets: dict[str, str] = {}  # let name -> the unset variable of its env() without default

    def error(self, message: str, span: Span | None, hint: str | None = None) -> None:
        self.diags.append(Diagnostic(message, span, hint))

    def wrong(self, v: Quantity, message: str, hint: str | None = None) -> None:
        """An error about a value, saying where it came from when that was the environment."""
        self.error(message + v.origin, v.span, hint)

    def warning(self, message: str, span: Span | None, hint: str | None = None) -> None:
        self.diags.append(Diagnostic(message, span, hint, severity="warning"))

    def errors(self) -> list[Diagnostic]:
        return [d for d in self.diags if d.severity == "error"]

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
                    hint = f"did you mean ${close[0]}?" if close else f"declare it first: let {n} = ..."
                    self.error(f"${n} is not defined", s, hint)
                    return None
                v = self.lets[n]
                # point errors at the use, not the let
                if isinstance(v, Quantity):
                    return Quantity(v.value, v.unit, s, v.origin)
                if isinstance(v, EnvText):
                    return EnvText(v, v.variable, s)
                return v
            case ast.WithUnit(inner=inner, unit=u, span=s):
                v = self.value(inner)
                if v is None:
                    return None
                if isinstance(v, EnvText):
                    v = self.from_env(v, f"'{u}'", "a number", f"{v.variable}=16")
                    if v is None:
                        return None
                if not isinstance(v, Quantity) or v.unit is not None:
                    self.error(f"'{u}' must follow a plain number", s)
                    return None
                return Quantity(v.value, "users" if u == "user" else u, s)
            case ast.Call(name="env", args=args, span=s):
                if args and isinstance(args[0], ast.Word):
                    shown = ", ".join([f'"{args[0].name}"', *(self.text[_offset(self.text, a.span):
                                                                   _offset_end(self.text, a.span)] for a in args[1:])])
                    self.error("the name of an environment variable is written in double quotes", args[0].span,
                               f"env({shown})")
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
        q = _env_quantity(v)
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
                       _span_of(e), f'give a default: env("{variable}", {example})')
        return v

    def unset_env(self, e: ast.Expr) -> str | None:
        """The variable of an env() without a default that is not set, used directly or through a let."""
        if isinstance(e, ast.Call) and e.name == "env" and len(e.args) == 1 and isinstance(e.args[0], ast.Str):
            return e.args[0].value if e.args[0].value not in self.env else None
        if isinstance(e, ast.Var):
            return self.unset_lets.get(e.name)
        return None

    def number(self, e: ast.Expr | None, what: str, *, integer: bool = False, minimum: float | None = None,
               allow_units: tuple[str, ...] = ()) -> float | None:
        if e is None:
            return None
        v = self.numeric(e, what)
        if v is None:
            return None
        if not isinstance(v, Quantity) or (v.unit is not None and v.unit not in allow_units):
            self.error(f"{what} must be a number, not {_shown(v)}" + getattr(v, "origin", ""), _span_of(e))
            return None
        if integer and not float(v.value).is_integer():
            self.wrong(v, f"{what} must be a whole number")
            return None
        if minimum is not None and v.value < minimum:
            self.wrong(v, f"{what} must be at least {_num(minimum)}")
            return None
        return v.value

    def users(self, e: ast.Expr | None, what: str, minimum: int = 1) -> int | None:
        v = self.number(e, what, integer=True, minimum=minimum, allow_units=("users",))
        return int(v) if v is not None else None

    def count(self, e: ast.Expr | None, what: str, minimum: float = 1, integer: bool = True) -> int | float | None:
        """A row or table count; K and M multiply by a thousand and a million (100K rows)."""
        if e is None:
            return None
        v = self.numeric(e, what)
        if isinstance(v, Quantity) and v.unit in ("K", "M"):
            n = v.value * (1000 if v.unit == "K" else 1_000_000)
            return int(n)
        n2 = self.number(e, what, integer=integer, minimum=minimum)
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
            self.error(f"{what} must be a duration" + getattr(v, "origin", ""), _span_of(e),
                       "write a unit against the number: 500ms, 10s, 2m, 1h")
            return None
        secs = v.value * TIME_UNITS[v.unit]
        if secs < 0 or (secs == 0 and not allow_zero):
            self.wrong(v, f"{what} must be longer than 0")
            return None
        return secs

    def scalar(self, e: ast.Expr) -> int | float | str | None:
        """A setting value: 256M -> bytes, on/off -> ON/OFF, words and strings as written."""
        v = self.value(e)
        if isinstance(v, EnvText):
            v = _env_quantity(v) or v  # a setting may be a string: text that is no number stays text
        if isinstance(v, Quantity):
            if v.unit is None:
                return int(v.value) if v.value.is_integer() else v.value
            if v.unit in SIZE_UNITS:
                return int(v.value * SIZE_UNITS[v.unit])
            if v.unit in TIME_UNITS:
                return v.value * TIME_UNITS[v.unit]
            if v.unit == "%":
                return v.value
            return v.value
        if isinstance(v, str):
            return v.upper() if v.lower() in ("on", "off", "true", "false") else v
        if isinstance(v, ast.Call):
            self.error(f"{v.name}() cannot be used here", v.span)
        return None

    def generator(self, e: ast.Expr, where: str) -> m.Generator | int | float | str | None:
        v = self.value(e)
        if isinstance(v, EnvText):
            v = _env_quantity(v) or v  # a constant may be a string
        if v is None and (variable := self.unset_env(e)) is not None:
            self.error(f"the environment variable {variable} is not set and there is no default", _span_of(e),
                       f'give a default: env("{variable}", 1)')
        if isinstance(v, Quantity):
            if v.unit is not None:
                self.error(f"a {where} value is a plain number, string or generator", v.span)
                return None
            return int(v.value) if v.value.is_integer() else v.value
        if isinstance(v, str):
            return v
        if isinstance(v, ast.Call):
            kind = GENERATORS.get(v.name)
            if kind is None:
                close = difflib.get_close_matches(v.name, list(GENERATORS), n=1)
                self.error(f"unknown generator {v.name}()", _name_span(v.span, v.name),
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
                    self.error(f"arguments of {v.name}() are plain numbers", _span_of(a), f"write {kind.signature}")
                    return None
            if (problem := kind.problem(tuple(args))) is not None:
                self.error(f"{v.name}(): {problem}", v.span)
                return None
            return m.Generator(v.name, tuple(args), v.span)
        return None


_TARGET_EXAMPLE = 'target "mysql://user:password@host:3306/database"'


def _target(c: _Checker, t: ast.Item) -> tuple[str | None, str | None]:
    """The server address, and where it came from ("env BENCH_DSN") for messages."""
    e = t.value
    target_from = None
    if isinstance(e, ast.Call) and e.name == "env" and e.args and isinstance(e.args[0], ast.Str):
        target_from = f"env {e.args[0].value}"
    v = c.value(e)
    if v is None:
        return None, target_from  # env() unset and no default: the embedded throwaway server
    span = _span_of(e)
    if isinstance(e, ast.Word):
        c.error("target is an address in double quotes", span, _TARGET_EXAMPLE)
        return None, target_from
    if not isinstance(v, str):
        c.error("target must be a mysql:// address", span, _TARGET_EXAMPLE + " (or leave it out for a throwaway server)")
        return None, target_from
    held = f"the environment variable {v.variable} holds " if isinstance(v, EnvText) else ""
    scheme = re.match(r"([A-Za-z][A-Za-z0-9+.-]*)://", v)
    hint = "bench-dsl runs against MySQL and MariaDB: " + _TARGET_EXAMPLE + ", or no target for a throwaway server"
    if scheme is None:
        shown = redact(v)
        c.error(f"target: {held}{shown!r}, not a mysql:// address" if held
                else f"target: {shown!r} is not a mysql:// address", span, hint)
        return None, target_from
    if scheme.group(1).lower() not in ("mysql", "mariadb"):
        c.error(f"target: {held}a {scheme.group(1)}:// address; only mysql:// and mariadb:// are supported", span, hint)
        return None, target_from
    try:
        parse_dsn(v)
    except ValueError as exc:  # a port that is not a number, out of range ...
        what = f"{held}{redact(v)!r}, which is" if held else f"{redact(v)!r} is"
        c.error(f"target: {what} not a valid address: {exc}", span, _TARGET_EXAMPLE)
        return None, target_from
    return v, target_from


def _shown(v: Value) -> str:
    """How a value that has the wrong type is named in a message."""
    if isinstance(v, Quantity):
        return f"a number with the unit '{v.unit}'"
    if isinstance(v, ast.Call):
        return f"{v.name}()"
    return repr(redact(str(v)))


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else str(x)


def _span_of(e: object) -> Span | None:
    return getattr(e, "span", None)


def _name_span(span: Span, name: str) -> Span:
    """The name that starts an entry (`tabels = 2`, `neworder 45%`): where a caret should point."""
    return Span(span.file, span.line, span.col, span.line, span.col + len(name))


_PARAM = re.compile(r"""('(?:[^'\\]|\\.|'')*'|"(?:[^"\\]|\\.)*"|`[^`]*`|--[^\n]*|/\*.*?\*/)|(?<![:\w]):([A-Za-z_]\w*)""",
                    re.DOTALL)


def _inside_string(text: str, span: Span | None, index: int, length: int) -> Span | None:
    """Where the characters index..index+length of a string's value are in the file."""
    if span is None:
        return None
    start = _offset(text, span)
    raw = text[start:_offset_end(text, span)]
    if raw.startswith('"""'):
        pos = 3 + index  # a """ string has no escapes: the value is the text
    else:
        pos = 1
        for _ in range(index):
            pos += 2 if raw[pos] == "\\" else 1  # an escape is two characters in the file, one in the value
    at = start + pos
    line = text.count("\n", 0, at) + 1
    col = at - text.rfind("\n", 0, at)
    return Span(span.file, line, col, line, col + length)


def native_sql(sql: str) -> tuple[str, tuple[str, ...]]:
    """`:name` parameters -> `?` placeholders (outside quotes and comments), in order of use."""
    names: list[str] = []

    def repl(mt: re.Match[str]) -> str:
        if mt.group(1) is not None:
            return mt.group(1)
        names.append(mt.group(2))
        return "?"

    return _PARAM.sub(repl, sql), tuple(names)


# ----------------------------------------------------------------------------------------------


def load(path: str | Path, defines: Mapping[str, str] | None = None, env: Mapping[str, str] | None = None,
         text: str | None = None) -> m.Scenario:
    """Read, parse and validate a .bench file. Raises ScenarioError with every diagnostic."""
    path = str(path)
    if text is None:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise ScenarioError([Diagnostic(f"cannot read {path}: {exc.strerror}", None)], None) from None
    tree = parse(text, path)
    return check(tree, defines or {}, os.environ if env is None else env)


def check(tree: ast.FileNode, defines: Mapping[str, str], env: Mapping[str, str]) -> m.Scenario:
    c = _Checker(tree.file, tree.text, env)

    # let, with -D overrides ---------------------------------------------------------------------
    declared = {let.name for let in tree.lets}
    for name in defines:
        if name not in declared:
            close = difflib.get_close_matches(name, list(declared), n=1)
            c.error(f"-D {name}: the file declares no 'let {name}'",
                    None, f"did you mean -D {close[0]}=...?" if close else
                    ("declared: " + ", ".join(sorted(declared)) if declared else "add: let " + name + " = ..."))
    params: dict[str, object] = {}
    for let in tree.lets:
        if let.name in c.lets:
            c.error(f"{let.name} is declared twice", let.span)
        expr = let.value
        if let.name in defines:
            try:
                expr = parse_expr(defines[let.name], f"-D {let.name}")
            except ScenarioError as err:
                # the value is not in the file: quote it in the message instead of pointing into the file
                d = err.diagnostics[0]
                c.error(f"-D {let.name}={defines[let.name]}: {d.message}", None,
                        d.hint or 'quote text values: -D name=\'"text"\'')
                c.lets[let.name] = None  # declared: no follow-on "$name is not defined"
                continue
        v = c.value(expr)
        c.lets[let.name] = v
        if v is None and (variable := c.unset_env(expr)) is not None:
            c.unset_lets[let.name] = variable
        params[let.name] = _plain(v)

    sc = tree.scenario
    items: dict[str, list[object]] = {}
    for it in sc.items:
        key = it.keyword if isinstance(it, (ast.Item, ast.Block)) else type(it).__name__
        if isinstance(it, (ast.RampStep, ast.RampLinear)):
            key = "ramp"
        items.setdefault(key, []).append(it)
    for key, lst in items.items():
        if len(lst) > 1:
            what = {"Workload": "workload", "ramp": "ramp"}.get(key, key)
            for dup in lst[1:]:
                c.error(f"'{what}' is given more than once", _span_of(dup), "keep one")

    def item(key: str) -> ast.Item | None:
        lst = items.get(key)
        return lst[0] if lst else None  # type: ignore[return-value]

    # target -------------------------------------------------------------------------------------
    target: str | None = None
    target_from: str | None = None
    if (t := item("target")) is not None:
        target, target_from = _target(c, t)

    seed_given = False
    seed = random.SystemRandom().randrange(1, 2**31)
    if (s := item("seed")) is not None:
        n = c.number(s.value, "seed", integer=True, minimum=0)
        if n is not None:
            seed, seed_given = int(n), True

    # server settings ------------------------------------------------------------------------------
    settings: list[m.ServerSetting] = []
    for blk in items.get("server", []):
        for st in blk.entries:  # type: ignore[attr-defined]
            val = c.scalar(st.value)
            if val is not None:
                # as written (256M), or the resolved value of a $reference
                text = (str(_plain(c.lets.get(st.value.name))) if isinstance(st.value, ast.Var)
                        else c.text[_offset(c.text, st.value.span):_offset_end(c.text, st.value.span)])
                settings.append(m.ServerSetting(st.name, val, text, st.span))
            elif isinstance(st.value, ast.Call) and st.value.name == "env":
                c.error(f"{st.name}: the environment variable is not set and there is no default", st.value.span,
                        'give a default: env("NAME", "value")')

    # workload -------------------------------------------------------------------------------------
    workload: m.WorkloadSpec | None = None
    wl_nodes = items.get("Workload", [])
    if not wl_nodes:
        c.error("the scenario has no workload", sc.span,
                "add: workload sysbench oltp_read_write { tables = 1  table_size = 10000 }")
    else:
        workload = _workload(c, wl_nodes[0])  # type: ignore[arg-type]
    tx_names = workload.transaction_names if workload else ()
    if workload is None and wl_nodes:  # still check conditions against what the file declares
        node0: ast.Workload = wl_nodes[0]  # type: ignore[assignment]
        if node0.kind == "tpcc":
            tx_names = m.TPCC_TRANSACTIONS
        elif node0.kind == "sysbench":
            # a misspelt test: judge the conditions against the test it most likely means, so the
            # typo is reported once, not again as the "transaction" every condition should name
            tx_names = tuple(difflib.get_close_matches(node0.variant or "", m.SYSBENCH_TESTS, n=1)) or m.SYSBENCH_TESTS
        else:
            tx_names = tuple(t.name for t in node0.transactions) or ((node0.variant,) if node0.variant else ())

    workers: int | None = None
    if (wk := item("workers")) is not None:
        if isinstance(wk.value, ast.Word):
            if wk.value.name != "auto":
                c.error(f"workers is auto or a number of processes, not '{wk.value.name}'", wk.value.span,
                        "workers auto (one per core), or workers 4")
        elif (n := c.number(wk.value, "workers", integer=True, minimum=1)) is not None:
            workers = int(n)

    # users and ramp ------------------------------------------------------------------------------
    warmup = 0.0
    if (w := item("warmup")) is not None:
        warmup = c.duration(w.value, "warmup", allow_zero=True) or 0.0
    report_every = 10.0
    if (r := item("report")) is not None:
        rv = c.duration(r.value, "report every")
        if rv is not None:
            if rv < 1 or not float(rv).is_integer():
                c.error("report every must be a whole number of seconds", r.value.span)  # type: ignore[union-attr]
            else:
                report_every = rv
    dur_item = item("duration")
    duration = c.duration(dur_item.value, "duration") if dur_item else None
    ramp: m.Ramp | None = None
    ramp_node = items.get("ramp", [None])[0]
    users_item = item("users")
    if users_item is not None and ramp_node is not None:
        c.error("give either 'users' or a 'ramp', not both", users_item.span)
    elif users_item is not None:
        u = c.users(users_item.value, "users")
        if duration is None and dur_item is None:
            c.error("a run with a fixed number of users needs a duration", users_item.span, "add: duration 60s")
        elif u is not None and duration is not None:
            ramp = m.ConstantRamp(u, duration)
    elif isinstance(ramp_node, ast.RampStep):
        if dur_item is not None:
            c.error("'duration' has no meaning with 'ramp step': each step lasts settle + hold", dur_item.span,
                    "remove it, or set hold")
        ramp = _step_ramp(c, ramp_node)
    elif isinstance(ramp_node, ast.RampLinear):
        a = c.users(ramp_node.start, "ramp from")
        b = c.users(ramp_node.end, "ramp to")
        over = c.duration(ramp_node.over, "ramp over")
        if a is not None and b is not None and over is not None:
            total = duration if duration is not None else over
            if total < over:
                c.error(f"duration ({_num(total)}s) is shorter than the ramp ({_num(over)}s)", dur_item.span if dur_item else None)
            ramp = m.LinearRamp(a, b, over, total)
    else:
        c.error("the scenario does not say how many users to run", sc.span,
                "add 'users 8' with a 'duration', or a 'ramp step { ... }'")

    # conditions ------------------------------------------------------------------------------------
    stop: list[m.Condition] = []
    for blk in items.get("stop", []):
        for node in blk.entries:  # type: ignore[attr-defined]
            cond = _condition(c, node, tx_names, ramp, expect=False)
            if cond is not None:
                stop.append(cond)
    expect: list[m.Condition] = []
    for blk in items.get("expect", []):
        for node in blk.entries:  # type: ignore[attr-defined]
            cond = _condition(c, node, tx_names, ramp, expect=True)
            if cond is not None:
                expect.append(cond)

    output: str | None = None
    if (o := item("output")) is not None:
        ov = c.value(o.value)
        if isinstance(o.value, ast.Word):
            # a bare word would do as a file name, but `output results` most often means a directory
            # and reads like a keyword: a path is always a string
            c.error("output is a path: write it in double quotes", o.value.span, f'output "{o.value.name}"')
        elif ov is None and c.unset_env(o.value) is not None:
            pass  # env() unset and no default: as if no output were given, like a target
        elif not isinstance(ov, str):
            c.error('output must be a "path"', o.value.span, 'output "results/{scenario}-{time}.json"')
        else:
            bad = set(re.findall(r"{([^}]*)}", ov)) - {"scenario", "time", "seed"}
            if bad:
                c.error(f"output: unknown placeholder {{{min(bad)}}}", o.value.span,  # type: ignore[union-attr]
                        "placeholders: {scenario}, {time}, {seed}")
            output = ov

    setup: list[m.Fill | m.SetupSql] = []
    for blk in items.get("setup", []):
        if workload is not None and workload.kind != "custom":
            c.error(f"setup is for custom workloads; {workload.kind} prepares its own data", blk.span)  # type: ignore[attr-defined]
        for node in blk.entries:  # type: ignore[attr-defined]
            if isinstance(node, ast.SetupSql):
                setup.append(m.SetupSql(node.sql, node.span))
            else:
                rows = c.count(node.rows, "fill rows")
                cols = []
                for st in node.columns:
                    g = c.generator(st.value, "fill")
                    if g is not None:
                        cols.append((st.name, g))
                if not node.columns:
                    c.error(f"fill {node.table}: no columns", node.span, "fill t rows 1000 { id = sequence(1) }")
                if rows is not None:
                    setup.append(m.Fill(node.table, int(rows), tuple(cols), node.span))

    # in the order of the file, as a person reads it and fixes it; -D problems (no place) first
    c.diags.sort(key=lambda d: (d.span.line, d.span.col) if d.span else (0, 0))
    errors = c.errors()
    if errors or workload is None or ramp is None:
        if not errors:
            c.error("the scenario is incomplete", sc.span)
        raise ScenarioError(c.diags, tree.text)
    return m.Scenario(
        name=sc.name, file=tree.file, text=tree.text, parameters=params, target=target, target_from=target_from,
        seed=seed, seed_given=seed_given, server_settings=tuple(settings), workload=workload, ramp=ramp,
        warmup=warmup, report_every=report_every, stop=tuple(stop), expect=tuple(expect), output=output,
        setup=tuple(setup), workers=workers, warnings=tuple(d for d in c.diags if d.severity != "error"),
    )


def _plain(v: Value) -> object:
    if isinstance(v, Quantity):
        n = int(v.value) if v.value.is_integer() else v.value
        if v.unit is None:
            return n
        attached = v.unit in TIME_UNITS or v.unit in SIZE_UNITS or v.unit in ("%", "x")  # 10s, but 8 users
        return f"{_num(v.value)}{'' if attached else ' '}{v.unit}"
    if isinstance(v, ast.Call):
        return f"{v.name}(...)"
    if isinstance(v, EnvText):
        q = _env_quantity(v)
        return _plain(q) if q is not None and q.unit is None else str(v)
    return v


def _offset(text: str, span: Span | None) -> int:
    if span is None:
        return 0
    lines = text.splitlines(keepends=True)
    return sum(len(x) for x in lines[: span.line - 1]) + span.col - 1


def _offset_end(text: str, span: Span | None) -> int:
    if span is None:
        return 0
    lines = text.splitlines(keepends=True)
    return sum(len(x) for x in lines[: span.end_line - 1]) + span.end_col - 1


def _step_ramp(c: _Checker, node: ast.RampStep) -> m.StepRamp | None:
    got: dict[str, tuple[ast.Expr, Span]] = {}
    for kind, value, span in node.items:
        key = "step" if kind in ("add", "mul") else kind
        if key in got:
            c.error(f"'{key}' is given twice in the ramp", span)
        got[key] = (value, span)
        if kind in ("add", "mul"):
            got["_kind"] = (ast.Word(kind, span), span)
    for need, example in (("start", "start 8 users"), ("step", "step +8 users"), ("hold", "hold 60s"),
                          ("max", "max 256 users")):
        if need not in got:
            c.error(f"ramp step needs '{need}'", node.span, f"add: {example}")
    if any(n not in got for n in ("start", "step", "hold", "max")):
        return None
    start = c.users(got["start"][0], "start")
    mx = c.users(got["max"][0], "max")
    add = mul = None
    if got["_kind"][0].name == "add":  # type: ignore[union-attr]
        add = c.users(got["step"][0], "step")
    else:
        mul = c.number(got["step"][0], "step", allow_units=("x",))
        if mul is not None and mul <= 1:
            c.error("step xN must multiply by more than 1", got["step"][1])
            mul = None
    settle = c.duration(got["settle"][0], "settle", allow_zero=True) if "settle" in got else 0.0
    hold = c.duration(got["hold"][0], "hold")
    if start is not None and mx is not None and mx < start:
        c.error(f"max ({mx}) is below start ({start})", got["max"][1])
        return None
    if None in (start, mx, hold, settle) or (add is None and mul is None):
        return None
    return m.StepRamp(start, add, mul, settle or 0.0, hold, mx)  # type: ignore[arg-type]


def _condition(c: _Checker, node: ast.Condition, txs: tuple[str, ...], ramp: m.Ramp | None,
               expect: bool) -> m.Condition | None:
    ref = node.metric
    name, arg = ref.name, ref.arg
    metric: m.Metric | None = None
    pm = re.fullmatch(r"p(\d+(?:\.\d+)?)", name)
    known = _METRICS if expect else [x for x in _METRICS if x != "saturation"]
    if pm:
        p = float(pm.group(1))
        if not 0 < p < 100:
            c.error(f"{name}: a percentile is between p0 and p100 (exclusive)", ref.span, "p50, p90, p95, p99, p99.9")
            return None
        metric = m.Metric("latency", "p", p, arg)
    elif name in ("avg", "max", "min"):
        metric = m.Metric("latency", name, None, arg)
    elif name == "nopm":
        if "new_order" not in txs:
            c.error("nopm counts new orders: the workload has no transaction 'new_order'", ref.span,
                    "use tpm, or a tpcc workload (or a custom one with a transaction named new_order)")
            return None
        if arg is not None:
            c.error("nopm always counts new_order: it takes no (transaction)", ref.arg_span or ref.span, "nopm")
            return None
        metric = m.Metric("nopm")
    elif name in _RATE_METRICS:
        metric = m.Metric(name, None, None, arg)
    elif name == "error_rate":
        metric = m.Metric("error_rate", None, None, arg)
    elif name == "cpu":
        if arg not in _CPU_SOURCES:
            c.error(f"cpu({arg or ''}): say whose CPU", ref.arg_span or ref.span, "cpu(server), cpu(host) or cpu(client)")
            return None
        metric = m.Metric("cpu", source=arg)
    elif name == "saturation" and expect:
        metric = m.Metric("saturation")
    else:
        close = difflib.get_close_matches(name, known, n=1, cutoff=0.5)
        hint = f"did you mean {close[0]}{'(' + arg + ')' if arg else ''}?" if close else "metrics: " + ", ".join(known)
        c.error(f"unknown metric '{name}'", ref.span, hint)
        return None
    if metric.transaction is not None and metric.transaction not in txs:
        close = difflib.get_close_matches(metric.transaction, list(txs), n=1, cutoff=0.4)
        hint = (f"did you mean {name}({close[0]})?" if close else
                "transactions of this workload: " + ", ".join(txs))
        c.error(f"the workload has no transaction '{metric.transaction}'", ref.arg_span or ref.span, hint)
        return None

    # limit and unit ---------------------------------------------------------------------------
    expected, example = _limit_kind(node.kind, metric)
    v = c.numeric(node.limit, f"the limit of {metric.label()}", expected, example)
    if v is None:
        return None
    if not isinstance(v, Quantity):
        c.error("a limit is a number with its unit", _span_of(node.limit))
        return None
    window = None
    if node.window is not None:
        if node.kind != "threshold" or expect:
            c.error("'for' applies to stop thresholds only", _span_of(node.window))
        window = _window(c, node.window, ramp)
    limit: float
    unit: str
    if node.kind == "plateau":
        if metric.name not in _RATE_METRICS:
            c.error(f"plateau applies to throughput (tps, tpm, qps, nopm), not {metric.label()}", ref.span)
            return None
        if v.unit != "%":
            c.wrong(v, "a plateau is given in percent", f"{name} plateau 5%")
            return None
        limit, unit = v.value, "%"
    elif node.kind == "kink":
        if metric.name != "latency":
            c.error(f"kink applies to latency (p90, p99, avg ...), not {metric.label()}", ref.span)
            return None
        if v.unit not in ("x", None):
            c.wrong(v, "a kink is a factor", f"{name} kink 3x")
            return None
        if v.value <= 1:
            c.wrong(v, "a kink factor must be larger than 1")
            return None
        limit, unit = v.value, "x"
    elif metric.name == "latency":
        if v.unit not in TIME_UNITS:
            c.wrong(v, f"{metric.label()} is a time: give the limit a unit", f"{node.text.split(node.op or '>')[0].strip()} {node.op} 250ms")
            return None
        limit, unit = v.value * TIME_UNITS[v.unit], "ms"
    elif metric.name in _RATE_METRICS:
        if v.unit not in (None, metric.name):
            c.wrong(v, f"{metric.name} is compared with a plain number or {metric.name}",
                    f"{metric.label()} {node.op} {_num(v.value)} {metric.name}")
            return None
        limit, unit = v.value, metric.name
    elif metric.name in ("error_rate", "cpu"):
        if v.unit != "%":
            c.wrong(v, f"{metric.label()} is a percentage", f"{metric.label()} {node.op} 80%")
            return None
        limit, unit = v.value, "%"
    else:  # saturation
        if v.unit not in (None, "users"):
            c.wrong(v, "saturation is a number of users", "saturation >= 32 users")
            return None
        limit, unit = v.value, "users"

    if node.kind in ("plateau", "kink") and expect:
        c.error(f"{node.kind} compares steps while the run goes: it belongs in 'stop when'", node.span)
        return None
    if node.kind in ("plateau", "kink") and ramp is not None and not isinstance(ramp, m.StepRamp):
        c.error(f"{node.kind} compares one step with the one before: it needs 'ramp step'", node.span)
        return None
    if node.window is not None and window is None:
        return None
    return m.Condition(node.kind, metric, node.op, limit, unit, window, node.text, node.span,  # type: ignore[arg-type]
                       _resolved(c, node))


def _limit_kind(kind: str, metric: m.Metric) -> tuple[str, str]:
    """What a limit is, and an example, for a message about an env() that holds something else."""
    if kind == "plateau":
        return "a percentage", "5%"
    if kind == "kink":
        return "a factor", "3x"
    if metric.name == "latency":
        return "a duration", "250ms"
    if metric.name in ("error_rate", "cpu"):
        return "a percentage", "80%"
    return "a number", "1000"


def _window(c: _Checker, e: ast.Expr, ramp: m.Ramp | None) -> float | None:
    """The seconds of `for D`, when a window that long can fire in this run."""
    window = c.duration(e, "for")
    span = _span_of(e)
    if window is None:
        return None
    if window < 1:
        # the engine samples once a second: a shorter window would hold less than one sample
        c.error(f"a 'for' window of {_num(window)}s is shorter than one sample: conditions are judged once a second",
                span, "for 1s or longer")
        return None
    if isinstance(ramp, m.StepRamp) and window > ramp.hold:
        c.error(f"the window ({_num(window)}s) is longer than each step's hold ({_num(ramp.hold)}s): "
                "it could never fire", span, "a sustained condition is judged within one step's hold: "
                f"for {_num(ramp.hold)}s at most, or a longer hold")
        return None
    if isinstance(ramp, (m.ConstantRamp, m.LinearRamp)) and window > ramp.duration:
        c.error(f"the window ({_num(window)}s) is longer than the run ({_num(ramp.duration)}s): it could never fire",
                span, f"for {_num(ramp.duration)}s at most, or a longer duration")
        return None
    return window


def _refs(e: ast.Expr | None) -> list[ast.Var | ast.Call]:
    """The $names and env() calls in a value: what a resolved text replaces."""
    match e:
        case ast.Var():
            return [e]
        case ast.Call(name="env"):
            return [e]
        case ast.WithUnit(inner=inner):
            return _refs(inner)
        case ast.Call(args=args):
            return [v for a in args for v in _refs(a)]
    return []


def _resolved(c: _Checker, node: ast.Condition) -> str:
    """The condition as written, with each $name and env() replaced by its value: "p90 > $limit" -> "p90 > 250ms"."""
    values = [(r.span, c.lets.get(r.name) if isinstance(r, ast.Var) else c.value(r))
              for r in _refs(node.limit) + _refs(node.window)]
    if not values:
        return node.text
    base = _offset(c.text, node.span)
    src = c.text[base:_offset_end(c.text, node.span)]
    for span, value in sorted(values, key=lambda sv: _offset(c.text, sv[0]), reverse=True):
        if value is not None:
            a, b = _offset(c.text, span) - base, _offset_end(c.text, span) - base
            src = src[:a] + str(_plain(value)) + src[b:]
    return " ".join(src.split())


_SYSBENCH_INT = {f.name for f in fields(m.SysbenchWorkload)
                 if f.type in ("int", "float")} - {"retries"}
_SYSBENCH_BOOL = {"range_selects", "skip_trx", "create_secondary"}


def _workload(c: _Checker, node: ast.Workload) -> m.WorkloadSpec | None:
    if node.kind == "sysbench":
        return _sysbench(c, node)
    if node.kind == "custom":
        return _custom(c, node)
    if node.kind == "tpcc":
        return _tpcc(c, node)
    close = difflib.get_close_matches(node.kind, ["sysbench", "custom", "tpcc"], n=1)
    c.error(f"unknown workload '{node.kind}'", node.kind_span,
            f"did you mean {close[0]}?" if close else "workloads: sysbench, custom, tpcc")
    return None


def _duplicate_settings(c: _Checker, settings: tuple[ast.Setting, ...]) -> None:
    seen: set[str] = set()
    for st in settings:
        if st.name in seen:
            c.error(f"'{st.name}' is given twice", _name_span(st.span, st.name), "keep one")
        seen.add(st.name)


def _on_off(c: _Checker, st: ast.Setting) -> bool | None:
    v = c.value(st.value)
    if not (isinstance(v, str) and v.lower() in ("on", "off")):
        c.error(f"{st.name} is on or off", _span_of(st.value), f"{st.name} = on")
        return None
    return v.lower() == "on"


def _unknown_option(c: _Checker, st: ast.Setting, workload: str, allowed: list[str]) -> None:
    close = difflib.get_close_matches(st.name, allowed, n=1)
    c.error(f"{workload} has no option '{st.name}'", _name_span(st.span, st.name),
            f"did you mean {close[0]}?" if close else "options: " + ", ".join(allowed))


def _sysbench(c: _Checker, node: ast.Workload) -> m.SysbenchWorkload | None:
    if node.variant not in m.SYSBENCH_TESTS:
        close = difflib.get_close_matches(node.variant or "", list(m.SYSBENCH_TESTS), n=1)
        where = node.variant_span or node.kind_span  # no test name: point at 'sysbench'
        c.error(f"unknown sysbench test '{node.variant}'" if node.variant else "workload sysbench needs a test name", where,
                f"did you mean {close[0]}?" if close else "tests: " + ", ".join(m.SYSBENCH_TESTS))
        return None
    if node.transactions:
        c.error("a sysbench workload has its own transactions", node.transactions[0].span,
                "use 'workload custom { ... }' for your own")
    for mix in node.mixes:
        c.error("a sysbench test runs one transaction: it has no mix", mix.span,
                "for a mix of your own, use 'workload custom' with a weight per transaction")
    _duplicate_settings(c, node.settings)
    opts: dict[str, object] = {}
    allowed = sorted(_SYSBENCH_INT | _SYSBENCH_BOOL | {"rand_type"})
    for st in node.settings:
        if st.name in _SYSBENCH_BOOL:
            if (flag := _on_off(c, st)) is not None:
                opts[st.name] = flag
        elif st.name == "rand_type":
            v = c.value(st.value)
            if v not in ("uniform", "special", "gaussian", "pareto", "zipfian"):
                c.error("rand_type is uniform, special, gaussian, pareto or zipfian", _span_of(st.value))
                continue
            opts[st.name] = v
        elif st.name in _SYSBENCH_INT:
            minimum = 1 if st.name in ("tables", "table_size", "range_size") else 0
            n = c.count(st.value, st.name, minimum=minimum, integer=not st.name.startswith("rand_spec"))
            if n is not None:
                opts[st.name] = n
        else:
            _unknown_option(c, st, "sysbench", allowed)
    if node.variant == "oltp_point_select":
        opts.setdefault("point_selects", 1)  # as oltp_point_select.lua does
    return m.SysbenchWorkload(test=node.variant, **opts)  # type: ignore[arg-type]


def _custom(c: _Checker, node: ast.Workload) -> m.CustomWorkload | None:
    if node.variant is not None:
        c.error("a custom workload has no test name", node.variant_span, "workload custom { transaction ... }")
    for st in node.settings:
        c.error(f"custom workloads take no option '{st.name}'", _name_span(st.span, st.name),
                "a custom workload is its transactions; options belong to sysbench and tpcc")
    for mix in node.mixes:
        c.error("a custom workload gives each transaction a weight instead of a mix", mix.span,
                "transaction read weight 80 { ... }")
    if not node.transactions:
        c.error("a custom workload needs at least one transaction", node.span,
                'transaction read { query "SELECT 1" }')
        return None
    seen: set[str] = set()
    txs = []
    for tx in node.transactions:
        if tx.name in seen:
            c.error(f"transaction '{tx.name}' is defined twice", tx.span)
        seen.add(tx.name)
        t = _transaction(c, tx)
        if t is not None:
            txs.append(t)
    return m.CustomWorkload(tuple(txs)) if len(txs) == len(node.transactions) else None


# TPC-C clause 5.2.3: the least share of each transaction but new_order, which takes what is left.
_TPCC_MINIMUM = {"payment": 43.0, "order_status": 4.0, "delivery": 4.0, "stock_level": 4.0}
_TPCC_OPTIONS = ["warehouses", "keying_time", "procedures", "loader_connections", "retries"]


def _tpcc(c: _Checker, node: ast.Workload) -> m.TpccWorkload | None:
    before = len(c.errors())
    if node.variant is not None:
        c.error("a tpcc workload has no test name", node.variant_span, "workload tpcc { warehouses = 10 }")
    if node.transactions:
        c.error("a tpcc workload has its own five transactions", node.transactions[0].span,
                "set their shares with mix { new_order 45%  payment 43% ... }, or use 'workload custom'")
    _duplicate_settings(c, node.settings)
    opts: dict[str, object] = {}
    for st in node.settings:
        if st.name == "warehouses":
            n = c.number(st.value, "warehouses", integer=True, minimum=1)
            if n is not None:
                opts["warehouses"] = int(n)
        elif st.name in ("keying_time", "procedures"):
            if (flag := _on_off(c, st)) is not None:
                opts[st.name] = flag
        elif st.name == "loader_connections":
            n = c.number(st.value, "loader_connections", integer=True, minimum=1)
            if n is not None:
                opts["loader_connections"] = int(n)
        elif st.name == "retries":
            n = c.number(st.value, "retries", integer=True, minimum=0)
            if n is not None:
                opts["retries"] = int(n)
        else:
            _unknown_option(c, st, "tpcc", _TPCC_OPTIONS)
    for extra in node.mixes[1:]:
        c.error("'mix' is given more than once", extra.span, "keep one")
    if node.mixes:
        mix = _tpcc_mix(c, node.mixes[0])
        if mix is not None:
            opts["mix"] = mix
    if len(c.errors()) > before:
        return None
    return m.TpccWorkload(**opts)  # type: ignore[arg-type]


def _tpcc_mix(c: _Checker, node: ast.Mix) -> tuple[tuple[str, float], ...] | None:
    shares: dict[str, float] = {}
    ok = True
    for entry in node.entries:
        if entry.name not in m.TPCC_TRANSACTIONS:
            close = difflib.get_close_matches(entry.name, list(m.TPCC_TRANSACTIONS), n=1, cutoff=0.5)
            c.error(f"tpcc has no transaction '{entry.name}'", _name_span(entry.span, entry.name),
                    f"did you mean {close[0]}?" if close else "transactions: " + ", ".join(m.TPCC_TRANSACTIONS))
            ok = False
            continue
        if entry.name in shares:
            c.error(f"{entry.name} is given twice in the mix", _name_span(entry.span, entry.name), "keep one")
            ok = False
            continue
        v = c.numeric(entry.value, f"mix {entry.name}", "a percentage", "45%")
        if not isinstance(v, Quantity) or v.unit != "%":
            if v is not None:
                shown = _num(v.value) if isinstance(v, Quantity) else "45"
                c.error("a share of the mix is a percentage" + getattr(v, "origin", ""), _span_of(entry.value),
                        f"{entry.name} {shown}%")
            ok = False
            continue
        if v.value < 0:
            c.wrong(v, "a share of the mix cannot be negative")
            ok = False
            continue
        shares[entry.name] = v.value
    if not ok:
        return None
    total = sum(shares.values())
    if abs(total - 100.0) > 1e-6:
        c.error(f"the mix adds up to {_num(round(total, 6))}%, not 100%", _name_span(node.span, "mix"),
                "TPC-C's minimum mix: new_order 45%  payment 43%  order_status 4%  delivery 4%  stock_level 4%")
        return None
    for name, least in _TPCC_MINIMUM.items():
        entry = next((e for e in node.entries if e.name == name), None)
        share = shares.get(name, 0.0)
        if share >= least:
            continue
        hint = "the run goes ahead, but its figures do not compare with TPC-C results"
        if entry is None:
            c.warning(f"{name} is not in the mix: it is not run (TPC-C's minimum is {_num(least)}%, clause 5.2.3)",
                      _name_span(node.span, "mix"), hint)
        else:
            c.warning(f"{name} {_num(share)}% is below TPC-C's minimum of {_num(least)}% (clause 5.2.3)",
                      _span_of(entry.value), hint)
    # every transaction, in the order of the specification; one left out of the mix is not run
    return tuple((name, shares.get(name, 0.0)) for name in m.TPCC_TRANSACTIONS)


def _transaction(c: _Checker, tx: ast.Transaction) -> m.TransactionSpec | None:
    before = len(c.errors())
    weight = c.number(tx.weight, f"weight of {tx.name}", minimum=0, allow_units=("%",)) if tx.weight else 1.0
    if weight is not None and weight <= 0:
        c.error("a weight must be larger than 0", _span_of(tx.weight))
    retries, retry_on = 0, frozenset[int]()
    if tx.retry is not None:
        r = c.number(tx.retry.count, "retry", integer=True, minimum=0)
        retries = int(r or 0)
        codes = set()
        for w in tx.retry.on:
            if w.name not in RETRYABLE:
                close = difflib.get_close_matches(w.name, list(RETRYABLE), n=1)
                c.error(f"cannot retry on '{w.name}'", w.span,
                        f"did you mean {close[0]}?" if close else "retry on deadlock, lock_wait_timeout")
            else:
                codes.add(RETRYABLE[w.name])
        retry_on = frozenset(codes)
    lets: list[tuple[str, m.Generator | int | float | str]] = []
    queries: list[m.Query] = []
    defined: set[str] = set()
    for st in tx.body:
        if isinstance(st, ast.Let):
            g = c.generator(st.value, "let")
            if g is not None:
                lets.append((st.name, g))
            defined.add(st.name)
        else:
            native, names = native_sql(st.sql)
            for mt in _PARAM.finditer(st.sql):
                n = mt.group(2)
                if n is not None and n not in defined:
                    close = difflib.get_close_matches(n, list(defined), n=1)
                    c.error(f"query parameter :{n} is not defined in transaction '{tx.name}'",
                            _inside_string(c.text, st.span, mt.start(2) - 1, len(n) + 1),
                            f"did you mean :{close[0]}?" if close else f"add before the query: let {n} = uniform(1, 100)")
            queries.append(m.Query(st.sql, native, names, st.span))
    if not queries:
        c.error(f"transaction '{tx.name}' runs no query", tx.span, 'add: query "SELECT ..."')
    if len(c.errors()) > before or weight is None:
        return None
    return m.TransactionSpec(tx.name, float(weight), tuple(lets), tuple(queries), retries, retry_on, tx.span)
