"""A load of a profile's own syntax: `load NAME { setting* }`. The kinds are handed in (by
bench_dsl.engine.scenario_file, from the load profiles' registry, a plugin's among them), like the
workload and fleet kinds: the language never imports them. A kind reads its settings with the
Checker's words for numbers and durations, and builds its model (a model.Load)."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from typing import Protocol

from bench_dsl.core.errors import Span
from bench_dsl.language import model as m
from bench_dsl.language import syntax as ast
from bench_dsl.language.values import Checker


class LoadKind(Protocol):
    @property
    def name(self) -> str: ...  # `load NAME { }`

    @property
    def usage(self) -> str: ...  # how it is written, for a hint: "load clients { start = 1  max = 8 ... }"

    def model(self, c: Checker, settings: Mapping[str, ast.Setting], span: Span) -> m.Load | None:
        """Its model from its settings, or None after saying (c.error) what is wrong with them."""
        ...


Loads = Mapping[str, LoadKind]


def load(c: Checker, node: ast.LoadNode, kinds: Loads) -> m.Load | None:
    kind = kinds.get(node.kind)
    if kind is None:
        close = difflib.get_close_matches(node.kind, list(kinds), n=1, cutoff=0.5)
        hint = (f"did you mean load {close[0]}?" if close else "loads: " + ", ".join(kinds) if kinds else
                "bench-dsl's own loads are written users N, ramp step { } and rate; `load NAME { }` is one a "
                "plugin adds (BENCH_DSL_PLUGINS)")
        c.error(f"unknown load '{node.kind}'", node.kind_span, hint)
        return None
    settings: dict[str, ast.Setting] = {}
    for s in node.settings:
        if s.name in settings:
            c.error(f"'{s.name}' is given more than once", s.span, "keep one")
            continue
        settings[s.name] = s
    return kind.model(c, settings, node.span)


def unknown_settings(c: Checker, settings: Mapping[str, ast.Setting], known: Iterable[str], usage: str) -> bool:
    """Says each setting a kind does not take; whether there was one."""
    names = list(known)
    bad = [s for name, s in settings.items() if name not in names]
    for s in bad:
        close = difflib.get_close_matches(s.name, names, n=1, cutoff=0.5)
        c.error(f"this load takes no '{s.name}'", s.span, f"did you mean {close[0]}?" if close else usage)
    return bool(bad)
