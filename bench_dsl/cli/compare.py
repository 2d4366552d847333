"""`bench compare`: the command line of bench_dsl/results/comparison.py (registered in cli.COMMAND_MODULES)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Console

from bench_dsl.core.errors import BenchError, ExitCode, UsageError

EPILOG = """examples:
  bench compare results/io-capacity-sweep/          a matrix directory (vary / repeat)
  bench compare base.json new.json [more.json ...]  the first is the baseline
  bench compare base.json new.json --fail-if "tps < -5%" --fail-if "p95 > +10%"

a difference is beyond the noise when it is larger than the two configurations' noises added: a
configuration's noise is max / min - 1 of its repeats, or with fewer than 3, of the step's report
intervals when larger (all a single run can show). See docs/compare.md.

exit status: 0 compared (and every --fail-if passed), 2 bad usage, unreadable or not-comparable
results, or a --fail-if that met a figure it could not judge (said with why), 3 a --fail-if failed."""


def add_parser(sub: argparse._SubParsersAction) -> None:
    from bench_dsl.workloads.registry import METRICS

    sp = sub.add_parser("compare", help="compare results side by side against the first (the baseline)",
                        description="Compare the results of runs or configurations: saturation point, throughput "
                                    "and latency at each users count (offered rate, for `rate` scenarios) all of "
                                    "them measured, the difference to the "
                                    "baseline (the first), and whether it is beyond the noise.",
                        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    sp.add_argument("paths", nargs="+", metavar="RESULT|DIR",
                    help="result JSON files, or directories searched for them (a matrix run's directory)")
    sp.add_argument("--fail-if", dest="fail_if", action="append", default=[], metavar="GATE",
                    help='e.g. "tps < -5%%" or "p95 > +10%%": exit 3 when a configuration differs from the baseline '
                         "that way at a users count (an offered rate) both measured; metrics: "
                         + ", ".join(METRICS.shown("gated")))
    sp.add_argument("--force", action="store_true", help="compare results of different workloads or data anyway")
    sp.add_argument("--json", metavar="PATH|-", help="write the comparison as JSON (- for stdout)")
    sp.add_argument("--markdown", metavar="PATH|-", help="write the comparison as a Markdown table (- for stdout)")
    sp.set_defaults(handler=run)


def _write(target: str, text: str, what: str) -> None:
    if target == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    from bench_dsl.results.files import write_atomically

    path = Path(target)
    if path.is_dir():
        raise UsageError(f"--{what} {target}: is a directory; give a file name")
    try:
        write_atomically(path, text)  # a reader (or a CI step) never sees half a table
    except OSError as exc:
        raise BenchError(f"cannot write the {what} comparison to {target}: {exc.strerror or exc}") from None


def run(args: argparse.Namespace, err: Console) -> int:
    from bench_dsl.core.printable import escaping, printable
    from bench_dsl.results.comparison import (
        compare,
        gate_words,
        parse_gate,
        to_markdown,
        to_rich,
    )
    from bench_dsl.results.read import find_results
    from bench_dsl.results.summary import summarize

    gates = [parse_gate(g) for g in args.fail_if]  # a mistyped gate is found before any file is read
    if args.json == "-" and args.markdown == "-":
        raise UsageError("--json - and --markdown - would both write to stdout: give one of them a file")
    found = find_results(args.paths)  # a bad file is exit 2 here, naming the file and the field
    for text in found.warnings():
        err.print(text, markup=False, highlight=False, soft_wrap=True)
    summary = summarize(found.results, base=Path.cwd())
    table = compare(summary, gates, force=args.force)
    data_on_stdout = "-" in (args.json, args.markdown)
    # stdout carries data only when a rendering is asked for there; the console table then goes to stderr
    out = err if data_on_stdout else escaping(Console(highlight=False, width=None if sys.stdout.isatty() else 160))
    out.print(to_rich(table))
    _notes(table, summary, out)
    if args.json:
        _write(args.json, json.dumps(table, indent=2) + "\n", "json")
    if args.markdown:
        _write(args.markdown, printable(to_markdown(table)), "markdown")  # labels from files: no escapes
    return _verdict(table, err, gate_words)


def _notes(table: dict[str, Any], summary: dict[str, Any], out: Console) -> None:
    def say(text: str) -> None:
        out.print(text, markup=False, highlight=False, soft_wrap=True)

    from bench_dsl.results.comparison import compared

    if not compared(table):
        what = "offered rate" if table.get("axis") == "rate" else "users count"
        say(f"no {what} was measured by every configuration: only the saturation points are compared")
    if not summary["same_workload"]:
        say("warning: these results ran different workloads or data (--force): the figures do not compare")
    once = [c["label"] for c in summary["configurations"] if len(c["statuses"]) == 1]
    if once:
        say(f"note: ran once: {', '.join(once)}: noise from the report intervals only, which do not show how "
            "much runs differ from each other; repeat (3 or more) to be sure of a difference")
    for c in summary["configurations"]:
        bad = [s for s in c["statuses"] if s != "completed"]
        if bad:
            say(f"note: {c['label']}: {len(bad)} of {len(c['statuses'])} run(s) did not complete ({', '.join(bad)})")


def _verdict(table: dict[str, Any], err: Console, gate_words: Callable[[dict[str, Any]], str]) -> int:
    from bench_dsl.results.comparison import gate_verdict

    failed = unjudged = False
    for g in table["gates"]:
        err.print(f"--fail-if {g['gate']}: {gate_words(g)}", markup=False, highlight=False, soft_wrap=True)
        verdict = gate_verdict(g)
        failed = failed or verdict == "failed"
        # a gate that met a figure it could not judge (nopm of a sysbench run, a baseline of 0, no
        # users count in common) has not passed; a gate that failed says more than one that could not judge
        unjudged = unjudged or verdict == "unjudged"
    if failed:
        return int(ExitCode.EXPECT_FAILED)
    return int(ExitCode.BAD_SCENARIO if unjudged else ExitCode.OK)
