"""`bench check`: validate .bench files, and with --plan print what a run would do."""

from __future__ import annotations

import argparse
import sys

from rich.console import Console

from bench_dsl.cli.common import add_defines, defines


def add_parser(sub: argparse._SubParsersAction) -> None:
    c = sub.add_parser("check", help="validate .bench files (exit 0, or 2 with every problem listed)",
                       description="Parse and validate scenario files; print every problem at once.")
    c.add_argument("files", nargs="+", metavar="FILE")
    c.add_argument("--plan", action="store_true", help="print the phases the run will go through (a study: its "
                   "configurations, their order and the time it takes)")
    add_defines(c)
    c.add_argument("--only", action="append", default=[], metavar="NAME=VALUE[,VALUE]",
                   help="a study (vary): plan only the configurations with these values")
    c.set_defaults(handler=run)


def run(args: argparse.Namespace, err: Console) -> int:
    from bench_dsl.core.errors import ExitCode, ScenarioError, UsageError
    from bench_dsl.core.printable import printable
    from bench_dsl.engine.plan import plan
    from bench_dsl.engine.plan_text import describe
    from bench_dsl.engine.scenario_file import load

    status = 0
    values = defines(args.defines)
    for f in args.files:
        try:
            sc = load(f, values)
        except ScenarioError as e:
            print(printable(e.render()), file=sys.stderr)
            status = ExitCode.BAD_SCENARIO
            continue
        if args.plan:
            extra = None
            if sc.study is not None:
                from bench_dsl.study.plan import describe as describe_study

                extra = describe_study(sc, args.only, values)  # a bad --only first
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
