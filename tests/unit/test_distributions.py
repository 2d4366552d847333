"""The keys the C executor draws follow sysbench's own distributions: 10^6 draws of each compared
with 10^6 drawn by sysbench itself (its Lua API, `sysbench.rand.special` and the others, run by the
installed sysbench 1.0) with a two-sample Kolmogorov-Smirnov test, and zipf against its exact
distribution. Statistical, not bit for bit: the executor has a generator of its own. The driver
path's Python draws (BENCH_RAWEXEC=0) are held to the same reference, with fewer draws.

The critical value is the asymptotic one at alpha = 0.001 (c = 1.95); for discrete values it is
conservative, so a pass is no accident of ties, and the test's power is shown by a distribution that
must fail it. Both sides are seeded (the executor's generator and sysbench's --rand-seed), so each
comparison gives the same D at every run: a pass is not a roll of the dice either.

The comparisons of 10^6 draws a side are marked slow (`make test` runs them, `make test-min` does not);
the driver path's and the power test's, of 200,000, are in the fast part."""

from __future__ import annotations

import math
import os
import random
import shutil
import subprocess
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from bench_dsl import native
from bench_dsl.workloads.sysbench.plugin import SysbenchWorkload, key_draw
from bench_dsl.workloads.sysbench.workload import _SysbenchSession

N = 1_000_000
C_ALPHA = 1.95  # alpha = 0.001

# one event of one thread: sysbench seeds a thread's generator from --rand-seed, not the main
# thread's, where a script's body runs (from the clock: a test drawn there passed or failed by chance)
LUA = """
function event()
  local n = tonumber(os.getenv("N"))
  local f = sysbench.rand[os.getenv("DIST")]
  local lo, hi = tonumber(os.getenv("LO")), tonumber(os.getenv("HI"))
  local buf = {}
  for i = 1, n do
    buf[#buf + 1] = f(lo, hi)
    if #buf == 10000 then io.write(table.concat(buf, "\\n"), "\\n"); buf = {} end
  end
  if #buf > 0 then io.write(table.concat(buf, "\\n"), "\\n") end
end
"""


def sysbench_draws(tmp: Path, dist: str, lo: int, hi: int, n: int, options: Sequence[str] = ()) -> list[int]:
    """n values of sysbench.rand.<dist>(lo, hi), from sysbench itself."""
    exe = shutil.which("sysbench")
    assert exe is not None, "sysbench is installed by the set-up (scripts/setup.sh)"
    script = tmp / "draw.lua"
    script.write_text(LUA)
    env = {**os.environ, "N": str(n), "DIST": dist, "LO": str(lo), "HI": str(hi)}
    out = subprocess.run([exe, "--rand-seed=20261124", "--threads=1", "--events=1", *options, str(script), "run"], capture_output=True, text=True, env=env, timeout=120, check=True)
    values = [int(line) for line in out.stdout.splitlines() if line.strip().isdigit()]
    assert len(values) == n, out.stderr
    return values


def ks_two_samples(a: Sequence[int], b: Sequence[int]) -> tuple[float, float]:
    """(D, the critical value at alpha 0.001) of two samples."""
    ca, cb = Counter(a), Counter(b)
    fa = fb = 0
    d = 0.0
    for v in sorted(ca.keys() | cb.keys()):
        fa += ca.get(v, 0)
        fb += cb.get(v, 0)
        d = max(d, abs(fa / len(a) - fb / len(b)))
    return d, C_ALPHA * math.sqrt((len(a) + len(b)) / (len(a) * len(b)))


def ks_one_sample(a: Sequence[int], cdf: Callable[[int], float]) -> tuple[float, float]:
    ca = Counter(a)
    f = 0
    d = 0.0
    for v in sorted(ca):
        d = max(d, abs(f / len(a) - cdf(v - 1)))
        f += ca[v]
        d = max(d, abs(f / len(a) - cdf(v)))
    return d, C_ALPHA / math.sqrt(len(a))


def c_draws(draw: tuple[object, ...], n: int = N, seed: int = 20261124) -> list[int]:
    assert native.compiled is not None
    return native.compiled.sample(draw, seed, n)  # type: ignore[no-any-return]


# (sysbench's name, its options, the range, the executor's draw)
CASES = [
    ("uniform", (), (1, 100_000), ("uniform", 1, 100_000)),
    ("special", (), (1, 100_000), ("special", 1, 100_000, 1.0, 75.0, 12)),
    ("special", ("--rand-spec-pct=5", "--rand-spec-res=50", "--rand-spec-iter=6"), (1, 20_000),
     ("special", 1, 20_000, 5.0, 50.0, 6)),
    ("gaussian", (), (1, 100_000), ("gaussian", 1, 100_000, 12)),
    ("gaussian", ("--rand-spec-iter=3",), (10, 5_000), ("gaussian", 10, 5_000, 3)),
    ("pareto", (), (1, 100_000), ("pareto", 1, 100_000, 0.2)),
    ("pareto", ("--rand-pareto-h=0.35",), (1, 3_000), ("pareto", 1, 3_000, 0.35)),
]


@pytest.mark.slow
@pytest.mark.parametrize("dist, options, bounds, draw", CASES, ids=[f"{c[0]}{'+' if c[1] else ''}" for c in CASES])
def test_the_executor_draws_sysbench_s_distributions(dist: str, options: tuple[str, ...], bounds: tuple[int, int],
                                                      draw: tuple[object, ...], tmp_path: Path) -> None:
    ours = c_draws(draw)
    theirs = sysbench_draws(tmp_path, dist, *bounds, N, options)
    assert min(ours) >= bounds[0] and max(ours) <= bounds[1]
    d, critical = ks_two_samples(ours, theirs)
    assert d < critical, f"{dist} {options}: D = {d:.5f} >= {critical:.5f}"


def test_the_comparison_tells_distributions_apart(tmp_path: Path) -> None:
    """The test's power: sysbench's special against a uniform draw, and its pareto against the
    exponent bench-dsl's Python path used before (u ** 1.25), both rejected by far."""
    special = sysbench_draws(tmp_path, "special", 1, 100_000, 200_000)
    d, critical = ks_two_samples(c_draws(("uniform", 1, 100_000), 200_000), special)
    assert d > 10 * critical
    pareto = sysbench_draws(tmp_path, "pareto", 1, 100_000, 200_000)
    rng = random.Random(1)
    old = [1 + int(100_000 * rng.random() ** 1.25) for _ in range(200_000)]
    d, critical = ks_two_samples(old, pareto)
    assert d > 10 * critical


@pytest.mark.slow
@pytest.mark.parametrize("lo, hi, exponent", [(1, 1_000, 0.8), (1, 100_000, 0.8), (5, 500, 1.3)])
def test_zipf_draws_its_exact_distribution(lo: int, hi: int, exponent: float) -> None:
    """P(k) proportional to 1 / (k - lo + 1) ** exponent on [lo, hi]: what sysbench 1.1's zipfian (and
    the language's zipf()) draw by rejection-inversion."""
    weights = [1 / k ** exponent for k in range(1, hi - lo + 2)]
    total = math.fsum(weights)
    cum = [0.0]
    for w in weights:
        cum.append(cum[-1] + w / total)

    def cdf(v: int) -> float:
        return cum[min(max(v - lo + 1, 0), len(cum) - 1)]

    ours = c_draws(("zipf", lo, hi, exponent))
    assert min(ours) >= lo and max(ours) <= hi
    d, critical = ks_one_sample(ours, cdf)
    assert d < critical, f"D = {d:.5f} >= {critical:.5f}"


@pytest.mark.parametrize("rand_type", ["uniform", "special", "gaussian", "pareto"])
def test_the_driver_path_draws_the_same_distributions(rand_type: str, tmp_path: Path) -> None:
    """BENCH_RAWEXEC=0 draws keys in Python (random.Random): the same distributions, the same
    sysbench options, as the executor's (key_draw) and sysbench's."""
    n, size = 200_000, 50_000
    spec = SysbenchWorkload(test="oltp_point_select", table_size=size, rand_type=rand_type)
    session = _SysbenchSession(spec, random.Random(3))
    python = [session.get_id() for _ in range(n)]
    theirs = sysbench_draws(tmp_path, rand_type, 1, size, n)
    d, critical = ks_two_samples(python, theirs)
    assert d < critical, f"{rand_type}: D = {d:.5f} >= {critical:.5f}"
    draw = key_draw(spec)
    assert draw.kind == {"uniform": "uniform", "special": "special", "gaussian": "gaussian", "pareto": "pareto"}[rand_type]
    d, critical = ks_two_samples(c_draws((draw.kind, *draw.args), n), theirs)
    assert d < critical


def test_strings_are_sysbench_s_shapes() -> None:
    """c and pad: groups of 11 digits joined by dashes (119 and 59 characters), every digit
    equally likely; randstr: letters and digits of a length within its bounds."""
    c = c_draws(("digits", 10), 2_000)
    assert all(len(s) == 119 and s.count("-") == 9 and all(len(g) == 11 and g.isdigit() for g in s.split("-"))
               for s in c)
    digits = Counter("".join(c).replace("-", ""))
    expected = 2_000 * 110 / 10
    assert set(digits) == set("0123456789") and max(abs(v - expected) for v in digits.values()) < 0.05 * expected
    strings = c_draws(("randstr", 2, 7), 5_000)
    assert {len(s) for s in strings} == set(range(2, 8)) and all(s.isalnum() and s.isascii() for s in strings)
