"""A served powercap tree (the kernel's /sys/class/powercap as RAPL shows it) for the tests of `power`:
a package with its core subzone and a DRAM zone, whose energy counters a process of their own
advances at fixed watts and wraps at max_energy_range_uj, as the kernel's do. This machine has no
RAPL; bench-dsl reads this tree as it reads the real one (`power rapl "DIR"`), and so does a real
node_exporter given it as --path.sysfs."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

# the zones: (directory, name, watts, wraps at joules); core is inside its package: never counted. They
# wrap every 5 s or so, a run of a few steps crosses several wraps; a reading late by that much (a
# loaded machine) would miss one, as it would on a real machine whose counters wrap faster than it reads
ZONES = (("intel-rapl:0", "package-0", 80.0, 400.0), ("intel-rapl:0/intel-rapl:0:0", "core", 50.0, 400.0),
         ("intel-rapl:0/intel-rapl:0:1", "dram", 20.0, 130.0))
WATTS = 100.0  # what bench-dsl must read: the package's and DRAM's

# every 10 ms, each zone's counter at its watts since the start, modulo its range (written whole:
# a reader never sees half a number)
FEED = """
import os, sys, time
zones = [(p, float(w), float(r)) for p, w, r in (a.split(",") for a in sys.argv[1:])]
t0 = time.monotonic()
while True:
    t = time.monotonic() - t0
    for p, w, r in zones:
        with open(p + ".new", "w") as f:
            f.write(str(int((7e6 + w * t * 1e6) % (r * 1e6))))
        os.replace(p + ".new", p)
    time.sleep(0.01)
"""


def tree(root: Path, wraps: bool = True) -> Path:
    """The powercap directory, written (its counters standing still until fed); without `wraps`,
    ranges no test reaches (a node_exporter's counters do not say where they wrap)."""
    powercap = root / "class" / "powercap"
    for where, name, _, wraps_at in _zones(wraps):
        d = powercap / where
        d.mkdir(parents=True, exist_ok=True)
        (d / "name").write_text(name + "\n")
        (d / "energy_uj").write_text("7000000\n")
        (d / "max_energy_range_uj").write_text(f"{int(wraps_at * 1e6)}\n")
        (d / "enabled").write_text("1\n")
        if "/" in where:  # the kernel lists subzones at the top too
            (powercap / where.split("/")[-1]).symlink_to(where)
    return powercap


@contextmanager
def served(root: Path, wraps: bool = True) -> Iterator[Path]:
    """The powercap directory, its counters advancing (WATTS counted) until the block ends."""
    powercap = tree(root, wraps)
    feeder = subprocess.Popen([sys.executable, "-c", FEED, *(f"{powercap / where / 'energy_uj'},{w},{r}"
                                                           for where, _, w, r in _zones(wraps))])
    try:
        yield powercap
    finally:
        feeder.kill()
        feeder.wait()


def _zones(wraps: bool) -> tuple[tuple[str, str, float, float], ...]:
    return ZONES if wraps else tuple((where, name, w, 1e9) for where, name, w, _ in ZONES)
