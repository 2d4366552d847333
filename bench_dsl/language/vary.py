"""`vary { }` and `repeat N`: the configurations of a study, checked line by line.

A line varies a server setting (`innodb_io_capacity = [200, 2000]`), the throwaway server's
directory (`server.dir = ["/var/tmp", "/dev/shm"]`) or a `let` of the file (`$rows = [1K, 10K]`).
Several lines are crossed (every combination), or paired with `vary { } zip`. A configuration
that sets a `let` is validated as a whole by language.validate.check, as if given with -D."""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping

from bench_dsl.language import model as m
from bench_dsl.language import syntax as ast
from bench_dsl.language.server import value as setting_value
from bench_dsl.language.server_settings import refusal
from bench_dsl.language.values import Checker, EnvText, span_of

MAX_CONFIGURATIONS = 1000  # a study of more is a typo (a line too many); each is a run of its own
MAX_RUNS = 10000
MAX_REPEAT = 1000
_VARY_EXAMPLE = ('vary { innodb_io_capacity = [200, 2000]  server.dir = ["/var/tmp", "/dev/shm"]  '
                 "$rows = [1K, 10K] }")


def study(c: Checker, vary: ast.Vary | None, repeat: ast.Item | None, defines: Mapping[str, str],
          settings: tuple[m.ServerSetting, ...], embedded: bool) -> m.Study | None:
    """The study the file declares; None when it declares neither `vary` nor `repeat`."""
    if vary is None and repeat is None:
        return None
    times = 1
    if repeat is not None and (n := c.number(repeat.value, "repeat", integer=True, minimum=1)) is not None:
        if n > MAX_REPEAT:
            c.error(f"repeat {int(n)}: at most {MAX_REPEAT}", span_of(repeat.value),
                    "3 to 5 repeats show the spread of a machine; each one is a whole run")
        else:
            times = int(n)
    if vary is None:
        return m.Study((m.Configuration("c1", ()),), times)
    lines = _lines(c, vary, defines, settings, embedded)
    if lines is None:
        return None
    if vary.zip:
        lengths = {len(values) for _, _, values in lines}
        if len(lengths) > 1:
            first = len(lines[0][2])
            for line, (_, _, values) in zip(vary.lines, lines):
                if len(values) != first:
                    c.error(f"vary zip pairs the lines' values: this line has {len(values)}, the first {first}",
                            line.span, "give every line as many values, or leave out zip to cross them")
            return None
        combos = list(zip(*(values for _, _, values in lines)))
    else:
        count = math.prod(len(values) for _, _, values in lines)
        if count > MAX_CONFIGURATIONS:
            c.error(f"vary makes {count} configurations; at most {MAX_CONFIGURATIONS}", vary.span,
                    "fewer values per line, or `vary { ... } zip` to pair the lines instead of crossing them")
            return None
        combos = list(itertools.product(*(values for _, _, values in lines)))
    if len(combos) * times > MAX_RUNS:
        c.error(f"{len(combos)} configurations, {times} times each: {len(combos) * times} runs, at most {MAX_RUNS}",
                repeat.span if repeat is not None else vary.span, "fewer repeats or fewer values")
        return None
    configurations = []
    for i, combo in enumerate(combos, 1):
        shown, sets, lets, where = [], [], [], None
        for (key, kind, _), value in zip(lines, combo):
            text, payload = value
            shown.append((key, text))
            if kind == "setting":
                sets.append(payload)
            elif kind == "dir":
                where = payload
            else:
                lets.append((key[1:], payload))
        configurations.append(m.Configuration(f"c{i}", tuple(shown), tuple(sets), where, tuple(lets)))
    return m.Study(tuple(configurations), times, vary.zip, tuple(key for key, _, _ in lines))


Value = tuple[str, object]  # (as shown, what the configuration applies)


def _lines(c: Checker, vary: ast.Vary, defines: Mapping[str, str], settings: tuple[m.ServerSetting, ...],
           embedded: bool) -> list[tuple[str, str, list[Value]]] | None:
    """Each line as (key, kind, values), or None when one of them is wrong (every problem said)."""
    if not vary.lines:
        c.error("vary is empty", vary.span, _VARY_EXAMPLE)
        return None
    fixed = {s.name for s in settings}
    seen: set[str] = set()
    out: list[tuple[str, str, list[Value]]] = []
    ok = True
    for line in vary.lines:
        key = line.key
        if key in seen:
            c.error(f"{key} is varied twice", line.key_span, "one line per name, with every value in its list")
            ok = False
            continue
        seen.add(key)
        kind = _kind(c, line, defines, fixed, embedded)
        if kind is None:
            ok = False
            continue
        if not line.values:
            c.error(f"{key}: no values", line.span, f"{key} = [first, second]")
            ok = False
            continue
        values: list[Value] = []
        texts: set[str] = set()
        for e in line.values:
            v = _value(c, key, kind, e, embedded)
            if v is None:
                ok = False
                continue
            if v[0] in texts:
                c.error(f"{key}: {v[0]} is given twice", span_of(e), "each value once")
                ok = False
            texts.add(v[0])
            values.append(v)
        out.append((key, kind, values))
    return out if ok else None


def _kind(c: Checker, line: ast.VaryLine, defines: Mapping[str, str], fixed: set[str], embedded: bool) -> str | None:
    key = line.key
    if key.startswith("$"):
        name = key[1:]
        if name not in c.lets:
            c.error(f"vary {key}: the file declares no 'let {name}'", line.key_span,
                    f"declare it before the scenario: let {name} = <its usual value>")
            return None
        if name in defines:
            c.error(f"-D {name}: {key} is varied by this line", line.key_span,
                    f"run some of its values with --only '{name}=<value>' instead of -D")
            return None
        return "let"
    if key == "server.dir":
        if not embedded:
            c.error("server.dir is where the throwaway server keeps its files; this scenario has a target",
                    line.key_span, "leave out the target to compare directories (disks) of this machine")
            return None
        return "dir"
    if "." in key:
        c.error(f"vary {key}: the one dotted name is server.dir", line.key_span,
                "a server setting (innodb_io_capacity), server.dir, or a $variable of a let")
        return None
    if key in fixed:
        c.error(f"{key} is set in server {{ }} and varied here", line.key_span,
                f"remove {key} from server {{ }}: each configuration sets its own value")
        return None
    if embedded and (why := refusal(key)) is not None:
        c.error(f"the throwaway server does not take {key}: {why[0]}", line.key_span,
                "vary settings of the server's behaviour (innodb_*, sync_binlog, ...)")
        return None
    if key == "dir":
        c.error("vary dir: the throwaway server's directory is written server.dir", line.key_span,
                'server.dir = ["/var/tmp", "/dev/shm"]')
        return None
    return "setting"


def _value(c: Checker, key: str, kind: str, e: ast.Expr, embedded: bool) -> Value | None:
    if kind == "let":
        before = c.error_count
        if c.value(e) is None:
            if c.error_count == before:  # not said already (an unknown $name inside, say)
                c.error(f"{key}: not a value", span_of(e), f"{key} = [10000, 100000]")
            return None
        text = c.source(span_of(e))
        return (e.value if isinstance(e, ast.Str) else text), text
    if kind == "dir":
        v = c.value(e)
        if not isinstance(v, str) or isinstance(e, ast.Word):
            c.error("server.dir values are directories in double quotes", span_of(e),
                    'server.dir = ["/var/tmp", "/dev/shm"]')
            return None
        if "\x00" in v or not v.strip():
            c.error("server.dir: not a directory (empty, or with a NUL character)", span_of(e), '"/var/tmp"')
            return None
        return (str(v), str(v))
    before = c.error_count
    val = setting_value(c, key, e, embedded)
    if val is None:
        if c.error_count > before:  # said already (a log_bin path, a size that is no number, a number too large)
            return None
        c.error(f"{key}: not a value a server setting takes", span_of(e), f"{key} = [200, 2000]")
        return None
    resolved = isinstance(e, ast.Var) or isinstance(c.value(e), EnvText)
    text = str(e.value) if isinstance(e, ast.Str) else (str(val) if resolved else c.source(span_of(e)))
    return text, m.ServerSetting(key, val, text, span_of(e))
