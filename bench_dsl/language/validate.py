"""Syntax tree -> typed Scenario: the checks of the language as a whole (`let` and -D, target,
seed, server settings, workers, the ramp, conditions, output, setup), with the workload block
handed to its kind's plugin (bench_dsl/workloads/registry.py). Collects every diagnostic before
giving up."""

from __future__ import annotations

import difflib
import functools
import itertools
import os
import re
import string
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from bench_dsl.core.dsn import Dsn, parse_dsn, redact
from bench_dsl.core.errors import Diagnostic, ScenarioError, Span, normal_newlines
from bench_dsl.language import configurations, loads, placement, power, ramp, rate, server, vary
from bench_dsl.language import model as m
from bench_dsl.language import syntax as ast
from bench_dsl.language.comparisons import Comparison
from bench_dsl.language.conditions import condition, unsourced
from bench_dsl.language.metric_decls import MetricDecl, Table
from bench_dsl.language.parser import parse, parse_expr
from bench_dsl.language.values import Checker, EnvText, plain, span_of


class WorkloadKind(Protocol):
    """What the language asks of a workload kind (bench_dsl.workloads.plugin.WorkloadPlugin is one):
    the kinds are handed in by the caller (bench_dsl.workloads.registry.load), so the language never
    imports the workloads that are built on it."""

    @property
    def kind(self) -> str: ...
    @property
    def validate(self) -> Callable[[Checker, ast.WorkloadNode], m.WorkloadSpec | None]: ...
    @property
    def declared_transactions(self) -> Callable[[ast.WorkloadNode], tuple[str, ...]]: ...
    @property
    def takes_setup(self) -> bool: ...
    @property
    def metrics(self) -> tuple[MetricDecl, ...]: ...  # its own (TPC-C's nopm): conditions can name them
    @property
    def share(self) -> Callable[[m.WorkloadSpec, str | None, bool], float | None] | None: ...  # rate.RatedKind
    @property
    def refuses_rate(self) -> Callable[[m.WorkloadSpec], tuple[str, str] | None] | None: ...


def metrics_of(workloads: Mapping[str, WorkloadKind], own: Iterable[MetricDecl | Comparison] = ()) -> Table:
    """The metrics a scenario can name: the core ones, every workload kind's own (a custom
    workload with a transaction new_order has nopm too) and those declared beside the kinds (`own`:
    a plugin's figure of the server), with the comparisons a condition may write (a plugin's among `own`)."""
    own = tuple(own)
    return Table.of(*(k.metrics for k in workloads.values()), [d for d in own if isinstance(d, MetricDecl)],
                    comparisons=[d for d in own if isinstance(d, Comparison)])


Kinds = Mapping[str, WorkloadKind]


def load(path: str | Path, defines: Mapping[str, str] | None = None, env: Mapping[str, str] | None = None,
         text: str | None = None, study: bool = True, *, workloads: Kinds, fleets: placement.Fleets,
         metrics: tuple[MetricDecl | Comparison, ...] = (), load_kinds: loads.Loads | None = None) -> m.Scenario:
    """Read, parse and validate a .bench file. Raises ScenarioError with every diagnostic.
    study=False: one configuration's scenario (its `vary` values given as `defines`)."""
    path = str(path)
    if text is None:
        text = read_source(path)
    try:
        table = metrics_of(workloads, metrics)
        tree = parse(text, path, tuple(table.throughput_units()), tuple(table.comparison_words()))
        return check(tree, defines or {}, os.environ if env is None else env, study, workloads=workloads, fleets=fleets,
                     metrics=metrics, load_kinds=load_kinds)
    except RecursionError:  # env(env(env(...))) thousands deep: no scenario needs it
        raise ScenarioError([Diagnostic("expressions are nested too deeply", Span(path, 1, 1, 1, 2),
                                        "a scenario's values are a call or two deep: env(\"NAME\", default)")],
                            text) from None


MAX_SOURCE_BYTES = 1 << 20  # a scenario is a page or two; this bounds what a mistaken path can cost
# Names, numbers and signs (a string or a comment is one): the parser and the checks take tens of
# microseconds over each, so this keeps `check` of any file well under 2 s. A study of 1,000 values
# on each of three lines has about 6,000.
MAX_TOKENS = 20_000
_TOKEN = re.compile(r'"""[\s\S]*?"""|"(?:[^"\\\n]|\\.)*"?|#[^\n]*|[\w.$%]+|\S')


def read_source(path: str) -> str:
    """A .bench file's text: UTF-8 (a BOM is allowed), at most MAX_SOURCE_BYTES. Anything else is a
    diagnostic that says what the file is and where it goes wrong, never a decoding traceback."""
    def fail(message: str, hint: str, line: int = 1, col: int = 1, shown: str | None = None) -> ScenarioError:
        return ScenarioError([Diagnostic(message, Span(path, line, col, line, col + 1), hint)], shown)
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_SOURCE_BYTES + 1)
    except OSError as exc:
        raise ScenarioError([Diagnostic(f"cannot read {path}: {exc.strerror}", None,
                                        "give the path of a .bench file")], None) from None
    if len(data) > MAX_SOURCE_BYTES:
        raise fail(f"{path} is larger than {MAX_SOURCE_BYTES >> 20} MiB: not a scenario",
                   "a .bench file is text of a few kilobytes; check the path")
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise fail("the file is UTF-16 text", "save it as UTF-8 (most editors: 'Save with encoding')")
    data = data.removeprefix(b"\xef\xbb\xbf")  # a UTF-8 byte order mark, as some editors write
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line, col = _place(data[:exc.start].decode("utf-8", errors="replace"))
        shown = normal_newlines(data.decode("utf-8", errors="replace"))
        raise fail(f"byte 0x{data[exc.start]:02x} is not UTF-8 text" + (" (a binary file?)" if b"\x00" in data else ""),
                   "save the file as UTF-8 (it may be Latin-1 or another encoding)", line, col, shown) from None
    if "\x00" in text:
        raise fail("the file holds NUL characters: not a text file", "give the path of a .bench file",
                   *_place(text[:text.index("\x00")]))
    for past in itertools.islice(_TOKEN.finditer(text), MAX_TOKENS, None):
        raise fail(f"the file holds more than {MAX_TOKENS:,} names, numbers and signs: not a scenario",
                   "a scenario is a page or two; a study varies at most 1,000 configurations",
                   *_place(text[:past.start()]), normal_newlines(text))
    return text


def _place(before: str) -> tuple[int, int]:
    """The line and column that follow `before`, lines as the parser counts them."""
    before = normal_newlines(before)
    return before.count("\n") + 1, len(before) - (before.rfind("\n") + 1) + 1


def check(tree: ast.FileNode, defines: Mapping[str, str], env: Mapping[str, str], study: bool = True, *,
          workloads: Kinds, fleets: placement.Fleets, parts: configurations.Parts | None = None,
          metrics: tuple[MetricDecl | Comparison, ...] = (), load_kinds: loads.Loads | None = None) -> m.Scenario:
    """The scenario of a parsed file. Each part is read in turn (the order in which the parts
    report is the order of the file once sorted); raises ScenarioError with every diagnostic.
    A study's configurations that set a `let` are each checked as a whole too, taking the parts of
    the file's own check that read none of the lets they set (`parts`)."""
    c = Checker(tree.file, tree.text, env, metrics_of(workloads, metrics))
    parts = parts or configurations.Parts()
    parameters = _lets(c, tree.lets, defines)
    sc = tree.scenario
    items = _Items(c, sc)
    given, target_from = _target(c, items.first("target"))
    seed, seed_given = _seed(c, items.first("seed"))
    settings, server_dir, replicas = parts.part(
        c, "server", (items.all("server"), items.first("target")),
        lambda: server.settings(c, items.all("server"), embedded=given is None))
    replica_dsns = server.replicas(c, items.all("replica"), embedded=given is None)
    monitor = server.monitor(c, items.first("monitor"))
    power_from = power.source(c, items.first("power"), monitor)
    workload, tx_names = parts.part(c, "workload", items.all("workload"),
                                    lambda: _workload(c, sc, items.all("workload"), workloads))
    # the file's workload, its places quiet with this configuration's values: a rate that reads the
    # mix (a rate in nopm: new_order's share of it) builds the configuration's own, said nothing of
    own = ((lambda: _workload(configurations.aside(c), sc, items.all("workload"), workloads)[0])
           if "workload" in parts.reused else None)
    # a target line whose env() is unset now may be set when the file runs: `bench run` says so then
    workers, cluster = placement.workers(c, items.first("workers"), items.first("target") is not None, fleets)
    on_worker_loss = placement.worker_loss(c, items.first("on worker loss"))
    warmup = ramp.warmup(c, items.first("warmup"))
    report_every = ramp.report_every(c, items.first("report"))
    kind = workloads.get(workload.kind) if workload else None
    load = _load(c, items, warmup, sc, workload, kind, load_kinds or {}, (own, configurations.own_share(
        parts, c, kind, items.all("workload"), workload)))
    users = ramp.bounded_run(c, load, warmup, span_of(items.first("ramp") or items.first("rate")
                                                      or items.first("duration")))
    stop = parts.part(c, "stop", items.all("stop"), lambda: _conditions(c, items.all("stop"), tx_names, users,
                                                                       expect=False),
                      also=(configurations.read_by_conditions(c, parts, "stop", users, items.all("stop")), tx_names))
    expect = parts.part(c, "expect", items.all("expect"), lambda: _conditions(c, items.all("expect"), tx_names, users,
                                                                             expect=True),
                        also=(configurations.read_by_conditions(c, parts, "expect", users, items.all("expect")),
                              tx_names))
    unsourced(c, stop + expect, replicas=bool(replicas or replica_dsns), power=power_from is not None)
    output = _output(c, items.first("output"))
    setup = parts.part(c, "setup", items.all("setup"), lambda: _setup(c, items.all("setup"), workload, workloads),
                       also=(workload.kind if workload else None,))
    plan = None
    if study:
        plan = vary.study(c, items.first("Vary"), items.first("repeat"), defines, settings,  # type: ignore[arg-type]
                                   embedded=given is None)

    # in the order of the file, as a person reads it and fixes it; -D problems (no place) first
    c.diags.sort(key=lambda d: (d.span.line, d.span.col) if d.span and d.span.file == tree.file else (0, 0))
    errors = c.errors()
    if errors or workload is None or users is None:
        if not errors:
            c.error("the scenario is incomplete", sc.span, "a scenario needs a workload and users (or a ramp)")
        raise ScenarioError(c.diags, tree.text, c.others)
    scenario = m.Scenario(
        name=sc.name, file=tree.file, text=tree.text, parameters=parameters, target=given.text if given else None,
        target_dsn=given.dsn if given else None, target_from=target_from,
        seed=seed, seed_given=seed_given, server_settings=settings, workload=workload, ramp=users,
        warmup=warmup, report_every=report_every, stop=stop, expect=expect, output=output,
        setup=setup, workers=workers, cluster=cluster, on_worker_loss=on_worker_loss,
        warnings=tuple(d for d in c.diags if d.severity != "error"),
        study=plan, server_dir=server_dir, replicas=replicas, replica_dsns=replica_dsns, monitor=monitor,
        power=power_from,
    )
    if plan is not None:
        configurations.check_all(
            tree, defines, plan,
            lambda given, conf_parts: check(tree, given, env, study=False, workloads=workloads, fleets=fleets,
                                            metrics=metrics, load_kinds=load_kinds, parts=conf_parts),
            parts, scenario.configured)
    return scenario


def _lets(c: Checker, lets: list[ast.Let], defines: Mapping[str, str]) -> dict[str, object]:
    """Every `let`, with -D overrides, into c.lets; the values as the result's parameters show them."""
    declared = c.declared = {let.name for let in lets}
    for name in defines:
        if name not in declared:
            close = difflib.get_close_matches(name, list(declared), n=1)
            c.error(f"-D {name}: the file declares no 'let {name}'",
                    None, f"did you mean -D {close[0]}=...?" if close else
                    ("declared: " + ", ".join(sorted(declared)) if declared else "add: let " + name + " = ..."))
    parameters: dict[str, object] = {}
    for let in lets:
        if let.name in c.lets:
            c.error(f"{let.name} is declared twice", let.span, f"keep one 'let {let.name} = ...'")
        expr = let.value
        if let.name in defines:
            c.others[f"-D {let.name}"] = normal_newlines(defines[let.name])  # what its spans point into
            try:
                expr = parse_expr(defines[let.name], f"-D {let.name}", tuple(c.metrics.throughput_units()))
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


def _load(c: Checker, items: _Items, warmup: float, sc: ast.ScenarioNode, workload: m.WorkloadSpec | None,
          kind: WorkloadKind | None, load_kinds: loads.Loads, own: tuple[Callable[[], m.WorkloadSpec | None] | None,
                                                Callable[[str | None, bool], float | None] | None]) -> m.Ramp | None:
    """The load: users (closed loop: `users`, `ramp`), a rate (open loop: `rate`, `users max`), or a
    profile's own (`load NAME { }`)."""
    rate_node, pool, warmup_rate = items.first("rate"), items.first("users"), items.first("warmup rate")
    if isinstance(own_load := items.first("load"), ast.LoadNode):
        for other in (rate_node, pool, items.first("ramp"), items.first("duration"), warmup_rate):
            if other is not None:
                c.error(f"load {own_load.kind} {{ }} says the whole load: this is another one", span_of(other),
                        "keep the load, or write users, a ramp or a rate in its place")
        return loads.load(c, own_load, load_kinds)
    if rate_node is not None:
        if (closed := items.first("ramp")) is not None:
            c.error("give either a rate or a ramp of users, not both", span_of(closed),
                    "a rate (open loop: transactions due whatever the replies), or a ramp (closed loop)")
        return rate.load(c, rate_node, pool, items.first("duration"), warmup_rate, warmup,  # type: ignore[arg-type]
                         workload, kind, *own)
    if warmup_rate is not None:
        c.error("a warmup's rate needs the run's rate", span_of(warmup_rate), "add: rate 1000 tps")
    if isinstance(pool, ast.UsersPool):
        c.error("users max N is the pool that serves an open-loop rate", pool.span,
                "users N for closed-loop users, or add the rate: rate 1000 tps")
        return None
    return ramp.ramp(c, pool, items.first("ramp"), items.first("duration"), sc)  # type: ignore[arg-type]


class _Items:
    """The scenario's items by keyword (both ramps' "ramp", a vary's "Vary"); each one given
    more than once is reported, but `replica` (one per replica)."""

    MANY = ("replica",)

    def __init__(self, c: Checker, sc: ast.ScenarioNode) -> None:
        self.by_key: dict[str, list[object]] = {}
        warmup = next((it for it in sc.items if isinstance(it, ast.Item) and it.keyword == "warmup"), None)
        for it in sc.items:
            key = it.keyword if isinstance(it, (ast.Item, ast.Block)) else type(it).__name__
            if isinstance(it, (ast.RampStep, ast.RampLinear)):
                key = "ramp"
            elif isinstance(it, ast.UsersPool):
                key = "users"
            elif isinstance(it, ast.LoadNode):
                key = "load"
            elif isinstance(it, ast.WorkloadNode):
                key = "workload"
            elif isinstance(it, ast.Rate):
                key = "warmup rate" if rate.on_warmup_line(warmup, it) else "rate"
            self.by_key.setdefault(key, []).append(it)
        for key, lst in self.by_key.items():
            if len(lst) > 1 and key not in self.MANY:
                what = {"Vary": "vary"}.get(key, key)
                for dup in lst[1:]:
                    c.error(f"'{what}' is given more than once", span_of(dup), "keep one")

    def first(self, key: str) -> ast.Item | None:
        lst = self.by_key.get(key)
        return lst[0] if lst else None  # type: ignore[return-value]

    def all(self, key: str) -> list[object]:
        return self.by_key.get(key, [])


_TARGET_EXAMPLE = 'target "mysql://user:password@host:3306/database"'


@dataclass(frozen=True, slots=True)
class TargetSpec:
    text: str  # as the file (or the environment) wrote it
    dsn: Dsn  # parsed here, once


def _target(c: Checker, t: ast.Item | None) -> tuple[TargetSpec | None, str | None]:
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
        c.error("target must be a mysql:// address", span,
                _TARGET_EXAMPLE + " (or leave it out for a throwaway server)")
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
        dsn = parse_dsn(v)
    except ValueError as exc:  # a port that is not a number, an unknown option ...
        # the message names the address (redacted) and what is wrong with it: not said twice
        c.error(f"target: {held}{exc}", span, _TARGET_EXAMPLE)
        return None, target_from
    return TargetSpec(v, dsn), target_from




def _seed(c: Checker, item: ast.Item | None) -> tuple[int | None, bool]:
    """The file's seed, and whether it gave one (None: a run draws its own when it starts)."""
    if item is not None and (n := c.number(item.value, "seed", integer=True, minimum=0)) is not None:
        return int(n), True
    return None, False


def _workload(c: Checker, sc: ast.ScenarioNode, nodes: list[object],
              workloads: Kinds) -> tuple[m.WorkloadSpec | None, tuple[str, ...]]:
    """The workload, validated by its kind's plugin, and the transaction names conditions are
    checked against: its own, or when the block has errors, those it declares (so that each
    mistake is reported once)."""
    if not nodes:
        c.error("the scenario has no workload", sc.span,
                "add: workload sysbench oltp_read_write { tables = 1  table_size = 10000 }")
        return None, ()
    node: ast.WorkloadNode = nodes[0]  # type: ignore[assignment]
    plugin = workloads.get(node.kind)
    if plugin is None:
        close = difflib.get_close_matches(node.kind, list(workloads), n=1)
        c.error(f"unknown workload '{node.kind}'", node.kind_span,
                f"did you mean {close[0]}?" if close else "workloads: " + ", ".join(workloads))
        return None, ast.transactions_named(node)
    workload = plugin.validate(c, node)
    if workload is None:
        return None, plugin.declared_transactions(node)
    return workload, workload.transaction_names


def _conditions(c: Checker, blocks: list[object], tx_names: tuple[str, ...], ramp: m.Ramp | None,
                expect: bool) -> tuple[m.Condition, ...]:
    out: list[m.Condition] = []
    for blk in blocks:
        for node in blk.entries:  # type: ignore[attr-defined]
            cond = c.place(("condition", expect), (node,),
                           functools.partial(condition, node=node, txs=tx_names, ramp=ramp, expect=expect))
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
        c.error('output must be a "path"', item.value.span, 'output "results/{scenario}-{time}.json"')
    else:
        span = item.value.span
        try:
            fields = {f for _, f, _, _ in string.Formatter().parse(v) if f is not None}
        except ValueError:  # "results/{scenario": a brace that is never closed
            c.error("output: a '{' without its '}'", span, "placeholders: {scenario}, {time}, {seed}; "
                    "a brace of the name itself is written {{ or }}")
            return None
        bad = fields - {"scenario", "time", "seed"}
        if bad:
            c.error(f"output: unknown placeholder {{{min(bad)}}}", span, "placeholders: {scenario}, {time}, {seed}")
            return None
        if "\x00" in v or not v.strip():
            c.error("output: not a path (empty, or with a NUL character)", span, 'output "results/{scenario}.json"')
            return None
        return v
    return None


def _setup(c: Checker, blocks: list[object], workload: m.WorkloadSpec | None,
           workloads: Kinds) -> tuple[m.Fill | m.SetupSql, ...]:
    setup: list[m.Fill | m.SetupSql] = []
    for blk in blocks:
        if workload is not None and not workloads[workload.kind].takes_setup:
            kinds = " and ".join(p.kind for p in workloads.values() if p.takes_setup)
            c.error(f"setup is for {kinds} workloads; {workload.kind} prepares its own data", blk.span,  # type: ignore[attr-defined]
                    "remove the setup block, or use workload custom with your own tables")
        for node in blk.entries:  # type: ignore[attr-defined]
            if isinstance(node, ast.SetupSqlNode):
                setup.append(m.SetupSql(node.sql, node.span))
                continue
            rows = c.place(("fill rows",), (node.rows,),
                           functools.partial(Checker.count, e=node.rows, what="fill rows"))
            columns = []
            for st in node.columns:
                g = c.place(("fill",), (st.value,), functools.partial(Checker.generator, e=st.value, where="fill"))
                if g is not None:
                    columns.append((st.name, g))
            if not node.columns:
                c.error(f"fill {node.table}: no columns", node.span, "fill t rows 1000 { id = sequence(1) }")
            if rows is not None:
                setup.append(m.Fill(node.table, int(rows), tuple(columns), node.span))
    return tuple(setup)
