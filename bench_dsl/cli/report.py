"""`bench report RESULT... -o report.html [--png DIR] [--svg DIR]`: charts of one or more results.

The plotting libraries are imported when the command runs, never when `bench` starts: `bench check`
in an editor's save hook stays fast.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from rich.console import Console

from bench_dsl.core.errors import BenchError, ExitCode, UsageError

EPILOG = """A RESULT is a result JSON written by `bench run`, or a directory searched at any depth for
them (a matrix run's directory: its repeats of one configuration are drawn as one, the median with
the min-max range). Files of the same scenario are told apart by their file names.

The HTML file carries its charts' libraries and data inside: it opens offline, with no network.
Images are drawn without a browser. exit status: 0 written, 2 bad usage or a file that is not a
result, 1 a file that could not be written (a full disk: the cause is said) or an internal error."""


def add_parser(sub: argparse._SubParsersAction) -> None:
    sp = sub.add_parser("report", help="an HTML report and PNG/SVG charts of one or more results",
                        description="Draw the results of one or more runs: throughput and latency against "
                                    "users (the offered rate, for `rate` scenarios) with each saturation point, "
                                    "throughput and p95 over time, the "
                                    "latency percentile spectrum per step, server and client CPU.",
                        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    sp.add_argument("inputs", nargs="+", metavar="RESULT", help="a result JSON, or a directory of them")
    sp.add_argument("-o", "--output", metavar="HTML", help="write the report here (one self-contained HTML file)")
    sp.add_argument("--png", metavar="DIR", help="write one PNG per chart into DIR (made if need be)")
    sp.add_argument("--svg", metavar="DIR", help="write one SVG per chart into DIR (made if need be)")
    sp.set_defaults(handler=run)


def _made_writable(d: Path, shown: str) -> None:
    """The directory `d` made if need be and writable, or a UsageError that starts with `shown`
    (the option as given)."""
    try:
        d.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"{shown}: cannot make {d}: {exc.strerror}") from None
    if not os.access(d, os.W_OK):
        raise UsageError(f"{shown}: {d} is not writable")


def _writable_dir(text: str, flag: str) -> Path:
    d = Path(text)
    if d.exists() and not d.is_dir():
        raise UsageError(f"{flag} {d}: not a directory (images are written into a directory, one per chart)")
    _made_writable(d, f"{flag} {d}")
    return d


def _html_path(text: str) -> Path:
    p = Path(text)
    if p.is_dir():
        raise UsageError(f"-o {p}: a directory; give the report's file name, e.g. -o {p / 'report.html'}")
    _made_writable(p.parent, f"-o {p}")
    return p


def run(args: argparse.Namespace, err: Console) -> int:
    if not (args.output or args.png or args.svg):
        raise UsageError("nothing to write: give -o report.html, --png DIR or --svg DIR (or several)")
    # every problem of the command line is found before the first chart is drawn
    from bench_dsl.results.fold import group, one_axis
    from bench_dsl.results.read import find_results

    found = find_results(args.inputs)  # a bad file is exit 2 here, naming the file and the field
    results = found.results
    html = _html_path(args.output) if args.output else None
    png = _writable_dir(args.png, "--png") if args.png else None
    svg = _writable_dir(args.svg, "--svg") if args.svg else None
    configs = group(results)
    # users results and rate results answer different questions: never drawn on one axis (exit 2)
    one_axis((c.label, c.axis) for c in configs)

    from bench_dsl.results.report.html import (  # altair and vl-convert: only now
        write_html,
        write_images,
    )

    def say(text: str) -> None:
        err.print(text, markup=False, highlight=False, soft_wrap=True)

    for text in found.warnings():
        say(text)
    runs = len(results)
    say(f"report: {len(configs)} configuration{'s' if len(configs) != 1 else ''} from {runs} "
        f"result{'s' if runs != 1 else ''}")
    # a failed write (a full disk, a directory removed meanwhile) is exit 1, as everywhere, with its cause
    if html is not None:
        try:
            write_html(results, html)
        except OSError as exc:
            raise BenchError(f"cannot write the report to {html}: {exc.strerror or exc}") from None
        say(f"html: {html} ({html.stat().st_size / 1e6:.2f} MB, opens offline)")
    for directory, fmt in ((png, "png"), (svg, "svg")):
        if directory is not None:
            try:
                written = write_images(results, directory, fmt=fmt)
            except OSError as exc:
                raise BenchError(f"cannot write the {fmt} charts into {directory}: {exc.strerror or exc}") from None
            say(f"{fmt}: {len(written)} charts in {directory}: " + ", ".join(p.name for p in written))
    return int(ExitCode.OK)
