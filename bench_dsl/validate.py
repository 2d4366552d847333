"""Syntax tree -> typed Scenario: the checks of the language as a whole (`let` and -D, target,
seed, server settings, workers, the ramp, conditions, output, setup), with the workload block
handed to its kind's plugin (bench_dsl/workloads/registry.py). Collects every diagnostic before
giving up."""

from __future__ import annotations

import difflib
import os
import random
import re
from collections.abc import Mapping
from dataclasses import fields
from pathlib import Path

from bench_dsl import model as m
from bench_dsl import syntax as ast
from bench_dsl import validate_ramp
from bench_dsl.dsn import parse_dsn, redact
from bench_dsl.errors import Diagnostic, ScenarioError, Span
from bench_dsl.parser import parse, parse_expr
from bench_dsl.validate_conditions import condition
from bench_dsl.validate_values import (
    Checker,
    EnvText,
    Quantity,
    name_span,
    num,
    offset,
    offset_end,
    plain,
    span_of,
)

RETRYABLE = {"deadlock": 1213, "lock_wait_timeout": 1205, "lock_wait": 1205}


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
    """The scenario of a parsed file. Each part is read in turn (the order in which the parts
    report is the order of the file once sorted); raises ScenarioError with every diagnostic."""
    c = Checker(tree.file, tree.text, env)
    parameters = _lets(c, tree.lets, defines)
    sc = tree.scenario
    items = _Items(c, sc)
    target, target_from = _target(c, items.first("target"))
    seed, seed_given = _seed(c, items.first("seed"))
    settings = _server_settings(c, items.all("server"))
    workload, tx_names = _workload(c, sc, items.all("Workload"))
    workers = _workers(c, items.first("workers"))
    warmup = validate_ramp.warmup(c, items.first("warmup"))
    report_every = validate_ramp.report_every(c, items.first("report"))
    ramp = validate_ramp.ramp(c, items.first("users"), items.first("ramp"), items.first("duration"), sc)  # type: ignore[arg-type]
    stop = _conditions(c, items.all("stop"), tx_names, ramp, expect=False)
    expect = _conditions(c, items.all("expect"), tx_names, ramp, expect=True)
    output = _output(c, items.first("output"))
    setup = _setup(c, items.all("setup"), workload)

    # in the order of the file, as a person reads it and fixes it; -D problems (no place) first
    c.diags.sort(key=lambda d: (d.span.line, d.span.col) if d.span else (0, 0))
    errors = c.errors()
    if errors or workload is None or ramp is None:
        if not errors:
            c.error("the scenario is incomplete", sc.span)
        raise ScenarioError(c.diags, tree.text)
    return m.Scenario(
        name=sc.name, file=tree.file, text=tree.text, parameters=parameters, target=target, target_from=target_from,
        seed=seed, seed_given=seed_given, server_settings=settings, workload=workload, ramp=ramp,
        warmup=warmup, report_every=report_every, stop=stop, expect=expect, output=output,
        setup=setup, workers=workers, warnings=tuple(d for d in c.diags if d.severity != "error"),
    )


def _lets(c: Checker, lets: list[ast.Let], defines: Mapping[str, str]) -> dict[str, object]:
    """Every `let`, with -D overrides, into c.lets; the values as the result's parameters show them."""
    declared = {let.name for let in lets}
    for name in defines:
        if name not in declared:
            close = difflib.get_close_matches(name, list(declared), n=1)
            c.error(f"-D {name}: the file declares no 'let {name}'",
                    None, f"did you mean -D {close[0]}=...?" if close else
                    ("declared: " + ", ".join(sorted(declared)) if declared else "add: let " + name + " = ..."))
    parameters: dict[str, object] = {}
    for let in lets:
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
        parameters[let.name] = plain(v)
    return parameters


class _Items:
    """The scenario's items by keyword (a workload's "Workload", both ramps' "ramp"); each one given
    more than once is reported."""

    def __init__(self, c: Checker, sc: ast.ScenarioNode) -> None:
        self.by_key: dict[str, list[object]] = {}
        for it in sc.items:
            key = it.keyword if isinstance(it, (ast.Item, ast.Block)) else type(it).__name__
            if isinstance(it, (ast.RampStep, ast.RampLinear)):
                key = "ramp"
            self.by_key.setdefault(key, []).append(it)
        for key, lst in self.by_key.items():
            if len(lst) > 1:
                what = {"Workload": "workload", "ramp": "ramp"}.get(key, key)
                for dup in lst[1:]:
                    c.error(f"'{what}' is given more than once", span_of(dup), "keep one")

    def first(self, key: str) -> ast.Item | None:
        lst = self.by_key.get(key)
        return lst[0] if lst else None  # type: ignore[return-value]

    def all(self, key: str) -> list[object]:
        return self.by_key.get(key, [])


_TARGET_EXAMPLE = 'target "mysql://user:password@host:3306/database"'


def _target(c: Checker, t: ast.Item | None) -> tuple[str | None, str | None]:
    """The server address, and where it came from ("env BENCH_DSN") for messages."""
    if t is None:
        return None, None  # the embedded throwaway server
    e = t.value
    target_from = None
    if isinstance(e, ast.Call) and e.name == "env" and e.args and isinstance(e.args[0], ast.Str):
        target_from = f"env {e.args[0].value}"
    v = c.value(e)
    if v is None:
        return None, target_from  # env() unset and no default: the embedded throwaway server
    span = span_of(e)
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




def _seed(c: Checker, item: ast.Item | None) -> tuple[int, bool]:
    """The run's seed, and whether the file gave it (else a random one, shown so that it can be given)."""
    seed = random.SystemRandom().randrange(1, 2**31)
    if item is not None and (n := c.number(item.value, "seed", integer=True, minimum=0)) is not None:
        return int(n), True
    return seed, False


def _server_settings(c: Checker, blocks: list[object]) -> tuple[m.ServerSetting, ...]:
    settings: list[m.ServerSetting] = []
    for blk in blocks:
        for st in blk.entries:  # type: ignore[attr-defined]
            val = c.scalar(st.value)
            if val is not None:
                # as written (256M), or the resolved value of a $reference
                text = str(plain(c.lets.get(st.value.name))) if isinstance(st.value, ast.Var) else c.source(st.value.span)
                settings.append(m.ServerSetting(st.name, val, text, st.span))
            elif isinstance(st.value, ast.Call) and st.value.name == "env":
                c.error(f"{st.name}: the environment variable is not set and there is no default", st.value.span,
                        'give a default: env("NAME", "value")')
    return tuple(settings)


def _workload(c: Checker, sc: ast.ScenarioNode, nodes: list[object]) -> tuple[m.WorkloadSpec | None, tuple[str, ...]]:
    """The workload, and the transaction names conditions are checked against: its own, or when the
    block has errors, those it declares (so that each mistake is reported once)."""
    if not nodes:
        c.error("the scenario has no workload", sc.span,
                "add: workload sysbench oltp_read_write { tables = 1  table_size = 10000 }")
        return None, ()
    node: ast.Workload = nodes[0]  # type: ignore[assignment]
    workload = _workload_spec(c, node)
    if workload is not None:
        return workload, workload.transaction_names
    if node.kind == "tpcc":
        return None, m.TPCC_TRANSACTIONS
    if node.kind == "sysbench":
        # a misspelt test: judge the conditions against the test it most likely means, so the
        # typo is reported once, not again as the "transaction" every condition should name
        return None, tuple(difflib.get_close_matches(node.variant or "", m.SYSBENCH_TESTS, n=1)) or m.SYSBENCH_TESTS
    return None, tuple(t.name for t in node.transactions) or ((node.variant,) if node.variant else ())


def _workers(c: Checker, item: ast.Item | None) -> int | None:
    """Worker processes; None: auto, one per core."""
    if item is None:
        return None
    if isinstance(item.value, ast.Word):
        if item.value.name != "auto":
            c.error(f"workers is auto or a number of processes, not '{item.value.name}'", item.value.span,
                    "workers auto (one per core), or workers 4")
        return None
    n = c.number(item.value, "workers", integer=True, minimum=1)
    return int(n) if n is not None else None


def _conditions(c: Checker, blocks: list[object], tx_names: tuple[str, ...], ramp: m.Ramp | None,
                expect: bool) -> tuple[m.Condition, ...]:
    out: list[m.Condition] = []
    for blk in blocks:
        for node in blk.entries:  # type: ignore[attr-defined]
            cond = condition(c, node, tx_names, ramp, expect=expect)
            if cond is not None:
                out.append(cond)
    return tuple(out)


def _output(c: Checker, item: ast.Item | None) -> str | None:
    if item is None:
        return None
    v = c.value(item.value)
    if isinstance(item.value, ast.Word):
        # a bare word would do as a file name, but `output results` most often means a directory
        # and reads like a keyword: a path is always a string
        c.error("output is a path: write it in double quotes", item.value.span, f'output "{item.value.name}"')
    elif v is None and c.unset_env(item.value) is not None:
        pass  # env() unset and no default: as if no output were given, like a target
    elif not isinstance(v, str):
        c.error('output must be a "path"', item.value.span, 'output "results/{scenario}-{time}.json"')  # type: ignore[union-attr]
    else:
        bad = set(re.findall(r"{([^}]*)}", v)) - {"scenario", "time", "seed"}
        if bad:
            c.error(f"output: unknown placeholder {{{min(bad)}}}", item.value.span,  # type: ignore[union-attr]
                    "placeholders: {scenario}, {time}, {seed}")
        return v
    return None


def _setup(c: Checker, blocks: list[object], workload: m.WorkloadSpec | None) -> tuple[m.Fill | m.SetupSql, ...]:
    setup: list[m.Fill | m.SetupSql] = []
    for blk in blocks:
        if workload is not None and workload.kind != "custom":
            c.error(f"setup is for custom workloads; {workload.kind} prepares its own data", blk.span)  # type: ignore[attr-defined]
        for node in blk.entries:  # type: ignore[attr-defined]
            if isinstance(node, ast.SetupSql):
                setup.append(m.SetupSql(node.sql, node.span))
                continue
            rows = c.count(node.rows, "fill rows")
            columns = []
            for st in node.columns:
                g = c.generator(st.value, "fill")
                if g is not None:
                    columns.append((st.name, g))
            if not node.columns:
                c.error(f"fill {node.table}: no columns", node.span, "fill t rows 1000 { id = sequence(1) }")
            if rows is not None:
                setup.append(m.Fill(node.table, int(rows), tuple(columns), node.span))
    return tuple(setup)


_PARAM = re.compile(r"""('(?:[^'\\]|\\.|'')*'|"(?:[^"\\]|\\.)*"|`[^`]*`|--[^\n]*|/\*.*?\*/)|(?<![:\w]):([A-Za-z_]\w*)""",
                    re.DOTALL)


def _inside_string(text: str, span: Span | None, index: int, length: int) -> Span | None:
    """Where the characters index..index+length of a string's value are in the file."""
    if span is None:
        return None
    start = offset(text, span)
    raw = text[start:offset_end(text, span)]
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


_SYSBENCH_INT = {f.name for f in fields(m.SysbenchWorkload)
                 if f.type in ("int", "float")} - {"retries"}
_SYSBENCH_BOOL = {"range_selects", "skip_trx", "create_secondary"}


def _workload_spec(c: Checker, node: ast.Workload) -> m.WorkloadSpec | None:
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


def _duplicate_settings(c: Checker, settings: tuple[ast.Setting, ...]) -> None:
    seen: set[str] = set()
    for st in settings:
        if st.name in seen:
            c.error(f"'{st.name}' is given twice", name_span(st.span, st.name), "keep one")
        seen.add(st.name)


def _on_off(c: Checker, st: ast.Setting) -> bool | None:
    v = c.value(st.value)
    if not (isinstance(v, str) and v.lower() in ("on", "off")):
        c.error(f"{st.name} is on or off", span_of(st.value), f"{st.name} = on")
        return None
    return v.lower() == "on"


def _unknown_option(c: Checker, st: ast.Setting, workload: str, allowed: list[str]) -> None:
    close = difflib.get_close_matches(st.name, allowed, n=1)
    c.error(f"{workload} has no option '{st.name}'", name_span(st.span, st.name),
            f"did you mean {close[0]}?" if close else "options: " + ", ".join(allowed))


def _sysbench(c: Checker, node: ast.Workload) -> m.SysbenchWorkload | None:
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
                c.error("rand_type is uniform, special, gaussian, pareto or zipfian", span_of(st.value))
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


def _custom(c: Checker, node: ast.Workload) -> m.CustomWorkload | None:
    if node.variant is not None:
        c.error("a custom workload has no test name", node.variant_span, "workload custom { transaction ... }")
    for st in node.settings:
        c.error(f"custom workloads take no option '{st.name}'", name_span(st.span, st.name),
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


def _tpcc(c: Checker, node: ast.Workload) -> m.TpccWorkload | None:
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


def _tpcc_mix(c: Checker, node: ast.Mix) -> tuple[tuple[str, float], ...] | None:
    shares: dict[str, float] = {}
    ok = True
    for entry in node.entries:
        if entry.name not in m.TPCC_TRANSACTIONS:
            close = difflib.get_close_matches(entry.name, list(m.TPCC_TRANSACTIONS), n=1, cutoff=0.5)
            c.error(f"tpcc has no transaction '{entry.name}'", name_span(entry.span, entry.name),
                    f"did you mean {close[0]}?" if close else "transactions: " + ", ".join(m.TPCC_TRANSACTIONS))
            ok = False
            continue
        if entry.name in shares:
            c.error(f"{entry.name} is given twice in the mix", name_span(entry.span, entry.name), "keep one")
            ok = False
            continue
        v = c.numeric(entry.value, f"mix {entry.name}", "a percentage", "45%")
        if not isinstance(v, Quantity) or v.unit != "%":
            if v is not None:
                shown = num(v.value) if isinstance(v, Quantity) else "45"
                c.error("a share of the mix is a percentage" + getattr(v, "origin", ""), span_of(entry.value),
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
        c.error(f"the mix adds up to {num(round(total, 6))}%, not 100%", name_span(node.span, "mix"),
                "TPC-C's minimum mix: new_order 45%  payment 43%  order_status 4%  delivery 4%  stock_level 4%")
        return None
    for name, least in _TPCC_MINIMUM.items():
        entry = next((e for e in node.entries if e.name == name), None)
        share = shares.get(name, 0.0)
        if share >= least:
            continue
        hint = "the run goes ahead, but its figures do not compare with TPC-C results"
        if entry is None:
            c.warning(f"{name} is not in the mix: it is not run (TPC-C's minimum is {num(least)}%, clause 5.2.3)",
                      name_span(node.span, "mix"), hint)
        else:
            c.warning(f"{name} {num(share)}% is below TPC-C's minimum of {num(least)}% (clause 5.2.3)",
                      span_of(entry.value), hint)
    # every transaction, in the order of the specification; one left out of the mix is not run
    return tuple((name, shares.get(name, 0.0)) for name in m.TPCC_TRANSACTIONS)


def _transaction(c: Checker, tx: ast.Transaction) -> m.TransactionSpec | None:
    before = len(c.errors())
    weight = c.number(tx.weight, f"weight of {tx.name}", minimum=0, allow_units=("%",)) if tx.weight else 1.0
    if weight is not None and weight <= 0:
        c.error("a weight must be larger than 0", span_of(tx.weight))
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
