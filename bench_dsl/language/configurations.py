"""A study's configurations that set a `let`, each checked as a scenario of its own, and what makes
that cheap: the parts of the file's own check that read none of the lets a configuration sets are
taken as they are."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TypeVar

from bench_dsl.core.errors import Diagnostic, ScenarioError, Span, span_at
from bench_dsl.language import model as m
from bench_dsl.language import syntax as ast
from bench_dsl.language.values import Checker, offset, offset_end, span_of


class Parts:
    """What a file's own check made of its larger parts (the server block, the workload, the
    conditions, setup), the $names each reads, and what it said: a configuration's check takes a
    part as it is when the part reads no let the configuration sets (a study of 1,000 values of a
    let checked the 1,000 settings of the server block again for each: 5 s)."""

    def __init__(self, made: dict[str, tuple[frozenset[str], object, object, list[Diagnostic]]] | None = None,
                 varied: frozenset[str] | None = None) -> None:
        self.made = {} if made is None else made  # key -> (its $names, `also`, its value, its diagnostics)
        self.varied = varied  # None: the file's own check, which records its parts

    def part(self, c: Checker, key: str, nodes: object, make: Callable[[], _T], also: object = None) -> _T:
        """`make()`, or what it made in the file's own check: `also` is what else it reads (the ramp
        a condition is checked against), which must be the same."""
        if self.varied is not None and key in self.made:
            names, before_also, value, said = self.made[key]
            if not names & self.varied and before_also == also:
                for d in said:
                    (c.error if d.severity == "error" else c.warning)(d.message, d.span, d.hint)
                return value  # type: ignore[return-value]
        start = len(c.diags)
        value = make()
        if self.varied is None:
            self.made[key] = (frozenset(ast.names_read(nodes)), also, value, c.diags[start:])
        return value


_T = TypeVar("_T")


def check_all(tree: ast.FileNode, defines: Mapping[str, str], plan: m.Study,
              check: Callable[[dict[str, str], Parts], m.Scenario], parts: Parts,
              configured: dict[tuple[tuple[str, str], ...], m.Scenario]) -> None:
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
        try:
            configured[tuple(sorted(given.items()))] = check(
                given, Parts(parts.made, read_through_lets(tree.lets, {name for name, _ in conf.lets})))
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


def read_by_conditions(load: m.Ramp | None, blocks: list[object]) -> object:
    """What conditions read of the load (its kind; a step's hold or the run's length for a `for`
    window; a rate's all): a configuration whose let sets the users alone takes the conditions as the
    file's check found them (1,000 conditions checked again for each of 1,000 values: 13 s)."""
    windowed = any(getattr(node, "window", None) is not None for blk in blocks for node in blk.entries)  # type: ignore[attr-defined]
    if isinstance(load, m.StepRamp):
        return "step", load.hold if windowed else None
    if isinstance(load, (m.ConstantRamp, m.LinearRamp)):
        return type(load).__name__, load.duration if windowed else None
    return load
