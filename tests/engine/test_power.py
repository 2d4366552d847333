"""The power sources read through a real node_exporter (Debian's) serving a test's own sysfs tree:
its rapl collector over a powercap tree, its hwmon collector over power sensors, and its textfile
collector serving an IPMI exporter's metric; and the PowerWatch's reason when none answers. The
counters are set by the test between two readings: the energy read is exact, whatever the clock."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench_dsl.language.power_source import PowerSource
from bench_dsl.server.power import PowerWatch, difference, read

from ..exporter import node_exporter
from ..powercap import tree


def _add(zone: Path, joules: float) -> None:
    f = zone / "energy_uj"
    f.write_text(str(int(f.read_text()) + int(joules * 1e6)))


def test_a_node_exporters_rapl_counters_give_the_packages_and_drams_energy(tmp_path: Path) -> None:
    powercap = tree(tmp_path, wraps=False)
    with node_exporter(f"--path.sysfs={tmp_path}", "--collector.rapl") as (_, url):
        source = PowerSource("node_exporter", at=url)
        before = read(source)
        for zone, joules in (("intel-rapl:0", 30.0), ("intel-rapl:0/intel-rapl:0:0", 25.0),
                             ("intel-rapl:0/intel-rapl:0:1", 20.0)):
            _add(powercap / zone, joules)
        sample = difference(before, read(source))
    assert sample is not None
    assert sample.joules == pytest.approx(50.0)  # the package's 30 J and DRAM's 20; the core's are the package's


def test_a_node_exporters_hwmon_power_sensors_are_summed(tmp_path: Path) -> None:
    for chip, sensor, microwatts in (("hwmon0", "power1_average", 215_000_000), ("hwmon1", "power1_input", 30_500_000)):
        d = tmp_path / "class" / "hwmon" / chip
        d.mkdir(parents=True)
        (d / "name").write_text(f"psu{chip[-1]}\n")
        (d / sensor).write_text(f"{microwatts}\n")
    with node_exporter(f"--path.sysfs={tmp_path}", "--collector.hwmon") as (_, url):
        reading = read(PowerSource("node_exporter", at=url))
    assert reading.counters is None and reading.watts == pytest.approx(245.5)


def test_any_prometheus_metric_an_ipmi_exporters_watts(tmp_path: Path) -> None:
    (tmp_path / "ipmi.prom").write_text("# TYPE ipmi_dcmi_power_consumption_watts gauge\n"
                                        "ipmi_dcmi_power_consumption_watts 231\n")
    with node_exporter("--collector.textfile", f"--collector.textfile.directory={tmp_path}") as (_, url):
        reading = read(PowerSource("prometheus", at=url, metric="ipmi_dcmi_power_consumption_watts"))
    assert reading.watts == 231.0


async def test_a_source_that_never_answers_gives_the_reason_never_0_watts(tmp_path: Path) -> None:
    warned: list[str] = []
    watch = PowerWatch(PowerSource("rapl", at=str(tmp_path / "nowhere")), warned.append)
    assert await watch.first() is None
    assert watch.take() is None and not watch.measured
    assert watch.reason == f"rapl {tmp_path / 'nowhere'}: {tmp_path / 'nowhere'} does not exist: this machine has " \
                           "no powercap (RAPL needs a kernel with intel_rapl, on the machine itself, not a virtual one)"


async def test_a_node_exporter_without_power_collectors_says_which_to_turn_on() -> None:
    with node_exporter() as (_, url):  # the CPU's and the disks' only
        watch = PowerWatch(PowerSource("node_exporter", at=url), lambda msg: None)
        assert await watch.first() is None
    assert watch.reason is not None and "turn on the node_exporter's rapl or hwmon collector" in watch.reason


async def test_the_runs_readings_start_when_its_users_do_not_at_the_check_before_the_load(tmp_path: Path) -> None:
    """The check's reading is taken before the data is loaded: a span from it would give the first
    tick the load's energy (minutes of it). The run's first figure spans two of its own readings."""
    import asyncio

    powercap = tree(tmp_path, wraps=False)
    watch = PowerWatch(PowerSource("rapl", at=str(powercap)), lambda msg: None)
    assert await watch.first() is not None
    _add(powercap / "intel-rapl:0", 1000.0)  # the load
    watch.start()
    try:
        while watch.newest_at() is None:  # the loop's first reading
            await asyncio.sleep(0.01)
        assert watch.take() is None  # nothing to compare it with: not the load's 1000 J
        _add(powercap / "intel-rapl:0", 30.0)
        _add(powercap / "intel-rapl:0/intel-rapl:0:1", 20.0)
        for _ in range(1000):  # the next reading, a second on; the bound only ends a hung test
            if (sample := watch.take()) is not None:
                break
            await asyncio.sleep(0.01)
    finally:
        await watch.stop()
    assert sample is not None and sample.joules == pytest.approx(50.0)
