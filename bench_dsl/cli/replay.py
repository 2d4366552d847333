"""`bench replay FILE [--speed F]`: a finished run on the live screen again, from its result document
or its --jsonl event stream (bench_dsl/results/replay.py); without a terminal, its console lines."""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import sys
from collections.abc import Callable
from pathlib import Path

from rich.console import Console

from bench_dsl.core.errors import UsageError

HELP = """exit status: 0 replayed (whatever the run's own status was), 2 the file is missing or is not
a result or event stream of bench run. Nothing connects to a server.

An event stream (--jsonl) holds every event of the run and is played as it was. A result does not
keep all the live run showed (ticks each second, the conditions' values between steps): the
replay derives it from what it keeps; see docs/replay.md. A stream whose last line was cut (the
run was killed while writing it) is played up to its last whole line, with a warning."""


class _Lines(Console):
    """stdout for the console lines. A reader that leaves (`| head`) has what it wanted: the replay
    ends there with 0 (rich would exit 1 from inside the print)."""

    def __init__(self, stop: Callable[[], None]) -> None:
        super().__init__(file=sys.stdout, highlight=False, soft_wrap=True)
        self.stop = stop

    def on_broken_pipe(self) -> None:
        self.quiet = True
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # Python's own last flush too
        self.stop()


def add_parser(sub: argparse._SubParsersAction) -> None:
    sp = sub.add_parser("replay", help="show a finished run again on the live screen, from its result",
                        description="Show a finished run on the live screen again, timed as it ran: from its "
                                    "result document (--json) or its event stream (--jsonl). When stdout is "
                                    "not a terminal, print the console lines instead.",
                        epilog=HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    sp.add_argument("file", metavar="FILE", help="a result (.json) or event stream (.jsonl) of bench run")
    sp.add_argument("--speed", type=float, default=None, metavar="F",
                    help="play F times as fast as the run went (default 1 on the screen; without a terminal "
                         "the lines are printed at once unless --speed is given)")
    sp.set_defaults(handler=run)


def run(args: argparse.Namespace, err: Console) -> int:
    from bench_dsl.core.printable import escaping
    from bench_dsl.results.player import Player
    from bench_dsl.results.replay import load
    from bench_dsl.results.sinks import ConsoleSink

    speed: float | None = args.speed
    if speed is not None and (not math.isfinite(speed) or speed <= 0):
        raise UsageError("--speed must be a number larger than 0, e.g. 10")
    warnings: list[str] = []
    evs = load(args.file, warnings)  # a file that is neither a result nor a stream: exit 2, naming what is wrong
    for text in warnings:
        err.print(text, markup=False, highlight=False, soft_wrap=True)
    if not sys.stdout.isatty():
        # CI and pipes: the lines `bench run` printed, on stdout (they are this command's output)
        player = Player(evs, speed)
        player.sinks.append(ConsoleSink(escaping(_Lines(player.request_stop))))
        return asyncio.run(player.execute())

    from bench_dsl.tui.replay_app import (
        run_replay,  # textual only for a person at a terminal
    )

    return asyncio.run(run_replay(Player(evs, speed or 1.0), Path(args.file)))
