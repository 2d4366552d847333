"""A study's configurations that set a `let`, each checked as a scenario of its own, and what makes
that cheap: the parts of the file's own check that read none of the lets a configuration sets are
taken as they are."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import TypeVar

from bench_dsl.core.errors import Diagnostic, ScenarioError, Span, span_at
from bench_dsl.language import model as m
from bench_dsl.language import syntax as ast
from bench_dsl.language.values import Checker, EnvText, Place, Quantity, offset, offset_end, span_of


class Parts:
    """What a file's own check made of its larger parts (the server block, the workload, the
    conditions, setup), the $names each reads, and what it said: a configuration's check takes a
    part as it is when the part reads no let the configuration sets (a study of 1,000 values of a
    let checked the 1,000 settings of the server block again for each: 5 s), or when each place
    that reads one (Checker.place) says nothing of the configuration's values, checked once per
    distinct value and key (1,500 `weight $u` over 1,000 values: 15 s). A part taken so holds the
    file's own values: the configuration's scenario is then built when a run asks for it (`stale`)."""

    def __init__(self, made: dict[str, _Made] | None = None, varied: frozenset[str] | None = None,
                 quiet: dict[object, bool] | None = None, screen: bool = True,
                 windows: dict[str, tuple[ast.Expr, ...]] | None = None) -> None:
        self.made = {} if made is None else made  # key -> (its $names, `also`, its value, its diagnostics, places)
        self.varied = varied  # None: the file's own check, which records its parts
        self.quiet = {} if quiet is None else quiet  # (part, place group, values) -> said nothing; shared
        self.screen = screen
        self.windows = {} if windows is None else windows  # a part's distinct `for` windows; shared
        self.values: dict[object, object] = {}  # (part, place group, values) -> what its check gave
        self.stale = False
        self.reused: set[str] = set()

    def part(self, c: Checker, key: str, nodes: object, make: Callable[[], _T], also: object = None) -> _T:
        """`make()`, or what it made in the file's own check: `also` is what else it reads (the ramp
        a condition is checked against), which must be the same. A part taken so while its places
        read the configuration's lets is in `reused`: what it made holds the file's values, and a
        part that reads them (a rate, the workload's weights) asks for the configuration's own."""
        if self.varied is not None and key in self.made:
            names, before_also, value, said, places = self.made[key]
            if before_also == also and (not names & self.varied or (self.screen and self._quiet(c, key, places))):
                if names & self.varied:
                    self.stale = True
                    self.reused.add(key)
                for d in said:
                    (c.error if d.severity == "error" else c.warning)(d.message, d.span, d.hint)
                return value  # type: ignore[return-value]
        if self.varied is not None:
            return make()
        start = len(c.diags)
        c.places = []
        try:
            value = make()
        finally:
            recorded, c.places = c.places, None
        self.made[key] = (frozenset(ast.names_read(nodes)), also, value, c.diags[start:], _groups(nodes, recorded))
        return value

    def _quiet(self, c: Checker, key: str, places: _Groups) -> bool:
        """Whether every place of the part that reads a let this configuration sets says nothing of
        its values: each distinct (key, values) is checked once, by the first place that has it."""
        assert self.varied is not None
        uncovered, groups, _ = places
        if uncovered & self.varied:
            return False
        for group, (place, names, quiet) in groups.items():
            if not names & self.varied:
                continue
            values = _form(place.exprs, c.lets, c.unset_lets)
            if not quiet or values is None:
                return False
            memo = (key, group, values)
            if (ok := self.quiet.get(memo)) is None:
                scratch = aside(c)
                place.check(scratch)
                ok = self.quiet[memo] = not scratch.diags
            if not ok:
                return False
        return True

    def valued(self, c: Checker, key: str) -> Callable[[ast.Expr], object]:
        """What the place of an expression of the part `key` gives at this configuration's lets (a
        weight): each group's value checked once per distinct values, as `_quiet` does."""
        _, groups, at = self.made[key][4]
        seen: dict[object, object] = {}

        def value(e: ast.Expr) -> object:
            group, own = at[id(e)]
            if group in seen:
                return seen[group]
            place = groups[group][0]
            values = _form(place.exprs, c.lets, c.unset_lets)
            if values is None:  # no form to share: this place's own check
                return own.check(aside(c))
            memo = (key, group, values)
            if memo not in self.values:
                self.values[memo] = place.check(aside(c))
            got = seen[group] = self.values[memo]
            return got
        return value


def own_share(parts: Parts, c: Checker, kind: object, nodes: list[object],
              spec: m.WorkloadSpec | None) -> Callable[[str | None, bool], float | None] | None:
    """The share of the transactions a unit counts (nopm: new orders) in a configuration whose
    workload was taken place by place, from its places' values (the weights) when the kind can say
    it so (`share_at`): the configuration's workload is not built (1,500 weights over 1,000 values: 9 s)."""
    share_at = getattr(kind, "share_at", None)
    if "workload" not in parts.reused or share_at is None or spec is None or not nodes:
        return None
    value, node = parts.valued(c, "workload"), nodes[0]
    return lambda transaction, committed: share_at(spec, node, value, transaction, committed)


def aside(c: Checker) -> Checker:
    """A checker with `c`'s lets whose diagnostics are its own."""
    scratch = Checker(c.file, c.text, c.env, c.metrics)
    scratch.lets, scratch.unset_lets = c.lets, c.unset_lets
    scratch.declared, scratch.others = c.declared, dict(c.others)
    return scratch


# the $names a part reads outside its places, and its places grouped by key and the form of what they read
_Groups = tuple[frozenset[str], dict[object, tuple[Place, frozenset[str], bool]], dict[int, tuple[object, Place]]]
_Made = tuple[frozenset[str], object, object, list[Diagnostic], _Groups]


def _groups(nodes: object, places: list[Place]) -> _Groups:
    covered: set[int] = set()
    groups: dict[object, tuple[Place, frozenset[str], bool]] = {}
    at: dict[int, tuple[object, Place]] = {}  # a place of one expression by its expression's id
    for place in places:
        covered.update(id(v) for v in _vars(place.exprs))
        group = (place.key, _form(place.exprs, None, {}))
        first = groups.get(group)
        groups[group] = (first[0] if first else place, frozenset(ast.names_read(place.exprs)),
                         place.quiet and (first is None or first[2]))
        if len(place.exprs) == 1:
            at[id(place.exprs[0])] = (group, place)
    return frozenset(v.name for v in _vars(nodes) if id(v) not in covered), groups, at


def _vars(node: object) -> list[ast.Var]:
    found: list[ast.Var] = []
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, ast.Var):
            found.append(n)
        elif isinstance(n, (list, tuple)):
            stack.extend(n)
        elif hasattr(n, "__dataclass_fields__") and not isinstance(n, Span):
            stack.extend(getattr(n, f) for f in n.__dataclass_fields__)
    return found


_UNKNOWN = object()


def _form(node: object, lets: Mapping[str, object] | None, unset: Mapping[str, str], depth: int = 0) -> object:
    """What a check of `node` can read of it: the tree without its places (spans), each $name as its
    value (lets None: as its name); None when a value has no such form."""
    if depth > 50:
        return None
    if isinstance(node, ast.Var):
        if lets is None:
            return ("$", node.name)
        held = lets.get(node.name, _UNKNOWN)
        if held is _UNKNOWN:
            return None
        if isinstance(held, Quantity):
            shown: object = ("q", held.value, held.unit, held.origin)
        elif isinstance(held, EnvText):
            shown = ("env", str(held), held.variable)
        elif isinstance(held, ast.Call):
            shown = _form(held, lets, unset, depth + 1)
            if shown is None:
                return None
        else:
            shown = (type(held).__name__, held, unset.get(node.name))
        return ("$", node.name, shown)
    if isinstance(node, (list, tuple)):
        parts = tuple(_form(n, lets, unset, depth + 1) for n in node)
        return None if any(p is None and n is not None for p, n in zip(parts, node)) else parts
    if isinstance(node, Span):
        return ()
    if hasattr(node, "__dataclass_fields__"):
        fields = [f for f in node.__dataclass_fields__ if f != "span" and not f.endswith("_span")]
        parts = tuple(_form(getattr(node, f), lets, unset, depth + 1) for f in fields)
        if any(p is None and getattr(node, f) is not None for p, f in zip(parts, fields)):
            return None
        return (type(node).__name__, *parts)
    return node


_T = TypeVar("_T")


def check_all(tree: ast.FileNode, defines: Mapping[str, str], plan: m.Study,
              check: Callable[[dict[str, str], Parts], m.Scenario], parts: Parts,
              configured: dict[tuple[tuple[str, str], ...], m.Scenario | m.Deferred]) -> None:
    """Each configuration that sets a `let` is a scenario of its own (`table_size = $rows` with a
    value out of range): checked now, not found out after the first configurations have run; the
    scenarios kept for the plan and the run."""
    diags: list[Diagnostic] = []
    seen: set[tuple[str, object]] = set()
    checked: set[tuple[tuple[str, str], ...]] = set()  # a let crossed with settings: its values checked once
    others: dict[str, str] = {}
    for conf in plan.configurations:
        if not conf.lets or conf.lets in checked:
            continue
        checked.add(conf.lets)
        given = {**defines, **dict(conf.lets)}
        varied = read_through_lets(tree.lets, {name for name, _ in conf.lets})
        conf_parts = Parts(parts.made, varied, parts.quiet, windows=parts.windows)
        try:
            scenario = check(given, conf_parts)
            whole = functools.partial(check, given, Parts(parts.made, varied, screen=False, windows=parts.windows))
            configured[tuple(sorted(given.items()))] = (
                m.Deferred(whole, scenario.ramp, scenario.warmup) if conf_parts.stale else scenario)
        except ScenarioError as err:
            for d in err.diagnostics:
                span = in_vary(tree, dict(conf.lets), d.span)
                if d.severity == "error" and (d.message, span) not in seen:
                    seen.add((d.message, span))
                    diags.append(Diagnostic(f"with {conf.label}: {d.message}", span, d.hint))
            others.update(err.others)
    if diags:
        raise ScenarioError(diags, tree.text, others)


def in_vary(tree: ast.FileNode, lets: Mapping[str, str], span: Span | None) -> Span | None:
    """A span in a configuration's let value, given as -D would be: where the value stands in the
    file's vary (`vary { $x = [$later] }` named a -D that was never given)."""
    if span is None or (name := span.file.removeprefix("-D ")) not in lets:
        return span
    vary_node = next((it for it in tree.scenario.items if isinstance(it, ast.Vary)), None)
    if vary_node is None:
        return span
    for line in vary_node.lines:
        for e in line.values if line.key == f"${name}" else ():
            at = span_of(e)
            if at is not None and tree.text[offset(tree.text, at):offset_end(tree.text, at)] == lets[name]:
                return span_at(tree.file, tree.text, offset(tree.text, at) + span.col - 1, span.end_col - span.col)
    return span


def read_through_lets(lets: list[ast.Let], names: set[str]) -> frozenset[str]:
    """`names`, and every let whose value reads one of them (`let b = $a` changes with $a)."""
    read = {let.name: ast.names_read(let.value) for let in lets}
    grew = True
    while grew:
        more = {name for name, reads in read.items() if reads & names} - names
        names |= more
        grew = bool(more)
    return frozenset(names)


def read_by_conditions(c: Checker, parts: Parts, key: str, load: m.Ramp | None, blocks: list[object]) -> object:
    """What conditions read of the load (its kind; a rate's all; for `for` windows, whether each
    fits a step's hold or the run's length, and that length when one does not): a configuration whose
    let sets the users or the run's length alone takes the conditions as the file's check found them
    (1,000 conditions checked again for each of 1,000 values: 13 s; 1,500 windows and 1,000 lengths: 17 s)."""
    if load is None or load.open_loop:  # a rate's conditions read all of it
        return load
    kind, (length, _, _) = load.kind, load.window()
    if (windows := parts.windows.get(key)) is None:  # the file's check: the distinct windows, once
        distinct: dict[object, ast.Expr] = {}
        for blk in blocks:
            for node in blk.entries:  # type: ignore[attr-defined]
                if (w := getattr(node, "window", None)) is not None:
                    distinct.setdefault(_form(w, None, {}) or id(w), w)
        windows = parts.windows[key] = tuple(distinct.values())
    if not windows:
        return kind, None
    scratch = aside(c)  # a window with errors said by the conditions' check: the length is read
    fits = all((s := scratch.duration(w, "for")) is not None and s <= length for w in windows)
    return kind, "fits" if fits else length
