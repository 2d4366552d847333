"""The power the server's machine draws, read where a data centre has it (the scenario's `power`,
bench_dsl.language.power): RAPL through the kernel's powercap files, a node_exporter's rapl or hwmon
figures, any Prometheus metric (an IPMI exporter's, a PDU's), or a command that prints watts.

A source reads either energy (counters of joules: RAPL's zones) or power (watts now: hwmon, IPMI,
a PDU). PowerWatch reads it once a second in the background; `take()` gives what the machine drew
since the last take: joules over seconds, and the highest power read (a counter's readings are each
a mean over their second). A reading that fails is a warning and a gap, never 0 W: a window with no
reading has no power figure, and a source that never answered gives the reason instead
(`PowerWatch.reason`)."""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import re
import signal
import subprocess
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from bench_dsl.core.errors import error_reason
from bench_dsl.language.power import unit_of
from bench_dsl.language.power_source import JOULES, POWERCAP, WATTS, PowerSource
from bench_dsl.measure.energy import PowerSample
from bench_dsl.server.hostwatch import SharedPage, fetch
from bench_dsl.server.periodic import Periodic

COMMAND_TIMEOUT = 5.0  # an ipmitool reading takes a fraction of a second; a BMC that hangs must not hold the run
ZONE = re.compile(r"intel-rapl:\d+(:\d+)?")  # a package and its subzones (AMD's too are named so)
# a number with a unit of power in a command's words: "Instantaneous power reading: 220 Watts"
WATTS_IN_TEXT = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)\s*(kW|kilowatts?|mW|milliwatts?|W|[Ww]atts?)(?![A-Za-z])")
TEXT_UNITS = {"kw": 1000.0, "kilowatt": 1000.0, "kilowatts": 1000.0, "mw": 0.001, "milliwatt": 0.001,
              "milliwatts": 0.001, "w": 1.0, "watt": 1.0, "watts": 1.0}


class NoReading(ValueError):
    """A source that answered with nothing that is a reading: the reason, in words."""


@dataclass(frozen=True, slots=True)
class PowerReading:
    at: float  # monotonic
    counters: dict[str, tuple[float, float | None]] | None  # energy: zone -> (joules, where it wraps)
    watts: float | None = None  # power: read now


def difference(before: PowerReading, after: PowerReading) -> PowerSample | None:
    """None where the two cannot be compared: a counter that went back without a known wrap (a
    reset: a node_exporter's counters after a restart), or zones that changed."""
    secs = after.at - before.at
    if secs <= 0:
        return None
    if after.counters is not None and before.counters is not None:
        if after.counters.keys() != before.counters.keys():
            return None
        joules = 0.0
        for zone, (now, wraps) in after.counters.items():
            grew = now - before.counters[zone][0]
            if grew < 0:
                if wraps is None:
                    return None
                grew += wraps  # RAPL's counters wrap at max_energy_range_uj
            joules += grew
        # a machine that runs draws power: counters that stand still are a zone turned off or a
        # stuck source, never 0 W
        return PowerSample(secs, joules, joules / secs) if joules > 0 else None
    if not after.watts or not before.watts:  # none, or 0 W: a sensor that reads nothing
        return None
    return PowerSample(secs, (before.watts + after.watts) / 2 * secs, max(before.watts, after.watts))


# the sources ---------------------------------------------------------------------------------------
def read_rapl(root: str) -> dict[str, tuple[float, float | None]]:
    """The energy counters of a powercap tree, in joules: the platform's (psys) where it has one,
    else each package's and each DRAM's (core and uncore are parts of their package)."""
    base = Path(root)
    try:
        names = sorted(p.name for p in base.iterdir() if ZONE.fullmatch(p.name))
    except FileNotFoundError:
        raise NoReading(f"{root} does not exist: this machine has no powercap (RAPL needs a kernel with "
                        "intel_rapl, on the machine itself, not a virtual one)") from None
    except PermissionError:
        raise NoReading(f"reading {root} was refused: run bench-dsl as root") from None
    zones = {n: _text(base / n / "name") for n in names}
    if not zones:
        raise NoReading(f"{root} has no intel-rapl zone: this machine has no RAPL (a virtual machine, or a "
                        "processor without it)")
    kept = [n for n, z in zones.items() if z == "psys"] or \
           [n for n, z in zones.items() if z.startswith("package") or z == "dram"]
    if not kept:
        raise NoReading(f"{root} has no package, dram or psys zone (it has {', '.join(sorted(set(zones.values())))})")
    out: dict[str, tuple[float, float | None]] = {}
    for n in kept:
        uj = _number(base / n / "energy_uj")
        try:
            wraps: float | None = _number(base / n / "max_energy_range_uj") / 1e6
        except NoReading:
            wraps = None  # a wrap then reads as a gap
        out[f"{zones[n]} ({n})"] = (uj / 1e6, wraps)
    return out


def _text(path: Path) -> str:
    try:
        return path.read_text(encoding="ascii", errors="replace").strip()
    except PermissionError:
        # since Linux 5.10 (CVE-2020-8694) only root may read RAPL's energy
        raise NoReading(f"reading {path} was refused: RAPL's energy is root's to read; run bench-dsl as root, or "
                        f"let its user read it (chmod o+r {path.parent}/energy_uj)") from None
    except OSError as exc:
        raise NoReading(f"{path}: {error_reason(exc)}") from None


def _number(path: Path) -> float:
    text = _text(path)
    try:
        v = float(text)
    except ValueError:
        raise NoReading(f"{path} holds {text[:40]!r}, not a number") from None
    if not math.isfinite(v) or v < 0:
        raise NoReading(f"{path} holds {text[:40]!r}: a counter of energy is a finite number, never negative")
    return v


def read_exporter_page(text: str) -> tuple[dict[str, tuple[float, float | None]] | None, float | None]:
    """A node_exporter's power: its RAPL counters (node_rapl_*_joules_total: psys alone, else the
    packages and DRAM), else the sum of its hwmon power sensors (node_hwmon_power_watt, else
    node_hwmon_power_average_watt, one per sensor)."""
    rapl: dict[str, dict[str, float]] = {}
    sensors: dict[tuple[str, str], dict[str, float]] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if (m := re.fullmatch(r"node_rapl_(\w+)_joules_total", s.name)) is not None:
                rapl.setdefault(m.group(1), {})[s.labels.get("path") or s.labels.get("index", "?")] = \
                    _finite(s.name, s.value)
            elif (m := re.fullmatch(r"node_hwmon_power(?:_(input|average))?_watt", s.name)) is not None:
                # a sensor's powerN_input is node_hwmon_power_watt, its powerN_average ..._average_watt;
                # its cap, max and crit are limits, never readings
                key = (s.labels.get("chip", "?"), s.labels.get("sensor", "?"))
                sensors.setdefault(key, {})[m.group(1) or "input"] = _finite(s.name, s.value)
    zones = {"psys": rapl["psys"]} if "psys" in rapl else {k: v for k, v in rapl.items()
                                                            if k.startswith("package") or k == "dram"}
    if zones:
        return {f"{z} {where}": (j, None) for z, each in zones.items() for where, j in each.items()}, None
    if sensors:
        return None, sum(v.get("input", v.get("average", 0.0)) for v in sensors.values())
    raise NoReading("the page has no node_rapl_*_joules_total and no node_hwmon_power_*_watt: turn on the "
                    "node_exporter's rapl or hwmon collector (or the machine has neither)")


def read_metric(text: str, selector: str, unit: str | None) -> tuple[dict[str, tuple[float, float | None]] | None,
                                                                       float | None]:
    """A metric of a Prometheus page, its samples that have the selector's labels summed (two power
    supplies): watts, or joules of a counter of energy."""
    name, _, rest = selector.partition("{")
    wanted = dict(re.findall(r'([a-zA-Z_]\w*)\s*=\s*"([^"]*)"', rest))
    unit = unit or unit_of(selector) or "W"
    found: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name == name and all(s.labels.get(k) == v for k, v in wanted.items()):
                found[",".join(f"{k}={v}" for k, v in sorted(s.labels.items()))] = _finite(s.name, s.value)
    if not found:
        raise NoReading(f"the page has no {selector}")
    if unit in JOULES:
        return {k: (v * JOULES[unit], None) for k, v in found.items()}, None
    return None, sum(found.values()) * WATTS[unit]


def _finite(name: str, value: float) -> float:
    if not math.isfinite(value) or value < 0:
        raise NoReading(f"{name} is {value}: a power or an energy is a finite number, never negative")
    return float(value)


def read_command(argv: tuple[str, ...], timeout: float = COMMAND_TIMEOUT) -> float:
    """The watts a command prints (`ipmitool dcmi power reading`: "Instantaneous power reading: 220 Watts"),
    or a bare number of watts. Run without a shell, with a timeout."""
    try:
        # a session of its own: on a timeout its whole group is killed, children that hold its output too
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                start_new_session=True, env=_without_secrets(os.environ))
    except FileNotFoundError:
        raise NoReading(f"{argv[0]}: no such command") from None
    except OSError as exc:
        raise NoReading(f"{argv[0]}: {error_reason(exc)}") from None
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise NoReading(f"{argv[0]} printed nothing in {timeout:g} s") from None
    out = stdout.decode("utf-8", errors="replace")
    if proc.returncode != 0:
        said = (stderr.decode("utf-8", errors="replace").strip() or out.strip()).splitlines()
        raise NoReading(f"{argv[0]} exited with status {proc.returncode}" + (f": {said[-1][:200]}" if said else ""))
    if (m := WATTS_IN_TEXT.search(out)) is not None:
        return float(m.group(1)) * TEXT_UNITS[m.group(2).lower()]
    try:
        v = float(out.strip())
    except ValueError:
        raise NoReading(f"{argv[0]} printed no power: {out.strip()[:80]!r} (a number of watts, or one with W, "
                        "Watts or kW)") from None
    if not math.isfinite(v) or v < 0:
        raise NoReading(f"{argv[0]} printed {out.strip()[:40]!r}: a power is a finite number, never negative")
    return v


# an address with a password in it (mysql://bench:pw@db1/...): the database's, never a power meter's
WITH_PASSWORD = re.compile(r"://[^/@\s:]*:[^/@\s]*@")


def _without_secrets(env: Mapping[str, str]) -> dict[str, str]:
    """The environment a command runs in: ours, but the addresses that hold the database's password."""
    return {k: v for k, v in env.items() if not WITH_PASSWORD.search(v)}


def read(source: PowerSource) -> PowerReading:
    """One reading of the source, now (blocking: PowerWatch runs it in a thread)."""
    at = time.monotonic()
    match source.kind:
        case "rapl":
            return PowerReading(at, read_rapl(source.at or POWERCAP))
        case "node_exporter":
            return PowerReading(at, *read_exporter_page(fetch(source.at or "")))
        case "prometheus":
            return PowerReading(at, *read_metric(fetch(source.at or ""), source.metric or "", source.unit))
    return PowerReading(time.monotonic(), None, read_command(source.argv))


class PowerWatch(Periodic[PowerReading]):
    """Readings in the background, one a second; `take()` gives what was drawn since the last take."""

    def __init__(self, source: PowerSource, warn: Callable[[str], None], page: SharedPage | None = None) -> None:
        """`page`: the monitor's node_exporter page as the host's watch reads it (power node_exporter):
        one scrape a second for both."""
        super().__init__()
        self.source = source
        self.warn = warn
        self.page = page
        self._gap = False  # the last take compared two readings and gave no figure
        self.measured = False  # a take() has given a figure

    @property
    def reason(self) -> str | None:
        """Why there is no power figure (None: there is one)."""
        if self.measured:
            return None
        return f"{self.source.describe()}: {self.last_error}" if self.last_error else \
            f"{self.source.describe()} gave no two readings to compare"

    def take(self) -> PowerSample | None:
        if (pair := self.newest()) is None:
            return None
        before, now = pair
        sample = difference(before, now) if before is not None else None
        if sample is None and before is not None and not self._failing:
            self.last_error = ("its counters stood still or went back (a zone turned off, a source restarted)"
                               if now.counters is not None else "it gave no power")
            if not self._gap:
                self.warn(f"power: {self.source.describe()}: {self.last_error}; the power figures have a gap")
        self._gap = sample is None and before is not None
        self.measured = self.measured or sample is not None
        return sample

    async def _reading(self) -> PowerReading:
        if self.page is not None and self.source.kind == "node_exporter":
            at, text = await self.page.get()
            return PowerReading(at, *read_exporter_page(text))
        return await asyncio.to_thread(read, self.source)

    def _failed(self, exc: Exception, quiet: bool) -> None:
        self.last_error = str(exc) if isinstance(exc, NoReading) else error_reason(exc)
        if not quiet:
            self.warn(f"power: could not read {self.source.describe()}: {self.last_error}; the power figures "
                      "have a gap")

    def _again(self) -> None:
        self.warn(f"power: reading {self.source.describe()} again")
