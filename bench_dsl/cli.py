"""The `bench` command: check, run, prepare."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import importlib
import math
import os
import sys
import traceback
from pathlib import Path

from rich.console import Console

from bench_dsl import __version__
from bench_dsl.dsn import Dsn, parse_dsn, redact
from bench_dsl.errors import BenchError, ExitCode, ScenarioError, UsageError
from bench_dsl import events as ev
from bench_dsl import model as m
from bench_dsl import study, validate_vary
from bench_dsl.events import Sink
from bench_dsl.plan_text import describe
from bench_dsl.planner import plan
from bench_dsl.printable import escaping, printable
from bench_dsl.results import expand_output
from bench_dsl.runner import Options, Run
from bench_dsl.sinks import (ConsoleSink, JsonLinesSink, JsonResultSink, OutputClaim, OutputTaken, check_regular,
                             check_stream)
from bench_dsl.workloads.registry import load

DEFAULT_OUTPUT = "results/{scenario}-{time}.json"

# Commands that live in a module of their own, each with `add_parser(sub)` (which sets
# `handler`) and a handler `(args, err) -> int`; they import what they need when they run.
COMMAND_MODULES: tuple[str, ...] = ("bench_dsl.cli_compare", "bench_dsl.cli_report", "bench_dsl.cli_replay")

EPILOG = """exit status: 0 completed, 1 internal error or results not written, 2 bad scenario or
usage, 3 an expect failed, 4 the target failed (unreachable, lost), 130 interrupted (143
terminated, 129 hung up). Results already measured are always written, atomically.

passwords: an address given with --target or -D is visible to every local user in `ps`. Give it
through the environment instead: target env("BENCH_DSN", ...) in the file, BENCH_DSN=... set in
the shell (or read from a file: BENCH_DSN=$(cat ~/.bench-dsn) bench run ...)."""


def _defines(pairs: list[str]) -> dict[str, str]:
    out = {}
    for p in pairs:
        name, sep, value = p.partition("=")
        if not sep or not name.strip():
            raise UsageError(f"-D {p}: write -D name=value")
        out[name.strip()] = value.strip()
    return out


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="bench", description="Find the saturation point of a MySQL/MariaDB server from a .bench scenario.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", action="version", version=f"bench-dsl {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def common(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("-D", dest="defines", action="append", default=[], metavar="NAME=VALUE",
                        help="override a 'let' of the file, e.g. -D start=16")

    c = sub.add_parser("check", help="validate .bench files (exit 0, or 2 with every problem listed)",
                       description="Parse and validate scenario files; print every problem at once.")
    c.add_argument("files", nargs="+", metavar="FILE")
    c.add_argument("--plan", action="store_true", help="print the phases the run will go through (a study: its "
                   "configurations, their order and the time it takes)")
    common(c)
    c.add_argument("--only", action="append", default=[], metavar="NAME=VALUE[,VALUE]",
                   help="a study (vary): plan only the configurations with these values")

    def run_opts(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("file", metavar="FILE")
        common(sp)
        sp.add_argument("--target", metavar="DSN", help="mysql://user:password@host:port/db; overrides the file's target. A password here is "
                        "visible to every local user in `ps`: keep it in the environment instead (the file's "
                        "target env(\"BENCH_DSN\", ...), or BENCH_DSN=... bench run ...)")
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
    r.add_argument("--headless", action="store_true",
                   help="no terminal UI: progress on stderr, data only on stdout (the default when stdout is "
                        "not a terminal)")
    r.add_argument("--json", metavar="PATH", help=f"result document (default: the file's output, else {DEFAULT_OUTPUT}); "
                   "a study (vary/repeat) writes a directory: one result per run, summary.json, report.html")
    r.add_argument("--replace", action="store_true", help="a study: remove the results of an earlier study from "
                   "its directory first (without it, a directory that holds results is refused)")
    r.add_argument("--jsonl", metavar="PATH|-", help="stream one JSON object per interval, step and event; - for stdout")
    r.add_argument("--time-scale", type=float, default=1.0, metavar="F",
                   help="multiply every duration by F (e.g. 0.1 for a smoke run; phases last at least 1s)")
    r.add_argument("--max-steps", type=int, metavar="N", help="run at most N steps of a ramp")
    r.add_argument("--repeat", type=int, metavar="N", help="run each configuration N times, interleaved (overrides "
                   "the file's repeat; a file without vary becomes a study of one configuration)")
    r.add_argument("-q", "--quiet", action="store_true", help="no progress lines, only the verdict")
    r.add_argument("--workers", type=_workers, metavar="N|auto",
                   help="processes that run the virtual users (overrides the file's `workers`; auto: one per core; TPC-C: half of them when the server runs on this machine)")

    pr = sub.add_parser("prepare", help="create and load the scenario's data only",
                        description="Create and load the data a scenario needs, then stop.")
    run_opts(pr)
    pr.set_defaults(time_scale=1.0, max_steps=None, quiet=False, json=None, jsonl=None, headless=False, workers=None)
    _add_tpcc(sub)
    for name in COMMAND_MODULES:
        importlib.import_module(name).add_parser(sub)
    return p


TPCC_EPILOG = """exit status: 0 every condition holds, 3 a condition fails, 2 bad usage or scenario,
4 the server cannot be reached. It may run while a run goes on: every condition is read from one
consistent snapshot of the data."""


def _add_tpcc(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    t = sub.add_parser("tpcc", help="TPC-C tools: consistency checks of loaded data",
                       description="Tools for the tpcc workload's data.")
    tsub = t.add_subparsers(dest="tpcc_command", required=True, metavar="COMMAND")
    c = tsub.add_parser("check", help="check the consistency conditions of TPC-C clause 3.3.2",
                        description="Check the consistency conditions 1 to 9 of TPC-C clause 3.3.2 on the data of "
                                    "a scenario's target (or --target) and report each as passed or failed.",
                        epilog=TPCC_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    c.add_argument("file", nargs="?", metavar="FILE", help="a .bench scenario with a tpcc workload and a target")
    c.add_argument("--target", metavar="DSN", help="mysql://user:password@host:port/db; overrides the file's target. A password here is "
                        "visible to every local user in `ps`: keep it in the environment instead (the file's "
                        "target env(\"BENCH_DSN\", ...), or BENCH_DSN=... bench run ...)")
    c.add_argument("-D", dest="defines", action="append", default=[], metavar="NAME=VALUE",
                   help="override a 'let' of the file, e.g. -D warehouses=4")
    c.add_argument("--json", action="store_true", help="print the conditions as JSON on stdout")


def cmd_tpcc(args: argparse.Namespace, err: Console) -> int:
    import json

    from bench_dsl.workloads.tpcc import check

    dsn = _target(args.target)
    if args.file is not None:
        sc = load(args.file, _defines(args.defines))
        if sc.workload.kind != "tpcc":
            raise UsageError(f"{args.file} does not run the tpcc workload: there is no TPC-C data to check")
        dsn = dsn or sc.target_dsn
        if dsn is None:
            raise UsageError(f"{args.file} runs on a throwaway server, removed when the run ends: give the server "
                             "that holds the data with --target DSN")
    elif dsn is None:
        raise UsageError("give a scenario FILE whose target holds the data, or --target DSN")
    conditions = _run_loop(check(dsn))
    if args.json:
        print(json.dumps({"target": dsn.redacted(), "passed": all(c.passed for c in conditions),
                          "conditions": [c.to_json() for c in conditions]}, indent=2))

    def say(text: str) -> None:
        err.print(text, markup=False, highlight=False, soft_wrap=True)

    say(f"TPC-C consistency conditions (clause 3.3.2) on {dsn.redacted()}")
    for c in conditions:
        verdict = "passed" if c.passed else "FAILED"
        extra = f", {c.violations} violation{'s' if c.violations != 1 else ''}" if c.violations else ""
        say(f"  {c.number}  {verdict:6}  {c.text}  ({c.checked} checked{extra})")
        for d in c.details:
            say(f"             {d}")
    failed = [c.number for c in conditions if not c.passed]
    say(f"all {len(conditions)} conditions hold" if not failed else
        f"{len(failed)} of {len(conditions)} conditions failed: {', '.join(map(str, failed))}")
    return int(ExitCode.EXPECT_FAILED) if failed else int(ExitCode.OK)


def cmd_check(args: argparse.Namespace, err: Console) -> int:
    status = 0
    defines = _defines(args.defines)
    for f in args.files:
        try:
            sc = load(f, defines)
        except ScenarioError as e:
            print(printable(e.render()), file=sys.stderr)
            status = ExitCode.BAD_SCENARIO
            continue
        if args.plan:
            extra = study.describe(sc, args.only, defines) if sc.study is not None else None  # a bad --only first
            print(printable(describe(sc, plan(sc))))  # the plan lists the warnings too
            if extra:
                print(printable(extra))
        elif args.only and sc.study is None:
            raise UsageError(f"--only: {f} has no vary")
        else:
            for w in sc.warnings:
                print(printable(w.render(sc.text)), file=sys.stderr)
            err.print(f"{f}: ok" + (f" ({len(sc.warnings)} warning{'s' if len(sc.warnings) > 1 else ''})"
                                    if sc.warnings else ""), markup=False, highlight=False, soft_wrap=True)
    return status


def _workers(text: str) -> int:
    if text == "auto":
        return 0  # given, and auto: overrides a number in the file
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of processes or auto, not {text!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError("at least 1 process")
    return n


def _run_loop(coro):  # type: ignore[no-untyped-def]
    try:
        import uvloop
    except ImportError:
        return asyncio.run(coro)
    return uvloop.run(coro)  # an ImportError inside the run is the run's, not uvloop's absence


def cmd_run(args: argparse.Namespace, err: Console, prepare_only: bool = False) -> int:
    defines = _defines(args.defines)
    sc = load(args.file, defines).seeded()  # the run's seed: {seed} in an output path is it
    if not math.isfinite(args.time_scale) or args.time_scale <= 0:
        raise UsageError("--time-scale must be a number larger than 0, e.g. 0.1")
    if args.max_steps is not None and args.max_steps < 1:
        raise UsageError("--max-steps must be at least 1")
    if getattr(args, "repeat", None) is not None:
        if not 1 <= args.repeat <= validate_vary.MAX_REPEAT:
            raise UsageError(f"--repeat must be from 1 to {validate_vary.MAX_REPEAT}")
        base = sc.study or m.Study((m.Configuration("c1", ()),))
        sc = dataclasses.replace(sc, study=dataclasses.replace(base, repeat=args.repeat))
    if args.only and sc.study is None:
        raise UsageError(f"--only: {args.file} has no vary")
    if args.restart_cmd and sc.study is None:
        raise UsageError(f"--restart-cmd: {args.file} has no vary")
    if sc.study is not None and not prepare_only:
        if args.jsonl:
            raise UsageError("--jsonl: a study (vary/repeat) writes one result per run in its directory; "
                             "run one configuration alone (--only) without repeat to stream it")
        opt = study.StudyOptions(defines, args.only, args.time_scale, args.max_steps, _target(args.target),
                                 args.workers, args.keep_server, args.force_prepare, args.restart_cmd, args.quiet,
                                 args.json, replace=args.replace)
        return int(_run_loop(study.run_study(sc, opt, err)))
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
    target = _target(args.target)  # a bad one is a usage error before any output is claimed
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
                   target=target, workers=args.workers, isolate_users=use_ui)
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
                from bench_dsl.tui.app import run_with_ui  # textual is imported only for a person at a terminal

                return await run_with_ui(run)
            return await run.execute()
        finally:
            # before the event loop ends: the run's signal handlers make a Ctrl-C or TERM now wait
            # for the files instead of leaving a half-written result behind
            await asyncio.to_thread(close_sinks)

    code = int(_run_loop(run_then_close()))
    for s, exc in run.bus.dropped:  # an output that failed during the run is missing its end
        if isinstance(exc, BrokenPipeError):
            continue  # the reader left (`| head`): it has what it wanted, nothing is wrong
        if isinstance(s, JsonResultSink):
            written = False
        if isinstance(s, (JsonLinesSink, JsonResultSink)) and not any(str(exc) in m for m in problems):
            problems.append(f"{s.name} stopped during the run: {exc}")
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


def _target(text: str | None) -> Dsn | None:
    """--target, parsed once: a bad one is a usage error before anything starts."""
    if text is None:
        return None
    try:
        return parse_dsn(text)
    except ValueError as exc:
        raise UsageError(f"--target: {exc}") from None


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


def main(argv: list[str] | None = None) -> int:
    err = escaping(Console(stderr=True, highlight=False))
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:  # argparse exits 2 on usage errors, 0 on --help
        return int(e.code or 0)
    try:
        if getattr(args, "handler", None) is not None:
            return int(args.handler(args, err))
        if args.command == "check":
            return cmd_check(args, err)
        if args.command == "run":
            return cmd_run(args, err)
        if args.command == "tpcc":
            return cmd_tpcc(args, err)
        return cmd_run(args, err, prepare_only=True)
    except ScenarioError as e:
        print(printable(e.render()), file=sys.stderr)  # not through rich: diagnostics must never be re-wrapped
        return int(e.exit_code)
    except BenchError as e:
        err.print(f"bench: {redact(str(e))}", markup=False, highlight=False, soft_wrap=True)  # lines as written
        return int(e.exit_code)
    except KeyboardInterrupt:
        return int(ExitCode.INTERRUPTED)
    except BrokenPipeError:  # `bench check --plan f | head`: the reader left, nothing is wrong
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return int(ExitCode.OK)
    except Exception:
        if os.environ.get("BENCH_DEBUG"):
            traceback.print_exc()
        else:
            err.print(f"bench: internal error: {redact(traceback.format_exc().strip().splitlines()[-1])}\n"
                      "  run again with BENCH_DEBUG=1 for the details, and report it", markup=False)
        return int(ExitCode.FAILURE)


if __name__ == "__main__":
    sys.exit(main())
