"""Grammar-aware mutations of the shipped scenarios, and the property every input must keep:
`bench check` answers 0 or 2 (never an internal error) within 2 s of CPU, every diagnostic has a hint
and its place, its caret stands under the place on the line as a terminal shows it, and whatever it
accepts also plans (within 2 s too). Besides token mutations, the classes an outside fuzzer found
(issue 28): numbers beyond a float, names and numbers of 60 KB, line breaks other than '\n', and a
vary of up to 1,000 values; and the strategies of a second one (issue 38): files generated from the
grammar's own rules, the ```bench blocks of docs/language.md spliced into each other, and Unicode
(letters of other scripts drawn as Latin ones, wide, zero-width, bidirectional and control
characters) put between and into tokens. Cost is CPU time, never the wall clock's: the same on a busy
machine. Used by tests/unit/test_fuzz.py (short, deterministic) and by `make fuzz` (minutes of CPU):

    .venv/bin/python -m tests.fuzzing --minutes 5
"""

from __future__ import annotations

import argparse
import contextlib
import io
import random
import re
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SEEDS = sorted([*ROOT.glob("examples/*.bench"), *ROOT.glob("scenarios/*.bench"), *ROOT.glob("tests/golden/*.bench")])
DOC_BLOCKS = re.findall(r"```bench\n(.*?)```", (ROOT / "docs" / "language.md").read_text(), re.DOTALL)
TOKEN = re.compile(r'\s+|"[^"\n]*"?|[A-Za-z_][A-Za-z0-9_.]*|[0-9][0-9.]*[A-Za-z%]*|.', re.S)
# what people (and fuzzers) put where it does not belong: extremes, wrong units, stray syntax
POOL = ("0", "-1", "1.5", "99999999999999999999", "1e400", "0s", "-5s", "100%", "150%", "-3%", "x0", "x1", "x1.0001",
        "{", "}", "(", ")", '"', "$x", "$", "env(", 'env("NOPE")', "\u00a0", "\t", "#", "\n", "users", "step", "hold",
        "max", "settle", "warmup", "duration", "p99.9", "p100", "p0", "nurand(0, 100, 1)", "randstr(10, 5)",
        "randstr(-1)", "uniform(5, 1)", '"results/{scenario"', '"results/{nope}.json"', "-1K", "5M", "1T", "9G",
        "for", "for 0s", "plateau", "kink", "x2", "+0 users", "seed 9007199254740993", "ramp linear", "let",
        "stop when {", "expect {", "workload", "sysbench", "tpcc", "custom", "\ufeff", "\u200b", "'", "ß", "∞")


HUGE = ("1" + "0" * 400, "1" + "0" * 400 + "K", "9" * 320 + "T", "1" + "0" * 300 + "T", "x1" + "0" * 400,
        "1" + "0" * 400 + "ms", "0." + "0" * 400 + "1")
BREAKS = ("\f", "\r", "\r\n", "\v", "\x1c", "\x85", "\u2028", "\u2029")
LONG = (6_000, 60_000)


def tokens(text: str) -> list[str]:
    return TOKEN.findall(text)


def mutate(text: str, rng: random.Random, rounds: int) -> str:
    toks = tokens(text)
    for _ in range(rounds):
        if not toks:
            toks = [rng.choice(POOL)]
        i = rng.randrange(len(toks))
        op = rng.randrange(5)
        if op == 0:
            del toks[i]
        elif op == 1:
            toks.insert(i, toks[i])
        elif op == 2:
            j = rng.randrange(len(toks))
            toks[i], toks[j] = toks[j], toks[i]
        elif op == 3:
            toks[i] = rng.choice(POOL)
        else:
            toks.insert(i, rng.choice(POOL))
    return "".join(toks)


def hostile(text: str, rng: random.Random, kind: int | None = None, values: tuple[int, ...] = (10, 300, 1000)) -> str:
    """`text` with one of the classes of issue 28 in it (kind 0-3, or one at random); a vary has one of
    `values` values."""
    kind = rng.randrange(4) if kind is None else kind
    if kind == 0:  # a number beyond a float, with or without a unit: where a number is, and as a setting
        toks = tokens(text)
        numbers = [i for i, t in enumerate(toks) if t[:1].isdigit()] or [0]
        toks[rng.choice(numbers)] = rng.choice(HUGE)
        return _in_scenario("".join(toks), f"server {{ innodb_io_capacity = {rng.choice(HUGE)} }}")
    if kind == 1:  # a name or a number of kilobytes, where a name or a number is
        toks = tokens(text)
        words = [i for i, t in enumerate(toks) if t[:1].isalnum()] or [0]
        toks[rng.choice(words)] = rng.choice(("a", "1", "a1", "_x")) * (rng.choice(LONG) // 2)
        return "".join(toks)
    if kind == 2:  # lines ended otherwise than by '\n' (in a study, half the time), breaks of Unicode in comments
        toks = tokens(hostile(text, rng, 3, (2,)) if rng.random() < 0.5 else text)
        brk, some = rng.choice(BREAKS), rng.random() < 0.5  # every line end, or some
        for i, t in enumerate(toks):
            if "\n" in t and (not some or rng.random() < 0.5):
                toks[i] = t.replace("\n", brk)
        return f"# a comment{rng.choice(BREAKS)}# and its second line\n" + "".join(toks)
    let = re.search(r"^let\s+([A-Za-z_]\w*)", text, re.M)  # a vary of many values, of a let when the file has one
    key = f"${let.group(1)}" if let else "innodb_io_capacity"
    listed = ", ".join(str(n) for n in range(100, 100 + rng.choice(values)))
    if rng.random() < 0.3 and let is not None:
        return "let zz = 1\n" + _in_scenario(text, f"vary {{ {key} = [{listed}]  $zz = [{listed}] }} zip")
    return _in_scenario(text, f"vary {{ {key} = [{listed}] }}")


# a value for each terminal the grammar matches by a pattern, among them those a person gets wrong
SAMPLES: dict[str, tuple[str, ...]] = {
    "ARRIVALS": ("poisson", "even"), "PER_SECOND": ("/s",), "RATE_UNIT": ("tps", "tpm", "qps", "nopm"),
    "COMPARATOR": (">", ">=", "<", "<=", "==", "!="), "MULTIPLIER": ("x2", "x1.5", "x1.0000001", "x0", "x1"),
    "QUANTITY": ("10s", "250ms", "80%", "256M", "1h", "5us", "3x", "-1G", "0s", "100K", "150%", "720h", "1T"),
    "NUMBER": ("1", "8", "0", "-5", "1000", "0.5", "99999999999999999999", "0.0000049999999999999996", "-1"),
    "VAR": ("$x", "$rows", "$later", "$"), "PERCENTILE": ("p99.9", "p0.000001", "p100.0"),
    "NAME": ("read", "x", "rows", "innodb_io_capacity", "max_connections", "new_order", "users", "t", "uniform",
             "env", "sequence", "oltp_read_only", "deadlock", "server"),
    "STRING": ('"SELECT 1"', '"SELECT :x"', '"\\q\\q :x"', '"mysql://u:secretpw@h/db"', '"results/{scenario}.json"',
               '"FZ_DSN"', '""', '"""SELECT\n 1"""'),
    "WS": (" ",), "COMMENT": ("# a comment",),
}


def _grammar() -> tuple[dict[str, list[tuple[object, ...]]], dict[str, str | None]]:
    """The grammar's rules by what they make, and each terminal's text when it is a fixed word."""
    from bench_dsl.language.parser import CORE_UNITS, _parser

    lark = _parser(CORE_UNITS)
    rules: dict[str, list[tuple[object, ...]]] = {}
    for rule in lark.rules:
        rules.setdefault(rule.origin.name, []).append(tuple(rule.expansion))
    words = {t.name: (t.pattern.value if t.pattern.type == "str" else None) for t in lark.terminals}
    return rules, words


def generated(rng: random.Random, depth: int = 14) -> str:
    """A file made from the grammar's rules, from `start`: each rule chosen at random, the smallest
    once `depth` rules deep (so that it ends), each terminal a fixed word or one of SAMPLES."""
    rules, words = _grammar()
    smallest = {name: min(options, key=lambda e: sum(1 for sym in e if not sym.is_term))  # type: ignore[attr-defined]
                for name, options in rules.items()}
    out: list[str] = []
    stack: list[tuple[object, int]] = [(sym, 0) for sym in reversed(rng.choice(rules["start"]))]
    while stack and len(out) < 3_000:
        sym, level = stack.pop()
        name = sym.name  # type: ignore[attr-defined]
        if sym.is_term:  # type: ignore[attr-defined]
            word = words.get(name)
            out.append(word if word is not None else rng.choice(SAMPLES.get(name, POOL)))
            continue
        expansion = smallest[name] if level >= depth else rng.choice(rules[name])
        stack.extend((s, level + 1) for s in reversed(expansion))
    joined = "".join(t + (rng.choice(("\n", " ", "  ")) if t in ("{", "}") or rng.random() < 0.1 else " ") for t in out)
    return ("let x = 1\nlet rows = 10\n" if rng.random() < 0.5 else "") + joined


def spliced(rng: random.Random) -> str:
    """A ```bench block of docs/language.md with lines of another put into it."""
    into, source = rng.choice(DOC_BLOCKS).splitlines(), rng.choice(DOC_BLOCKS).splitlines()
    a = rng.randrange(len(source))
    piece = source[a:a + rng.randint(1, 6)]
    at = rng.randrange(len(into) + 1)
    return "\n".join(into[:at] + piece + into[at:]) + "\n"


# letters of other scripts drawn as Latin ones, wide (CJK, emoji, full-width), zero-width and
# combining, bidirectional and control characters, spaces of other kinds
UNICODE = ("\u0430", "\u0435", "\u043e", "\u0455", "\u03bf", "\u6f22\u5b57", "\u30ab", "\U0001f642", "\uff21",
           "\u200b", "\u2060", "\ufeff", "\u0301", "\u202e", "\u2066", "\u2069", "\x1b[2J", "\x07", "\x7f", "\x85",
           "\u00a0", "\u3000", "\u2028", "\t")


def unicode(text: str, rng: random.Random) -> str:
    """`text` with a few of UNICODE between tokens or inside them (a keyword, a string, a comment)."""
    toks = tokens(text)
    strings = [i for i, t in enumerate(toks) if t.startswith('"') and len(t) > 1]
    if strings and rng.random() < 0.5:  # inside a string, and a mistake after it on its line: the caret's test
        i = rng.choice(strings)
        j = rng.randrange(1, len(toks[i]))
        toks[i] = toks[i][:j] + rng.choice(UNICODE) + toks[i][j:] + rng.choice((" 10q", " @", " }", " p95 > 1 parsec"))
        return "".join(toks)
    for _ in range(rng.randint(1, 4)):
        i = rng.randrange(len(toks))
        ch = rng.choice(UNICODE)
        t = toks[i]
        if t[:1].isalpha() and len(t) > 1 and rng.random() < 0.5:  # a letter swapped for a lookalike
            j = rng.randrange(len(t))
            toks[i] = t[:j] + ch + t[j + 1:]
        else:
            j = rng.randrange(len(t) + 1)
            toks[i] = t[:j] + ch + t[j:]
    return "".join(toks)


def _in_scenario(text: str, line: str) -> str:
    """`line` added at the end of the scenario (before its last '}')."""
    body = text.rstrip()
    return (body[:-1] + f"  {line}\n}}\n") if body.endswith("}") else f"{body}\n{line}\n"


@dataclass
class Outcome:
    code: int
    seconds: float
    stderr: str


def check(text: str, plan: bool = False) -> Outcome:
    """`bench check [--plan]` on `text`, in this process (the CLI's own main())."""
    from bench_dsl.cli.main import main

    with tempfile.NamedTemporaryFile("w", suffix=".bench", encoding="utf-8", delete=False) as f:
        f.write(text)
    err, out = io.StringIO(), io.StringIO()
    # the CPU time this thread spent, not the wall clock's: what a pathological input costs (8 s for a
    # 60 KB name, issue 28), the same on a machine the rest of the suite keeps busy (the wall clock
    # there gave 2 s to an ordinary file)
    t = time.thread_time()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
            code = main(["check", *(["--plan"] if plan else []), f.name])
    finally:
        Path(f.name).unlink()
    return Outcome(code, time.thread_time() - t, err.getvalue())


@dataclass
class Tally:
    tried: int = 0
    accepted: int = 0
    internal: list[str] = field(default_factory=list)
    slow: list[str] = field(default_factory=list)
    unplanned: list[str] = field(default_factory=list)
    no_hint: int = 0
    diagnostics: int = 0
    unplaced: list[str] = field(default_factory=list)  # an error about the file that does not say where
    misplaced: list[str] = field(default_factory=list)  # a caret not under its place on the line as shown
    costliest: float = 0.0  # CPU seconds of the costliest check or plan


_PLACE = re.compile(r"^\S+?:(\d+):(\d+): (?:error|warning): .*\n {2}\s*\d+ \| (.*)\n {7}\| ([ \t]*)\^", re.M)


def carets_misplaced(text: str, stderr: str) -> bool:
    """Whether a caret stands elsewhere than under its column on the line as a terminal shows it
    (escapes for control characters, two columns for a wide character, none for a zero-width one),
    measured by rich's count of columns. Lines shown in part, or with a password hidden, are left out."""
    from rich.cells import cell_len

    from bench_dsl.core.errors import normal_newlines, source_line
    from bench_dsl.core.printable import printable

    source = normal_newlines(text.removeprefix("\ufeff"))  # as check reads a file: without its byte order mark
    for found in _PLACE.finditer(stderr):
        line = source_line(source, int(found.group(1)))
        col = int(found.group(2))
        if line is None or found.group(3).startswith("...") or "://" in line or "\u200d" in line:
            continue
        before = printable(line[:col - 1]).replace("\t", " ")
        if cell_len(found.group(4).replace("\t", " ")) != cell_len(before):
            return True
    return False


def judge(text: str, tally: Tally) -> None:
    tally.tried += 1
    first = check(text)
    tally.costliest = max(tally.costliest, first.seconds)
    if first.code not in (0, 2):
        tally.internal.append(text)
    if first.seconds > 2.0:
        tally.slow.append(text)
    if carets_misplaced(text, first.stderr):
        tally.misplaced.append(text)
    errors = first.stderr.count(": error: ")
    if re.search(r"^error: ", first.stderr, re.M):  # no -D is given here: every error has a place in the file
        tally.unplaced.append(text)
    tally.diagnostics += errors
    tally.no_hint += max(0, errors - first.stderr.count("\n  hint: "))
    if first.code == 0:
        tally.accepted += 1
        planned = check(text, plan=True)
        tally.costliest = max(tally.costliest, planned.seconds)
        if planned.code != 0:
            tally.unplanned.append(text)
        if planned.seconds > 2.0:
            tally.slow.append(text)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--minutes", type=float, default=5.0, help="minutes of this process's CPU time")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    rng = random.Random(args.seed)
    texts = [p.read_text() for p in SEEDS]
    tally = Tally()
    end = time.process_time() + args.minutes * 60  # CPU time: as many inputs on a busy machine as on a quiet one
    while time.process_time() < end:
        judge(fuzzed(rng, texts), tally)
    print(f"inputs tried: {tally.tried:,}  accepted by check: {tally.accepted:,}  internal errors: "
          f"{len(tally.internal)}  over 2 s: {len(tally.slow)}  accepted but not plannable: {len(tally.unplanned)}  "
          f"diagnostics without a hint: {tally.no_hint} of {tally.diagnostics}  "
          f"without a place: {len(tally.unplaced)}  carets misplaced: {len(tally.misplaced)}  "
          f"costliest: {tally.costliest:.2f} s of CPU")
    for what, found in (("internal error", tally.internal), ("over 2 s of CPU", tally.slow),
                        ("not plannable", tally.unplanned), ("an error without its place", tally.unplaced),
                        ("a caret misplaced", tally.misplaced)):
        for text in found[:3]:
            print(f"--- {what}:\n{text}")
    return 1 if (tally.internal or tally.slow or tally.unplanned or tally.unplaced or tally.no_hint
                 or tally.misplaced) else 0


STRATEGIES = ("mutation", "issue 28's classes", "generated from the grammar", "doc blocks spliced", "unicode")


def fuzzed(rng: random.Random, texts: list[str], strategy: str | None = None) -> str:
    """One input of `strategy` (or of one at random, mutations the most often)."""
    strategy = strategy or rng.choices(STRATEGIES, weights=(5, 2, 1, 1, 1))[0]
    text = rng.choice(texts)
    if strategy == "issue 28's classes":
        return hostile(text, rng)
    if strategy == "generated from the grammar":
        return generated(rng)
    if strategy == "doc blocks spliced":
        return spliced(rng)
    if strategy == "unicode":
        return unicode(text if rng.random() < 0.7 else rng.choice(DOC_BLOCKS), rng)
    return mutate(text, rng, rng.randint(1, 6))


if __name__ == "__main__":
    sys.exit(main())
