"""The `bench` command: the parser of every command, and what an error becomes. Each command is a
module of this package with `add_parser(sub)`, which sets its `handler(args, err) -> int`; a
command imports what it needs only when it runs (`bench check` loads no driver, no UI)."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import traceback

from rich.console import Console

from bench_dsl import __version__
from bench_dsl.cli.run import EPILOG
from bench_dsl.core import plugins, stacks
from bench_dsl.core.dsn import redact
from bench_dsl.core.errors import BenchError, ExitCode, ScenarioError
from bench_dsl.core.printable import escaping, printable
from bench_dsl.core.terminal import stderr

COMMAND_MODULES: tuple[str, ...] = ("bench_dsl.cli.check", "bench_dsl.cli.run", "bench_dsl.cli.tools",
                                    "bench_dsl.cli.compare", "bench_dsl.cli.report", "bench_dsl.cli.replay")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="bench", description="Find the saturation point of a MySQL/MariaDB server from a .bench scenario.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", action="version", version=f"bench-dsl {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(name).add_parser(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    stacks.on_request()
    # a terminal closed under a run takes its last lines, never its exit status (core/terminal.py)
    err = escaping(Console(file=stderr(), highlight=False))
    if problems := plugins.problems():  # a kind named that is not there: no command would mean what it says
        for problem in problems:
            err.print(f"bench: {redact(problem)}", markup=False, highlight=False, soft_wrap=True)
        return int(ExitCode.BAD_SCENARIO)
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:  # argparse exits 2 on usage errors, 0 on --help
        return int(e.code or 0)
    try:
        return int(args.handler(args, err))
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
