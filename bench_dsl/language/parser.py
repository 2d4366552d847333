"""Text of a .bench file -> syntax tree (bench_dsl.language.syntax), with friendly syntax errors."""

from __future__ import annotations

import functools
import hashlib
import math
import re
import sys
from importlib import resources
from typing import Any

import lark
from lark import Lark, Token, Transformer, Tree, v_args
from lark.exceptions import (
    UnexpectedInput,
)
from lark.tree import Meta

from bench_dsl.core.cache import cache_file
from bench_dsl.core.errors import Diagnostic, ScenarioError, Span, normal_newlines
from bench_dsl.language import syntax as ast
from bench_dsl.language.metric_decls import CORE_TABLE
from bench_dsl.language.syntax_errors import UnitWords, keyword_as_name, quoted, syntax_diagnostic

Words = tuple[str, ...]  # the comparisons' words: metric_decls.Table.comparison_words()

CORE_UNITS: UnitWords = tuple(CORE_TABLE.throughput_units())
CORE_WORDS: Words = tuple(CORE_TABLE.comparison_words())


@functools.cache
def _parser(units: UnitWords = CORE_UNITS, words: Words = CORE_WORDS) -> Lark:
    text = resources.files("bench_dsl.grammar").joinpath("bench.lark").read_text(encoding="utf-8")
    # RATE_UNIT's words are the declared throughputs' units (bench_dsl/language/metric_decls.py), and
    # what a unit is never followed by, the declared comparisons' words (bench_dsl/language/comparisons.py)
    for holder in ("@RATE_UNITS@", "@COMPARISONS@"):
        assert text.count(holder) == 1, f"bench.lark: RATE_UNIT has lost its {holder}"
    text = text.replace("@RATE_UNITS@", "|".join(map(re.escape, units)))
    text = text.replace("@COMPARISONS@", "|".join(map(re.escape, words)))
    # building the parse tables takes a third of a second, at every start of bench: kept in the
    # user's private cache (a pickle, so never in a directory others may write), by the grammar's hash
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    cache = cache_file(f"grammar-{digest}-lark-{lark.__version__}.pickle")
    return Lark(
        text,
        cache=str(cache) if cache is not None else False,
        parser="lalr",
        lexer="contextual",
        propagate_positions=True,
        maybe_placeholders=True,
        start=["start", "expr"],
    )


def _span(file: str, meta: Meta | Token) -> Span:
    return Span(file, meta.line or 0, meta.column or 0, meta.end_line or 0, meta.end_column or 0)


@v_args(meta=True)
class _ToSyntax(Transformer[Token, Any]):
    def __init__(self, file: str, text: str) -> None:
        super().__init__()
        self.file = file
        self.text = text
        self.problems: list[Diagnostic] = []  # numbers beyond a float, said together after the tree is built

    def _float(self, written: str, token: Token) -> float:
        """A number as written, or 0.0 and a diagnostic when it is beyond what a float holds (more than
        308 digits): never an infinite value, which no check bounds and no integer conversion takes."""
        v = float(written)
        if not math.isfinite(v):
            # -10^400 is no "too large" number: said as the side it is beyond
            beyond, bound = ("too large a number", "at most") if v > 0 else ("a number too far below 0", "at least -")
            self.problems.append(Diagnostic(f"{quoted(written)} is {beyond}", self._s(token),
                                            f"a number is {bound}{sys.float_info.max:.4g}; every value has a "
                                            "far narrower bound of its own (docs/language.md)"))
            return 0.0
        return v

    def _s(self, meta: Meta | Token) -> Span:
        return _span(self.file, meta)

    # values -----------------------------------------------------------------------------
    def number(self, meta: Meta, ch: list[Token]) -> ast.Num:
        t = ch[0]
        v = self._float(str(t), t)
        return ast.Num(int(v) if v.is_integer() and "." not in t else v, str(t), self._s(t))

    def quantity(self, meta: Meta, ch: list[Token]) -> ast.Qty:
        t = str(ch[0])
        m = re.fullmatch(r"(-?[0-9]+(?:\.[0-9]+)?)(.*)", t)
        assert m is not None
        return ast.Qty(self._float(m.group(1), ch[0]), m.group(2), t, self._s(ch[0]))

    def string(self, meta: Meta, ch: list[Token]) -> ast.Str:
        return ast.Str(_unquote(str(ch[0])), self._s(ch[0]))

    def var(self, meta: Meta, ch: list[Token]) -> ast.Var:
        return ast.Var(str(ch[0])[1:], self._s(ch[0]))

    def word(self, meta: Meta, ch: list[Token]) -> ast.Word:
        return ast.Word(str(ch[0]), self._s(ch[0]))

    def call(self, meta: Meta, ch: list[Any]) -> ast.Call:
        name, *args = ch
        return ast.Call(str(name), tuple(a for a in args if a is not None), self._s(meta))

    def with_unit(self, meta: Meta, ch: list[Any]) -> ast.WithUnit:
        inner, unit = ch
        if isinstance(inner, Token):
            inner = self.var(meta, [inner]) if inner.type == "VAR" else self.number(meta, [inner])
        return ast.WithUnit(inner, str(unit), self._s(meta))

    # statements --------------------------------------------------------------------------
    def let_stmt(self, meta: Meta, ch: list[Any]) -> ast.Let:
        return ast.Let(str(ch[0]), ch[1], self._s(meta))

    def setting(self, meta: Meta, ch: list[Any]) -> ast.Setting:
        return ast.Setting(str(ch[0]), ch[1], self._s(meta))

    def _item(keyword: str):  # type: ignore[no-untyped-def,misc]  # a decorator factory of the class body
        def method(self: _ToSyntax, meta: Meta, ch: list[Any]) -> ast.Item:
            return ast.Item(keyword, ch[-1], self._s(meta))

        return method

    target = _item("target")
    seed = _item("seed")
    users = _item("users")
    warmup = _item("warmup")
    duration = _item("duration")
    report = _item("report")
    output = _item("output")

    def workers(self, meta: Meta, ch: list[Any]) -> ast.Item:
        return ast.Item("workers", ch[0], self._s(meta), ch[1])

    def worker_loss(self, meta: Meta, ch: list[Any]) -> ast.Item:
        return ast.Item("on worker loss", ast.Word(str(ch[0]), self._s(ch[0])), self._s(meta))

    repeat = _item("repeat")
    replica = _item("replica")
    monitor = _item("monitor")

    def power(self, meta: Meta, ch: list[Any]) -> ast.Item:
        return ast.Item("power", ch[0], self._s(meta), rest=tuple(c for c in ch[1:] if c is not None))

    def vary(self, meta: Meta, ch: list[Any]) -> ast.Vary:
        zipped = bool(ch) and isinstance(ch[-1], Token) and ch[-1].type == "VARY_ZIP"
        lines = tuple(c for c in ch if isinstance(c, ast.VaryLine))
        return ast.Vary(lines, zipped, self._s(meta))

    def vary_line(self, meta: Meta, ch: list[Any]) -> ast.VaryLine:
        key, key_span = ch[0]
        return ast.VaryLine(key, key_span, tuple(c for c in ch[1:] if c is not None), self._s(meta))

    def vary_name(self, meta: Meta, ch: list[Token]) -> tuple[str, Span]:
        return ".".join(str(t) for t in ch), self._s(meta)

    def vary_var(self, meta: Meta, ch: list[Token]) -> tuple[str, Span]:
        return str(ch[0]), self._s(meta)

    def server(self, meta: Meta, ch: list[Any]) -> ast.Block:
        return ast.Block("server", tuple(ch), self._s(meta))

    def stop(self, meta: Meta, ch: list[Any]) -> ast.Block:
        return ast.Block("stop", tuple(ch), self._s(meta))

    def expect(self, meta: Meta, ch: list[Any]) -> ast.Block:
        return ast.Block("expect", tuple(ch), self._s(meta))

    def setup(self, meta: Meta, ch: list[Any]) -> ast.Block:
        return ast.Block("setup", tuple(ch), self._s(meta))

    def setup_sql(self, meta: Meta, ch: list[Token]) -> ast.SetupSqlNode:
        return ast.SetupSqlNode(_unquote(str(ch[0])), self._s(meta))

    def setup_fill(self, meta: Meta, ch: list[Any]) -> ast.FillNode:
        table, rows, *cols = ch
        return ast.FillNode(str(table), rows, tuple(cols), self._s(meta))

    # workload ----------------------------------------------------------------------------
    def workload(self, meta: Meta, ch: list[Any]) -> ast.WorkloadNode:
        kind, variant, *body = ch
        settings = tuple(b for b in body if isinstance(b, ast.Setting))
        txs = tuple(b for b in body if isinstance(b, ast.TransactionNode))
        mixes = tuple(b for b in body if isinstance(b, ast.Mix))
        return ast.WorkloadNode(str(kind), str(variant) if variant is not None else None, settings, txs, mixes,
                            self._s(meta), self._s(kind), self._s(variant) if variant is not None else None)

    def mix(self, meta: Meta, ch: list[Any]) -> ast.Mix:
        return ast.Mix(tuple(ch), self._s(meta))

    def mix_entry(self, meta: Meta, ch: list[Any]) -> ast.MixEntry:
        return ast.MixEntry(str(ch[0]), ch[1], self._s(meta))

    def tx_weight(self, meta: Meta, ch: list[Any]) -> tuple[str, Any]:
        return ("weight", ch[0])

    def tx_retry(self, meta: Meta, ch: list[Any]) -> tuple[str, Any]:
        count, *on = ch
        return ("retry", ast.TxRetry(count, tuple(ast.Word(str(t), self._s(t)) for t in on), self._s(meta)))

    def tx_let(self, meta: Meta, ch: list[Any]) -> ast.Let:
        return ast.Let(str(ch[0]), ch[1], self._s(meta))

    def tx_query(self, meta: Meta, ch: list[Token]) -> ast.TxQuery:
        return ast.TxQuery(_unquote(str(ch[0])), self._s(ch[0]))

    def transaction(self, meta: Meta, ch: list[Any]) -> ast.TransactionNode:
        name, *rest = ch
        weight = next((v for k, v in (r for r in rest if isinstance(r, tuple)) if k == "weight"), None)
        retry = next((v for k, v in (r for r in rest if isinstance(r, tuple)) if k == "retry"), None)
        body = tuple(r for r in rest if isinstance(r, (ast.Let, ast.TxQuery)))
        return ast.TransactionNode(str(name), weight, retry, body, self._s(meta))

    # ramp ----------------------------------------------------------------------------------
    def _ramp_item(kind: str):  # type: ignore[no-untyped-def,misc]  # a decorator factory of the class body
        def method(self: _ToSyntax, meta: Meta, ch: list[Any]) -> tuple[str, Any, Span]:
            value = ch[-1]
            if isinstance(value, Token):  # MULTIPLIER: x2
                text = str(value)
                value = ast.Qty(self._float(text[1:], value), "x", text, self._s(value))
            return (kind, value, self._s(meta))

        return method

    ramp_start = _ramp_item("start")
    ramp_add = _ramp_item("add")
    ramp_mul = _ramp_item("mul")
    ramp_settle = _ramp_item("settle")
    ramp_hold = _ramp_item("hold")
    ramp_max = _ramp_item("max")

    def ramp_step(self, meta: Meta, ch: list[Any]) -> ast.RampStep:
        return ast.RampStep(tuple(ch), self._s(meta))

    def ramp_linear(self, meta: Meta, ch: list[Any]) -> ast.RampLinear:
        return ast.RampLinear(ch[0], ch[1], ch[2], self._s(meta))

    def _rate(self, meta: Meta, shape: str, items: list[Any], arrivals: Token | None) -> ast.Rate:
        return ast.Rate(shape, tuple(items), str(arrivals) if arrivals is not None else None, self._s(meta))

    def rate_step(self, meta: Meta, ch: list[Any]) -> ast.Rate:
        return self._rate(meta, "step", ch[:-1], ch[-1])

    def rate_linear(self, meta: Meta, ch: list[Any]) -> ast.Rate:
        start, end, over, arrivals = ch
        items = [("from", start, start.span), ("to", end, end.span)]
        return self._rate(meta, "linear", items + ([("over", over, over.span)] if over is not None else []),
                          arrivals)

    def rate_fixed(self, meta: Meta, ch: list[Any]) -> ast.Rate:
        return self._rate(meta, "fixed", [("rate", ch[0], ch[0].span)], ch[1])

    def load(self, meta: Meta, ch: list[Any]) -> ast.LoadNode:
        kind, *settings = ch
        return ast.LoadNode(str(kind), tuple(settings), self._s(meta), self._s(kind))

    def users_pool(self, meta: Meta, ch: list[Any]) -> ast.UsersPool:
        size, queue, queue_size = ch
        return ast.UsersPool(size, queue is not None, queue_size, self._s(meta))

    # conditions ------------------------------------------------------------------------------
    def metric(self, meta: Meta, ch: list[Any]) -> ast.MetricRef:
        name, arg, per_second = ch
        return ast.MetricRef(str(name), str(arg) if arg is not None else None, self._s(meta),
                             self._s(arg) if arg is not None else None, per_second is not None)

    def for_clause(self, meta: Meta, ch: list[Any]) -> Any:
        return ch[0]

    def _text(self, meta: Meta) -> str:
        return " ".join(self.text[meta.start_pos:meta.end_pos].split())

    def threshold(self, meta: Meta, ch: list[Any]) -> ast.ConditionNode:
        metric, op, limit, window = ch
        return ast.ConditionNode("threshold", metric, str(op), limit, window, self._text(meta), self._s(meta))

    def compare(self, meta: Meta, ch: list[Any]) -> ast.ConditionNode:
        metric, word, limit = ch
        return ast.ConditionNode(str(word), metric, None, limit, None, self._text(meta), self._s(meta), self._s(word))

    # scenario ------------------------------------------------------------------------------
    def scenario(self, meta: Meta, ch: list[Any]) -> ast.ScenarioNode:
        name, *items = ch
        return ast.ScenarioNode(_unquote(str(name)), list(items), self._s(meta))

    def start(self, meta: Meta, ch: list[Any]) -> tuple[list[ast.Let], ast.ScenarioNode]:
        lets = [c for c in ch if isinstance(c, ast.Let)]
        scenario = next(c for c in ch if isinstance(c, ast.ScenarioNode))
        return lets, scenario


_ESCAPES = {"n": "\n", "t": "\t", '"': '"', "\\": "\\"}


def _unquote(raw: str) -> str:
    if raw.startswith('"""'):
        return raw[3:-3]
    body = raw[1:-1]
    return re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), "\\" + m.group(1)), body)


def written_at(raw: str, index: int) -> int:
    """Where character `index` of a string's value stands in the string as written (`raw`, quotes
    and all): _unquote's way back. A known escape (\\n) is one character of the value and two of the
    file; an unknown one (\\q) is kept as written, two and two."""
    if raw.startswith('"""'):
        return 3 + index  # a """ string has no escapes: the value is the text
    pos = 1
    for _ in range(index):
        if pos >= len(raw) - 1:
            break
        pos += 2 if raw[pos] == "\\" and raw[pos + 1] in _ESCAPES else 1
    return pos


@functools.lru_cache(maxsize=4)
def parse(text: str, file: str = "<string>", units: UnitWords = CORE_UNITS, words: Words = CORE_WORDS) -> ast.FileNode:
    """Parse a whole .bench file, `units` the throughputs' unit words (the core ones and the workload
    kinds': validate.load gives them) and `words` the comparisons'; raises ScenarioError with a located
    diagnostic. Cached (the tree is never changed): a study validates each of its configurations on the
    one tree of its file."""
    text = normal_newlines(text)
    try:
        tree = _parser(units, words).parse(text, start="start", on_error=keyword_as_name)
    except UnexpectedInput as err:
        raise ScenarioError([syntax_diagnostic(err, file, text, units, _parser(units, words))], text) from None
    to_syntax = _ToSyntax(file, text)
    lets, scenario = to_syntax.transform(tree)
    if to_syntax.problems:
        raise ScenarioError(to_syntax.problems, text)
    return ast.FileNode(lets, scenario, file, text)


@functools.lru_cache(maxsize=4096)
def parse_expr(text: str, file: str = "<-D>", units: UnitWords = CORE_UNITS) -> ast.Expr:
    """Parse one value, as given to `-D name=value`. Cached: a study's configurations give each of
    their values as -D twice (validating the study, then planning or running each configuration)."""
    text = normal_newlines(text)
    try:
        tree: Tree[Token] = _parser(units).parse(text, start="expr", on_error=keyword_as_name)
    except UnexpectedInput as err:
        raise ScenarioError([syntax_diagnostic(err, file, text, units, _parser(units))], text) from None
    to_syntax = _ToSyntax(file, text)
    result = to_syntax.transform(tree)
    if to_syntax.problems:
        raise ScenarioError(to_syntax.problems, text)
    if isinstance(result, Token):  # a bare token when the rule inlined to it
        return to_syntax.word(None, [result])  # type: ignore[arg-type]
    return result
