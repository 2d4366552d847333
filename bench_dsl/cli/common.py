"""What the commands share: -D and --target."""

from __future__ import annotations

import argparse

from bench_dsl.core.dsn import Dsn, parse_dsn
from bench_dsl.core.errors import UsageError

TARGET_HELP = ("mysql://user:password@host:port/db; overrides the file's target. A password here is "
               "visible to every local user in `ps`: keep it in the environment instead (the file's "
               "target env(\"BENCH_DSN\", ...), or BENCH_DSN=... bench run ...)")


def add_defines(sp: argparse.ArgumentParser, example: str = "start=16") -> None:
    sp.add_argument("-D", dest="defines", action="append", default=[], metavar="NAME=VALUE",
                    help=f"override a 'let' of the file, e.g. -D {example}")


def defines(pairs: list[str]) -> dict[str, str]:
    out = {}
    for p in pairs:
        name, sep, value = p.partition("=")
        if not sep or not name.strip():
            raise UsageError(f"-D {p}: write -D name=value")
        out[name.strip()] = value.strip()
    return out


def target(text: str | None) -> Dsn | None:
    """--target, parsed once: a bad one is a usage error before anything starts."""
    if text is None:
        return None
    try:
        return parse_dsn(text)
    except ValueError as exc:
        raise UsageError(f"--target: {exc}") from None
