"""The scenario's server parts: `server { }` (settings, and `dir` and `replicas`, which are not
server variables), `replica "mysql://..."` and `monitor "http://..."`."""

from __future__ import annotations

import functools
import re

from bench_dsl.core.dsn import Dsn, parse_dsn, redact
from bench_dsl.language import model as m
from bench_dsl.language import syntax as ast
from bench_dsl.language.server_settings import log_bin_off, refusal, value_problem
from bench_dsl.language.values import Checker, EnvText, Quantity, env_quantity, plain, span_of

MAX_REPLICAS = 8  # throwaway replicas a scenario may start, and replicas of its own it may watch


def settings(c: Checker, blocks: list[object], embedded: bool) -> tuple[tuple[m.ServerSetting, ...], str | None, int]:
    """The server's settings, `dir` (where a throwaway server keeps its files) and `replicas`."""
    settings: list[m.ServerSetting] = []
    server_dir: str | None = None
    replicas = 0
    for blk in blocks:
        for st in blk.entries:  # type: ignore[attr-defined]
            if st.name == "replicas":
                if not embedded:
                    c.error("replicas = N starts throwaway replicas of the throwaway server; this scenario has a "
                            "target", st.span, 'name the target\'s replicas instead: replica "mysql://user@host/db"')
                elif (n := c.number(st.value, "replicas", integer=True, minimum=0)) is not None:
                    if n > MAX_REPLICAS:
                        c.error(f"replicas = {int(n)}: at most {MAX_REPLICAS}", st.span, "replicas = 1 shows the lag")
                    else:
                        replicas = int(n)
                continue
            if st.name == "dir":
                v = c.value(st.value)
                if not embedded:
                    c.error("dir is where the throwaway server keeps its files; this scenario has a target",
                            st.span, "leave out the target, or remove dir")
                elif not isinstance(v, str) or isinstance(st.value, ast.Word) or "\x00" in v or not v.strip():
                    c.error("server dir is a directory in double quotes", st.span, 'dir = "/var/tmp"')
                else:
                    server_dir = str(v)
                continue
            if embedded and (why := refusal(st.name)) is not None:
                c.error(f"the throwaway server does not take {st.name}: {why[0]}", st.span, why[1])
                continue
            # a place (Checker.place): what is said rests on the name and the value alone; log_bin's
            # value is read again below, with the replicas
            val = (_setting(c, st, embedded) if st.name == "log_bin"
                   else c.place(("server", st.name, embedded), (st.value,),
                                functools.partial(_setting, st=st, embedded=embedded)))
            if val is not None:
                # as written (256M), or the resolved value of a $reference
                text = (str(plain(c.lets.get(st.value.name))) if isinstance(st.value, ast.Var)
                        else c.source(st.value.span))
                settings.append(m.ServerSetting(st.name, val, text, st.span))
    binlog = next((s for s in settings if s.name == "log_bin"), None)
    if replicas and binlog is not None and log_bin_off(binlog.value):
        c.error("log_bin = OFF: replicas read the primary's binary log", binlog.span,
                "leave out log_bin: a server with replicas logs in any case")
    return tuple(settings), server_dir, replicas


def _setting(c: Checker, st: ast.Setting, embedded: bool) -> int | float | str | None:
    before = c.error_count
    val = value(c, st.name, st.value, embedded)
    if val is None and c.error_count == before and isinstance(st.value, ast.Call) and st.value.name == "env" \
            and c.unset_env(st.value):
        c.error(f"{st.name}: the environment variable is not set and there is no default", st.value.span,
                'give a default: env("NAME", "value")')
    return val


def value(c: Checker, name: str, e: ast.Expr, embedded: bool) -> int | float | str | None:
    """A setting's value as the server will be given it (256M in bytes, on as ON), or None with the
    reason said: one the throwaway server does not take (log_bin naming a path), or one the server
    would refuse (a size that is no number, a word not among an enum's), said here rather than by a
    server that does not start in the middle of a study."""
    val = c.scalar(e)
    if val is None:
        return None
    raw = c.value(e)
    if isinstance(raw, EnvText):
        raw = env_quantity(raw) or raw
    # as written, and what a $name or env() gave (quoted: it may hold anything)
    written = c.source(span_of(e)) + (f" ({plain(raw)!r})" if isinstance(e, (ast.Var, ast.Call)) else "")
    if embedded and (why := refusal(name, val)) is not None:
        c.error(f"the throwaway server does not take {name} = {written}: {why[0]}", span_of(e), why[1])
        return None
    if (problem := value_problem(name, val, raw.unit if isinstance(raw, Quantity) else None)) is not None:
        c.error(f"{name} = {written}: {problem[0]}", span_of(e), problem[1])
        return None
    return val


def replicas(c: Checker, items: list[object], embedded: bool) -> tuple[Dsn, ...]:
    """`replica "mysql://..."`: the target's replicas, whose lag the run measures."""
    out: list[Dsn] = []
    for item in items:
        e = item.value  # type: ignore[attr-defined]
        v = c.value(e)
        if v is None:
            continue  # env() unset and no default: no such replica, as a target
        if embedded:
            c.error("replica names a replica of the target; this scenario has none (a throwaway server)",
                    span_of(e), "for throwaway replicas: server { replicas = 1 }")
            continue
        if not isinstance(v, str) or isinstance(e, ast.Word):
            c.error("replica is a mysql:// address in double quotes", span_of(e), 'replica "mysql://user@host:3306/db"')
            continue
        try:
            out.append(parse_dsn(v))
        except ValueError as exc:
            c.error(f"replica: {exc}", span_of(e), 'replica "mysql://user@host:3306/db"')
    if len(out) > MAX_REPLICAS:
        c.error(f"{len(out)} replicas: at most {MAX_REPLICAS}", span_of(items[-1].value), "the ones to watch")  # type: ignore[attr-defined]
    return tuple(out)


def monitor(c: Checker, item: ast.Item | None) -> str | None:
    """`monitor "http://db1:9100/metrics"`: the server host's Prometheus node_exporter."""
    if item is None:
        return None
    v = c.value(item.value)
    if v is None:
        return None  # env() unset and no default: no monitor
    example = 'monitor "http://db1:9100/metrics"'
    if not isinstance(v, str) or isinstance(item.value, ast.Word):
        c.error("monitor is the http:// address of a node_exporter, in double quotes", span_of(item.value), example)
        return None
    if not re.fullmatch(r"https?://[^\s/?#]+(/[^\s]*)?", v, re.IGNORECASE):
        c.error(f"monitor: {redact(v)!r} is not an http:// address", span_of(item.value), example)
        return None
    return str(v)
