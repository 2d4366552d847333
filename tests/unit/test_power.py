"""The power sources' readings (bench_dsl.server.power) on served inputs: a powercap tree with a wrap,
a missing file and a non-numeric value, a refused read, a Prometheus page, and stub commands."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from bench_dsl.server.power import (NoReading, PowerReading, difference, read_command, read_exporter_page, read_metric,
                                    read_rapl)

from ..powercap import tree


def test_rapl_counts_the_packages_and_dram_never_the_core_inside_a_package(tmp_path: Path) -> None:
    zones = read_rapl(str(tree(tmp_path)))
    assert sorted(zones) == ["dram (intel-rapl:0:1)", "package-0 (intel-rapl:0)"]
    assert zones["package-0 (intel-rapl:0)"] == (7.0, 400.0)  # joules, and where it wraps
    assert zones["dram (intel-rapl:0:1)"] == (7.0, 130.0)


def test_rapl_with_a_platform_zone_reads_it_alone(tmp_path: Path) -> None:
    powercap = tree(tmp_path)
    psys = powercap / "intel-rapl:1"
    psys.mkdir()
    (psys / "name").write_text("psys\n")
    (psys / "energy_uj").write_text("42000000\n")
    (psys / "max_energy_range_uj").write_text("262143328850\n")
    assert read_rapl(str(powercap)) == {"psys (intel-rapl:1)": (42.0, 262143.32885)}


def test_a_counter_that_wraps_at_its_range_counts_on() -> None:
    before = PowerReading(10.0, {"package-0": (149.0, 150.0), "dram": (64.0, 65.0)})
    after = PowerReading(11.0, {"package-0": (79.0, 150.0), "dram": (19.0, 65.0)})  # both wrapped
    s = difference(before, after)
    assert s is not None and (s.seconds, s.joules, s.max_w) == (1.0, 100.0, 100.0)


def test_a_counter_that_goes_back_with_no_known_range_is_a_gap_never_a_negative_power() -> None:
    before, after = PowerReading(10.0, {"package": (500.0, None)}), PowerReading(11.0, {"package": (20.0, None)})
    assert difference(before, after) is None  # a node_exporter restarted: no figure, not -480 W


def test_counters_that_stand_still_are_a_gap_never_0_watts() -> None:
    assert difference(PowerReading(1.0, {"package": (5.0, 10.0)}), PowerReading(2.0, {"package": (5.0, 10.0)})) is None
    assert difference(PowerReading(1.0, None, 0.0), PowerReading(2.0, None, 0.0)) is None


def test_readings_of_watts_integrate_into_joules() -> None:
    s = difference(PowerReading(1.0, None, 200.0), PowerReading(3.0, None, 220.0))
    assert s is not None and (s.seconds, s.joules, s.max_w) == (2.0, 420.0, 220.0)


def test_a_missing_tree_a_tree_without_rapl_a_missing_file_and_a_non_number_say_why(tmp_path: Path) -> None:
    with pytest.raises(NoReading, match="does not exist: this machine has no powercap"):
        read_rapl(str(tmp_path / "nowhere"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(NoReading, match="has no intel-rapl zone: this machine has no RAPL"):
        read_rapl(str(tmp_path / "empty"))
    powercap = tree(tmp_path / "t")
    (powercap / "intel-rapl:0" / "energy_uj").write_text("n/a\n")
    with pytest.raises(NoReading, match=r"energy_uj holds 'n/a', not a number"):
        read_rapl(str(powercap))
    (powercap / "intel-rapl:0" / "energy_uj").unlink()
    with pytest.raises(NoReading, match=r"energy_uj: .*(No such file|not found)"):
        read_rapl(str(powercap))


def test_a_read_refused_to_a_user_that_is_not_root_says_so() -> None:
    # as nobody (the tests run as root, which may read anything): in a directory nobody may enter,
    # not pytest's own (root's alone)
    assert os.geteuid() == 0 and shutil.which("setpriv"), "the tests run as root, with util-linux's setpriv"
    with tempfile.TemporaryDirectory() as where:
        Path(where).chmod(0o755)
        _refused(Path(where))


def _refused(root: Path) -> None:
    powercap = tree(root)
    energy = powercap / "intel-rapl:0" / "energy_uj"
    energy.chmod(stat.S_IRUSR)  # as the kernel has it since Linux 5.10: root's alone
    probe = ("import sys\nfrom bench_dsl.server.power import NoReading, read_rapl\ntry:\n    read_rapl(sys.argv[1])\n"
             "except NoReading as e:\n    print(e)\n")
    r = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-c", probe,
                        str(powercap)], capture_output=True, text=True, cwd=Path(__file__).parents[2], check=False)
    assert "was refused: RAPL's energy is root's to read; run bench-dsl as root" in r.stdout, r.stdout + r.stderr


def _stub(tmp_path: Path, body: str) -> tuple[str, ...]:
    script = tmp_path / "stub"
    script.write_text("#!/bin/sh\n" + body + "\n")
    script.chmod(0o755)
    return (str(script),)


IPMITOOL = """echo '    Instantaneous power reading:                   220 Watts'
echo '    Minimum during sampling period:                 98 Watts'
echo '    Power reading state is:                   activated'"""


def test_a_command_that_prints_watts_as_ipmitool_does_is_read(tmp_path: Path) -> None:
    assert read_command(_stub(tmp_path, IPMITOOL)) == 220.0
    assert read_command(_stub(tmp_path, "echo 1.2kW")) == 1200.0
    assert read_command(_stub(tmp_path, "echo 345.5")) == 345.5  # a bare number is watts


def test_a_command_is_run_without_a_shell(tmp_path: Path) -> None:
    # its argument reaches it as written: `;` and `$(...)` are text, never run
    seen = tmp_path / "args"
    argv = (*_stub(tmp_path, f'printf "%s|" "$@" > {seen}; echo 10 W'), "a;b", "$(touch x)")
    assert read_command(argv) == 10.0
    assert seen.read_text() == "a;b|$(touch x)|" and not (tmp_path / "x").exists()


def test_a_command_never_sees_the_databases_password(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BENCH_DSN", "mysql://bench:s3cret@127.0.0.1:3306/bench")
    monkeypatch.setenv("IPMI_PASSWORD", "the-bmcs")  # ipmitool -E reads its own from here: kept
    seen = tmp_path / "env"
    assert read_command(_stub(tmp_path, f"env > {seen}; echo 1 W")) == 1.0
    assert "s3cret" not in seen.read_text() and "IPMI_PASSWORD=the-bmcs" in seen.read_text()


def test_a_command_that_fails_prints_no_number_or_hangs_says_why(tmp_path: Path) -> None:
    with pytest.raises(NoReading, match=r"exited with status 1: Could not open device"):
        read_command(_stub(tmp_path, "echo 'Could not open device at /dev/ipmi0' >&2; exit 1"))
    with pytest.raises(NoReading, match=r"printed no power: 'power reading state is: deactivated'"):
        read_command(_stub(tmp_path, "echo 'power reading state is: deactivated'"))
    with pytest.raises(NoReading, match="no such command"):
        read_command((str(tmp_path / "ipmitool-not-here"),))
    with pytest.raises(NoReading, match=r"printed nothing in 0.2 s"):
        read_command(_stub(tmp_path, "sleep 30 & sleep 30; echo 5 W"), timeout=0.2)


PAGE = """# TYPE ipmi_dcmi_power_consumption_watts gauge
ipmi_dcmi_power_consumption_watts{psu="1"} 180
ipmi_dcmi_power_consumption_watts{psu="2"} 175.5
# TYPE pdu_energy_kilowatt_hours_total counter
pdu_energy_kilowatt_hours_total{outlet="3"} 12.5
# TYPE broken_watts gauge
broken_watts NaN
"""


def test_a_prometheus_metric_sums_its_series_or_the_ones_its_labels_pick() -> None:
    assert read_metric(PAGE, "ipmi_dcmi_power_consumption_watts", None) == (None, 355.5)
    assert read_metric(PAGE, 'ipmi_dcmi_power_consumption_watts{psu="2"}', None) == (None, 175.5)
    assert read_metric(PAGE, "ipmi_dcmi_power_consumption_watts", "kW") == (None, 355500.0)
    counters, watts = read_metric(PAGE, 'pdu_energy_kilowatt_hours_total{outlet="3"}', None)
    assert watts is None and counters == {"outlet=3": (12.5 * 3.6e6, None)}  # a counter of energy, in joules


def test_a_prometheus_metric_missing_or_not_a_number_is_no_reading() -> None:
    with pytest.raises(NoReading, match=r"the page has no ipmi_dcmi_power_consumption_watts\{psu=\"3\"\}"):
        read_metric(PAGE, 'ipmi_dcmi_power_consumption_watts{psu="3"}', None)
    with pytest.raises(NoReading, match="broken_watts is nan: a power or an energy is a finite number"):
        read_metric(PAGE, "broken_watts", None)
    with pytest.raises(NoReading, match="no node_rapl_.*_joules_total and no node_hwmon_power_.*_watt"):
        read_exporter_page(PAGE)
