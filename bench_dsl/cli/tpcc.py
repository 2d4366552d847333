"""`bench tpcc check`: the TPC-C consistency conditions on a server's data."""

from __future__ import annotations

import argparse

from rich.console import Console

from bench_dsl.cli.common import TARGET_HELP, add_defines, defines, run_loop, target

TPCC_EPILOG = """exit status: 0 every condition holds, 3 a condition fails, 2 bad usage or scenario,
4 the server cannot be reached. It may run while a run goes on: every condition is read from one
consistent snapshot of the data."""


def add_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    t = sub.add_parser("tpcc", help="TPC-C tools: consistency checks of loaded data",
                       description="Tools for the tpcc workload's data.")
    tsub = t.add_subparsers(dest="tpcc_command", required=True, metavar="COMMAND")
    c = tsub.add_parser("check", help="check the consistency conditions of TPC-C clause 3.3.2",
                        description="Check the consistency conditions 1 to 9 of TPC-C clause 3.3.2 on the data of "
                                    "a scenario's target (or --target) and report each as passed or failed.",
                        epilog=TPCC_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    c.add_argument("file", nargs="?", metavar="FILE", help="a .bench scenario with a tpcc workload and a target")
    c.add_argument("--target", metavar="DSN", help=TARGET_HELP)
    add_defines(c, "warehouses=4")
    c.add_argument("--json", action="store_true", help="print the conditions as JSON on stdout")
    c.set_defaults(handler=run)


def run(args: argparse.Namespace, err: Console) -> int:
    import json

    from bench_dsl.core.errors import ExitCode, UsageError
    from bench_dsl.workloads.registry import load
    from bench_dsl.workloads.tpcc.workload import check

    dsn = target(args.target)
    if args.file is not None:
        sc = load(args.file, defines(args.defines))
        if sc.workload.kind != "tpcc":
            raise UsageError(f"{args.file} does not run the tpcc workload: there is no TPC-C data to check")
        dsn = dsn or sc.target_dsn
        if dsn is None:
            raise UsageError(f"{args.file} runs on a throwaway server, removed when the run ends: give the server "
                             "that holds the data with --target DSN")
    elif dsn is None:
        raise UsageError("give a scenario FILE whose target holds the data, or --target DSN")
    conditions = run_loop(check(dsn))
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
