"""`bench KIND TOOL`: the commands a workload kind adds (its plugin's `tools`, e.g. `bench tpcc
check`), on the data of a scenario's target or of --target. The command line is the same for
every tool; what a tool does is its plugin's."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from rich.console import Console

from bench_dsl.cli.common import TARGET_HELP, add_defines, defines, target
from bench_dsl.core.errors import UsageError
from bench_dsl.workloads.registry import PLUGINS

if TYPE_CHECKING:
    from bench_dsl.workloads.plugin import DataTool


def add_parser(sub: argparse._SubParsersAction) -> None:
    for plugin in PLUGINS.values():
        if not plugin.tools:
            continue
        kind = plugin.kind
        names = ", ".join(t.name for t in plugin.tools)
        k = sub.add_parser(kind, help=f"{kind} tools: {names}", description=f"Tools for the {kind} workload's data.")
        ksub = k.add_subparsers(dest=f"{kind}_command", required=True, metavar="COMMAND")
        for tool in plugin.tools:
            t = ksub.add_parser(tool.name, help=tool.help, description=tool.description, epilog=tool.epilog,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
            t.add_argument("file", nargs="?", metavar="FILE",
                           help=f"a .bench scenario with a {kind} workload and a target")
            t.add_argument("--target", metavar="DSN", help=TARGET_HELP)
            add_defines(t, tool.example_define)
            tool.add_arguments(t)
            t.set_defaults(handler=_handler(kind, tool))


def _handler(kind: str, tool: DataTool):  # type: ignore[no-untyped-def]
    def run(args: argparse.Namespace, err: Console) -> int:
        from bench_dsl.engine.scenario_file import load

        dsn = target(args.target)
        if args.file is not None:
            sc = load(args.file, defines(args.defines))
            if sc.workload.kind != kind:
                raise UsageError(f"{args.file} does not run the {kind} workload: there is no {kind} data to "
                                 f"{tool.name}")
            dsn = dsn or sc.target_dsn
            if dsn is None:
                raise UsageError(f"{args.file} runs on a throwaway server, removed when the run ends: give the server "
                                 "that holds the data with --target DSN")
        elif dsn is None:
            raise UsageError("give a scenario FILE whose target holds the data, or --target DSN")

        def say(text: str) -> None:
            err.print(text, markup=False, highlight=False, soft_wrap=True)

        return tool.run(args, dsn, say)

    return run
