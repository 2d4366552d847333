"""`bench run` and `bench prepare`: a scenario against a server, its results written as it goes;
a study (vary/repeat) handed to bench_dsl.study."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import math
import os
import sys
from pathlib import Path

from rich.console import Console

from bench_dsl.cli.common import TARGET_HELP, add_defines, defines, target
from bench_dsl.core.aio import run_loop
from bench_dsl.core.errors import BenchError, ExitCode, UsageError
from bench_dsl.engine import events as ev
from bench_dsl.engine.events import Sink
from bench_dsl.fleet.registry import NAMED
from bench_dsl.results.sinks import (
    ConsoleSink,
    JsonLinesSink,
    JsonResultSink,
    OutputClaim,
    OutputTaken,
    check_regular,
    check_stream,
)

DEFAULT_OUTPUT = "results/{scenario}-{time}.json"

EPILOG = """exit status: 0 completed, 1 internal error or results not written, 2 bad scenario or
usage, 3 an expect failed, 4 the target failed (unreachable, lost), 130 interrupted (143
terminated, 129 hung up). Results already measured are always written, atomically.

passwords: an address given with --target or -D is visible to every local user in `ps`. Give it
through the environment instead: target env("BENCH_DSN", ...) in the file, BENCH_DSN=... set in
the shell (or read from a file: BENCH_DSN=$(cat ~/.bench-dsn) bench run ...)."""


def add_parser(sub: argparse._SubParsersAction) -> None:
    def run_opts(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("file", metavar="FILE")
        add_defines(sp)
        sp.add_argument("--target", metavar="DSN", help=TARGET_HELP)
        sp.add_argument("--keep-server", action="store_true",
                        help="keep the throwaway server's files (its directory is printed)")
        sp.add_argument("--force-prepare", action="store_true", help="reload the data even when it is already there")
        sp.add_argument("--only", action="append", default=[], metavar="NAME=VALUE[,VALUE]",
                        help="a study (vary): run only the configurations with these values, e.g. "
                             "--only innodb_io_capacity=2000 (several --only must all hold)")
        sp.add_argument("--restart-cmd", metavar="COMMAND",
                        help="a study on a server of your own that varies a static setting: a shell command that "
                             "restarts the server with BENCH_SETTINGS=\"name=value ...\" (from its environment) and "
                             "returns once it runs")

    r = sub.add_parser("run", help="run a scenario and report its saturation point",
                       description="Run a scenario against a server and write every measured number to JSON.",
                       epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    run_opts(r)
    r.set_defaults(handler=run)
    r.add_argument("--headless", action="store_true",
                   help="no terminal UI: progress on stderr, data only on stdout (the default when stdout is "
                        "not a terminal)")
    r.add_argument("--json", metavar="PATH",
                   help=f"result document (default: the file's output, else {DEFAULT_OUTPUT}); a study "
                        "(vary/repeat) writes a directory: one result per run, summary.json, report.html")
    r.add_argument("--replace", action="store_true", help="a study: remove the results of an earlier study from "
                   "its directory first (without it, a directory that holds results is refused)")
    r.add_argument("--jsonl", metavar="PATH|-",
                   help="stream one JSON object per interval, step and event; - for stdout")
    r.add_argument("--time-scale", type=float, default=1.0, metavar="F",
                   help="multiply every duration by F (e.g. 0.1 for a smoke run; phases last at least 1s)")
    r.add_argument("--max-steps", type=int, metavar="N", help="run at most N steps of a ramp")
    r.add_argument("--repeat", type=int, metavar="N", help="run each configuration N times, interleaved (overrides "
                   "the file's repeat; a file without vary becomes a study of one configuration)")
    r.add_argument("-q", "--quiet", action="store_true", help="no progress lines, only the verdict")
    names = "|".join(f"{n}|{n}:N" for n in NAMED)
    r.add_argument("--workers", type=_workers, metavar=f"N|auto|{names}",
                   help="processes that run the virtual users (overrides the file's `workers`; auto: one per core; "
                        "TPC-C: half of them when the server runs on this machine); or a fleet by name, as many "
                        "workers as it offers, or N: " + "; ".join(k.usage for k in NAMED.values()))
    for kind in NAMED.values():  # each named fleet's own options, as it declares them
        for o in kind.options:
            r.add_argument(o.flag, dest=_dest(kind.name, o.key), metavar=o.metavar, help=o.help)

    pr = sub.add_parser("prepare", help="create and load the scenario's data only",
                        description="Create and load the data a scenario needs, then stop.")
    run_opts(pr)
    pr.set_defaults(handler=prepare)
    pr.set_defaults(time_scale=1.0, max_steps=None, quiet=False, json=None, jsonl=None, headless=False, workers=None,
                    **{_dest(k.name, o.key): None for k in NAMED.values() for o in k.options})


def _dest(kind: str, key: str) -> str:
    return f"fleet_{kind}_{key}"


def _fleet_options(args: argparse.Namespace, kind: str | None) -> dict[str, str]:
    """The options of the named fleet `kind` given on the command line, by their keys."""
    if kind is None:
        return {}
    given = {o.key: getattr(args, _dest(kind, o.key), None) for o in NAMED[kind].options}
    return {k: v for k, v in given.items() if v is not None}


def prepare(args: argparse.Namespace, err: Console) -> int:
    return run(args, err, prepare_only=True)


_NAMED_WORDS = "".join(f", {n} or {n}:N" for n in NAMED)


def _workers(text: str) -> tuple[str | None, int]:
    """(named fleet, processes): (None, 0) for auto here, (NAME, 0) for as many as the named fleet offers."""
    cluster, sep, count = text.partition(":")
    if cluster in NAMED:
        text = count if sep else "auto"
        if sep and text == "auto":
            raise argparse.ArgumentTypeError(f"expected {cluster} or {cluster}:N, not {cluster}:auto")
    elif sep:
        raise argparse.ArgumentTypeError(f"expected a number of processes, auto{_NAMED_WORDS}, not {text!r}")
    else:
        cluster = ""
    if text == "auto":
        return cluster or None, 0  # given, and auto: overrides a number in the file
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of processes, auto{_NAMED_WORDS}, not {text!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError("at least 1 process")
    return cluster or None, n


def run(args: argparse.Namespace, err: Console, prepare_only: bool = False) -> int:
    from bench_dsl.engine.outcome import expand_output
    from bench_dsl.engine.plan import plan
    from bench_dsl.engine.runner import Options, Run
    from bench_dsl.engine.scenario_file import load
    from bench_dsl.language import model as m
    from bench_dsl.language import vary

    values = defines(args.defines)
    sc = load(args.file, values).seeded()  # the run's seed: {seed} in an output path is it
    if not math.isfinite(args.time_scale) or args.time_scale <= 0:
        raise UsageError("--time-scale must be a number larger than 0, e.g. 0.1")
    if args.max_steps is not None and args.max_steps < 1:
        raise UsageError("--max-steps must be at least 1")
    if getattr(args, "repeat", None) is not None:
        if not 1 <= args.repeat <= vary.MAX_REPEAT:
            raise UsageError(f"--repeat must be from 1 to {vary.MAX_REPEAT}")
        base = sc.study or m.Study((m.Configuration("c1", ()),))
        sc = dataclasses.replace(sc, study=dataclasses.replace(base, repeat=args.repeat))
    cluster = args.workers[0] if args.workers is not None else sc.cluster
    if cluster is not None:
        targeted = sc.target is not None or args.target is not None
        if (why := NAMED[cluster].problem(targeted)) is not None:
            hint = why[1]
            if sc.target_from and not targeted:  # the file's target is an unset env()
                hint = (f"{sc.target_from.removeprefix('env ')} is not set: set it to a server every node of the "
                        "cluster reaches, or give --target")
            raise UsageError(f"workers {cluster}: {why[0]} ({hint})")
    if args.only and sc.study is None:
        raise UsageError(f"--only: {args.file} has no vary")
    if args.restart_cmd and sc.study is None:
        raise UsageError(f"--restart-cmd: {args.file} has no vary")
    if sc.study is not None and not prepare_only:
        if args.jsonl:
            raise UsageError("--jsonl: a study (vary/repeat) writes one result per run in its directory; "
                             "run one configuration alone (--only) without repeat to stream it")
        from bench_dsl.study import driver as study

        opt = study.StudyOptions(values, args.only, args.time_scale, args.max_steps, target(args.target),
                                 args.workers, args.keep_server, args.force_prepare, args.restart_cmd, args.quiet,
                                 args.json, replace=args.replace, fleet_options=_fleet_options(args, cluster))
        return int(run_loop(study.run_study(sc, opt, err)))
    if sc.study is not None and any(c.lets for c in sc.study.configurations):
        raise UsageError(f"{args.file} varies the data ($variables): each configuration loads its own when it runs")
    p = plan(sc, args.time_scale, args.max_steps)
    sinks: list[Sink] = []
    # A person at a terminal gets the live UI; CI, pipes and --headless get console lines on stderr.
    use_ui = (not prepare_only and not args.headless and not args.quiet and args.jsonl != "-"
              and sys.stdout.isatty() and sys.stderr.isatty())
    deferred = _VerdictOnly(ConsoleSink(err), defer=use_ui, quiet=not (use_ui or args.quiet))
    sinks.append(deferred)  # with the UI, the verdict is printed once the UI has left the screen
    if not use_ui and not args.quiet:
        sinks.append(ConsoleSink(err))
    target_dsn = target(args.target)  # a bad one is a usage error before any output is claimed
    out_path: Path | None = None
    claims: list[OutputClaim] = []
    try:
        if not prepare_only:
            out_path = Path(expand_output(args.json or sc.output or DEFAULT_OUTPUT, sc))
            claims.append(_claim(out_path, "the results", regular=True))  # found out now, not after an hour
            sinks.append(JsonResultSink(out_path))
            if args.jsonl and args.jsonl != "-":
                jsonl = Path(args.jsonl)
                claims.append(_claim(jsonl, "the event stream", regular=False))
                try:
                    stream = open(jsonl, "w", encoding="utf-8")  # noqa: SIM115
                except OSError as exc:
                    raise BenchError(f"cannot write the event stream to {jsonl}: {exc.strerror}") from None
                sinks.append(JsonLinesSink(stream, f"the event stream to {jsonl}"))
            elif args.jsonl:
                sinks.append(JsonLinesSink(sys.stdout, "the event stream to stdout"))
    except BaseException:
        for c in claims:
            c.release()
        raise
    opts = Options(time_scale=args.time_scale, max_steps=args.max_steps,
                   keep_server=args.keep_server, force_prepare=args.force_prepare, prepare_only=prepare_only,
                   target=target_dsn, workers=args.workers[1] if args.workers else None,
                   cluster=args.workers[0] if args.workers else None, fleet_options=_fleet_options(args, cluster),
                   isolate_users=use_ui)
    try:
        run = Run(sc, p, list(sinks), opts)
    except BaseException:
        for c in claims:
            c.release()
        raise
    problems: list[str] = []
    written = True

    def close_sinks() -> None:
        nonlocal written
        try:
            for s in sinks:  # every sink, also one the run dropped, and also when the run raised
                try:
                    s.close()
                except Exception as exc:  # a full disk, a path replaced by a symlink meanwhile, ...
                    if isinstance(s, JsonResultSink):
                        written = False
                    problems.append(f"could not write {getattr(s, 'name', 'an output')}: {exc}")
        finally:
            for c in claims:
                c.release()

    async def run_then_close() -> int:
        try:
            if use_ui:
                from bench_dsl.tui.app import (
                    run_with_ui,  # textual is imported only for a person at a terminal
                )

                return await run_with_ui(run)
            return await run.execute()
        finally:
            # before the event loop ends: the run's signal handlers make a Ctrl-C or TERM now wait
            # for the files instead of leaving a half-written result behind
            await asyncio.to_thread(close_sinks)

    code = int(run_loop(run_then_close()))
    for s, failure in run.bus.dropped:  # an output that failed during the run is missing its end
        if isinstance(failure, BrokenPipeError):
            continue  # the reader left (`| head`): it has what it wanted, nothing is wrong
        if isinstance(s, JsonResultSink):
            written = False
        if isinstance(s, (JsonLinesSink, JsonResultSink)) and not any(str(failure) in m for m in problems):
            problems.append(f"{s.name} stopped during the run: {failure}")
    for message in problems:
        err.print(f"bench: {message}", markup=False, highlight=False)
    status = deferred.status or "not run"
    if problems:
        code = ExitCode.FAILURE
        status += ", but an output is incomplete"
    # said last, once every output is closed: the status and the exit status always agree
    err.print(f"status: {status} (exit {int(code)})", markup=False, highlight=False)
    if out_path is not None and written:
        err.print(f"results: {out_path}", markup=False, highlight=False, soft_wrap=True)
    return int(code)


def _claim(path: Path, what: str, regular: bool) -> OutputClaim:
    """`path` for this run alone, in a directory that exists (made if need be) and can be written.
    A path that cannot be an output (someone else's file, a link, a directory) is a usage error
    (exit 2); a file system that cannot take it (a full disk) is a write failure (exit 1)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise BenchError(f"cannot write {what} to {path}: {exc.strerror}") from None
    if not os.access(path.parent, os.W_OK):
        raise UsageError(f"cannot write {what} to {path}: {path.parent} is not writable")
    try:
        check_regular(path) if regular else check_stream(path)
        return OutputClaim(path)
    except OutputTaken as exc:
        raise UsageError(f"cannot write {what} to {path}: {exc}") from None
    except OSError as exc:
        raise BenchError(f"cannot write {what} to {path}: {exc.strerror}") from None


class _VerdictOnly:
    """Passes on errors and the verdict only; with `defer`, keeps them until close()."""

    def __init__(self, inner: ConsoleSink, defer: bool = False, quiet: bool = False) -> None:
        self.inner = inner
        self.defer = defer
        self.quiet = quiet  # another sink prints everything: only the status is kept
        self.kept: list[ev.Event] = []
        self.status: str | None = None  # the run's, from its Finished event

    def emit(self, event: ev.Event) -> None:
        if isinstance(event, ev.Finished):
            self.status = event.status
        if self.quiet:
            return
        if isinstance(event, ev.Finished) or (isinstance(event, ev.Log) and event.level == "error"):
            if self.defer:
                self.kept.append(event)
            else:
                self.inner.emit(event)

    def close(self) -> None:
        for event in self.kept:
            self.inner.emit(event)
        self.kept.clear()
