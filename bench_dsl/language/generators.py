"""The value generators of the language (uniform, zipf, nurand, sequence, choice, randstr, special):
one table, GENERATORS, that says how each is called (validation reads it) and builds what draws its
values (transactions and fills read it)."""

from __future__ import annotations

import itertools
import math
import random
import string
from collections.abc import Callable
from dataclasses import dataclass

from bench_dsl.language.model import Generator
from bench_dsl.language.statements import Draw

Gen = Callable[[random.Random], int | float | str]
Arguments = tuple[int | float | str, ...]

_ALNUM = string.ascii_letters + string.digits


def _no_problem(args: Arguments) -> str | None:
    return None


@dataclass(frozen=True, slots=True)
class GeneratorKind:
    """One generator: how a call of it is written, and what draws its values."""

    signature: str  # as messages show it: uniform(min, max)
    min_args: int
    max_args: int | None  # None: as many as wanted
    # (arguments, run seed, offset) -> the generator; `offset` shifts sequence() so that parallel
    # fillers do not overlap
    build: Callable[[Arguments, int, int], Gen]
    text_arguments: bool = False  # its arguments may be strings (choice); the others take plain numbers
    # what is wrong with arguments of the right number and types ("the minimum is larger than the
    # maximum"), or None
    problem: Callable[[Arguments], str | None] = _no_problem

    @property
    def name(self) -> str:
        return self.signature.split("(", 1)[0]

    def arity(self) -> str:
        """How many arguments it takes, for a message: "2 arguments", "1 to 2 arguments"."""
        lo, hi = self.min_args, self.max_args
        if hi is None:
            return f"at least {lo} argument{'s' if lo != 1 else ''}"
        if lo == hi:
            return f"{lo} argument{'s' if lo != 1 else ''}"
        return f"{lo} to {hi} arguments"


def _ordered(args: Arguments) -> str | None:
    return "the minimum is larger than the maximum" if args[0] > args[1] else None  # type: ignore[operator]


def _randstr_problem(args: Arguments) -> str | None:
    lengths = [float(a) for a in args]
    if any(not x.is_integer() or x < 0 for x in lengths):
        return "the lengths are whole numbers, 0 or more"
    if len(lengths) > 1 and lengths[0] > lengths[1]:
        return "the minimum length is larger than the maximum"
    return "a string is at most 1,000,000 characters" if max(lengths) > 1_000_000 else None


def _nurand_problem(args: Arguments) -> str | None:
    if any(not float(a).is_integer() for a in args):
        return "A, x and y are whole numbers"
    a, x, y = (int(float(v)) for v in args)
    return "A is 0 or more" if a < 0 else "x is larger than y" if x > y else None


def _sequence_problem(args: Arguments) -> str | None:
    return "the start is a whole number" if args and not float(args[0]).is_integer() else None


def _zipf_problem(args: Arguments) -> str | None:
    return _ordered(args) or ("the exponent must be larger than 0" if float(args[2]) <= 0 else None)


def _uniform(a: Arguments, seed: int, offset: int) -> Gen:
    lo, hi = a[0], a[1]
    if isinstance(lo, int) and isinstance(hi, int):
        return lambda rng: rng.randint(lo, hi)
    return lambda rng: rng.uniform(float(lo), float(hi))


def _sequence(a: Arguments, seed: int, offset: int) -> Gen:
    counter = itertools.count((int(a[0]) if a else 1) + offset)
    return lambda rng: next(counter)


def _choice(a: Arguments, seed: int, offset: int) -> Gen:
    options = list(a)
    return lambda rng: rng.choice(options)


def _randstr(a: Arguments, seed: int, offset: int) -> Gen:
    lo = int(a[0])
    hi = int(a[1]) if len(a) > 1 else lo
    return lambda rng: "".join(rng.choices(_ALNUM, k=rng.randint(lo, hi)))


def _nurand(a: Arguments, seed: int, offset: int) -> Gen:
    # C of NURand: drawn once per run (clause 2.1.6), from the run's seed
    return nurand(int(a[0]), int(a[1]), int(a[2]), random.Random(seed).randint(0, int(a[0])))


# In the order messages list them ("generators: uniform(min, max), ...").
GENERATORS: dict[str, GeneratorKind] = {kind.name: kind for kind in (
    GeneratorKind("uniform(min, max)", 2, 2, _uniform, problem=_ordered),
    GeneratorKind("zipf(min, max, exponent)", 3, 3, lambda a, seed, offset: zipf(int(a[0]), int(a[1]), float(a[2])),
                  problem=_zipf_problem),
    GeneratorKind("nurand(A, x, y)", 3, 3, _nurand, problem=_nurand_problem),
    GeneratorKind("sequence(start)", 0, 1, _sequence, problem=_sequence_problem),
    GeneratorKind("choice(a, b, ...)", 1, None, _choice, text_arguments=True),
    GeneratorKind("randstr(min_len, max_len)", 1, 2, _randstr, problem=_randstr_problem),
    GeneratorKind("special(min, max)", 2, 2, lambda a, seed, offset: special(int(a[0]), int(a[1])), problem=_ordered),
)}


def compile_value(spec: Generator | int | float | str, seed: int, offset: int = 0) -> Gen:
    """A function rng -> value. `offset` shifts sequence() so parallel fillers do not overlap."""
    if not isinstance(spec, Generator):
        constant = spec
        return lambda rng: constant
    kind = GENERATORS.get(spec.name)
    if kind is None:
        raise ValueError(spec.name)
    return kind.build(spec.args, seed, offset)


def nurand(a: int, x: int, y: int, c: int) -> Gen:
    """TPC-C clause 2.1.6: NURand(A, x, y) = (((random(0, A) | random(x, y)) + C) % (y - x + 1)) + x."""
    return lambda rng: (((rng.randint(0, a) | rng.randint(x, y)) + c) % (y - x + 1)) + x


def special(a: int, b: int, pct: float = 1.0, res: float = 75.0, iters: int = 12) -> Gen:
    """sysbench 1.0's default 'special' distribution: res% of values fall in the middle pct% of
    [a, b]; the rest follow a bell curve made of `iters` uniform draws."""
    t = b - a
    res_mult = 100.0 / (100.0 - res)
    pct_mult = pct / 100.0
    pct2_mult = pct / 200.0
    iter_mult = 1.0 / iters

    def gen(rng: random.Random) -> int:
        rnd = rng.random()
        if rnd * t * res_mult < t:
            s = 0.0
            for _ in range(iters):
                s += rng.random()
            return a + int(s * t * iter_mult)
        d = t * pct_mult
        return a + int(rnd * (d + 1) + t / 2 - t * pct2_mult)

    def gen12(rng: random.Random) -> int:
        # sysbench's default of 12 draws, unrolled: a third less time for every key drawn, the
        # same values (the same draws added in the same order)
        r = rng.random
        rnd = r()
        if rnd * t * res_mult < t:
            s = r() + r() + r() + r() + r() + r() + r() + r() + r() + r() + r() + r()
            return a + int(s * t * iter_mult)
        d = t * pct_mult
        return a + int(rnd * (d + 1) + t / 2 - t * pct2_mult)

    return gen12 if iters == 12 else gen


def zipf(a: int, b: int, exponent: float) -> Gen:
    """Bounded Zipf over [a, b] by rejection-inversion (Hörmann and Derflinger, 1996)."""
    n = b - a + 1
    e = exponent

    def h_integral(x: float) -> float:
        log_x = math.log(x)
        return _helper2((1 - e) * log_x) * log_x

    def h(x: float) -> float:
        return math.exp(-e * math.log(x))

    def h_integral_inverse(x: float) -> float:
        t = max(x * (1 - e), -1.0)
        return math.exp(_helper1(t) * x)

    h_x1 = h_integral(1.5) - 1.0
    h_n = h_integral(n + 0.5)
    s = 2 - h_integral_inverse(h_integral(2.5) - h(2))

    def gen(rng: random.Random) -> int:
        while True:
            u = h_n + rng.random() * (h_x1 - h_n)
            x = h_integral_inverse(u)
            k = min(max(int(x + 0.5), 1), n)
            if k - x <= s or u >= h_integral(k + 0.5) - h(k):
                return a + k - 1

    return gen


def _helper1(x: float) -> float:
    return math.log1p(x) / x if abs(x) > 1e-8 else 1 - x * (0.5 - x * (1 / 3 - 0.25 * x))


def _helper2(x: float) -> float:
    return math.expm1(x) / x if abs(x) > 1e-8 else 1 + x * 0.5 * (1 + x / 3 * (1 + 0.25 * x))



def native_draw(spec: Generator | int | float | str, seed: int, offset: int = 0) -> Draw:
    """What the C executor draws for a value of the language: the same distribution as
    compile_value's (not the same values: it has its own generator, seeded per user). `offset`
    shifts a sequence, as compile_value's does (a part of a fill starts where the one before ends)."""
    if not isinstance(spec, Generator):
        return Draw("const", (spec,))
    a = spec.args
    match spec.name:
        case "uniform":
            if isinstance(a[0], int) and isinstance(a[1], int):
                return Draw("uniform", (a[0], a[1]))
            return Draw("uniform_real", (float(a[0]), float(a[1])))
        case "zipf":
            return Draw("zipf", (int(a[0]), int(a[1]), float(a[2])))
        case "nurand":
            # C is the run's, drawn as _nurand draws it (clause 2.1.6: once per run)
            big_a = int(float(a[0]))
            return Draw("nurand", (big_a, int(float(a[1])), int(float(a[2])), random.Random(seed).randint(0, big_a)))
        case "sequence":
            return Draw("sequence", ((int(float(a[0])) if a else 1) + offset,))
        case "choice":
            return Draw("choice", tuple(a))
        case "randstr":
            lo = int(float(a[0]))
            return Draw("randstr", (lo, int(float(a[1])) if len(a) > 1 else lo))
        case "special":
            return Draw("special", (int(a[0]), int(a[1]), 1.0, 75.0, 12))
    raise ValueError(spec.name)
