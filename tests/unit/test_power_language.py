"""`power SOURCE ...` and `power(server)` as the language reads them (bench_dsl.language.power):
each source's forms, env() for any value, and each mistake said at its place with a hint."""

from __future__ import annotations

import pytest

from bench_dsl.language.power_source import PowerSource

from .test_language import STEP, _problems, _scenario


@pytest.mark.parametrize(("written", "source"), [
    ("power rapl", PowerSource("rapl")),
    ('power rapl "/srv/powercap"', PowerSource("rapl", at="/srv/powercap")),
    ('monitor "http://db1:9100/metrics"\npower node_exporter', PowerSource("node_exporter", at="http://db1:9100/metrics")),
    ('power prometheus "http://ipmi:9290/metrics" "ipmi_dcmi_power_consumption_watts"',
     PowerSource("prometheus", at="http://ipmi:9290/metrics", metric="ipmi_dcmi_power_consumption_watts")),
    ('power prometheus "http://pdu/metrics" "pdu_power{outlet=\\"3\\"}" kW',
     PowerSource("prometheus", at="http://pdu/metrics", metric='pdu_power{outlet="3"}', unit="kW")),
    ('power command "ipmitool -I lanplus -H bmc1 dcmi power reading"',
     PowerSource("command", argv=("ipmitool", "-I", "lanplus", "-H", "bmc1", "dcmi", "power", "reading"))),
    ('power env("BENCH_POWER", "rapl") env("BENCH_POWERCAP", "/sys/class/powercap")',
     PowerSource("rapl", at="/sys/class/powercap")),
])
def test_each_source_as_written(written: str, source: PowerSource) -> None:
    assert _scenario(f"{STEP}\n{written}").power == source


def test_a_condition_on_power_takes_watts_or_kilowatts() -> None:
    sc = _scenario(f"{STEP}\npower rapl\nstop when {{ power(server) > 400W  power(server) > 1.5kW  power(server) > 90 }}")
    assert [(c.limit, c.unit) for c in sc.stop] == [(400.0, "W"), (1500.0, "W"), (90.0, "W")]
    sc = _scenario(f"{STEP}\npower rapl\nstop when {{ power(server) > env(\"LIMIT\") }}", env={"LIMIT": "2kW"})
    assert sc.stop[0].limit == 2000.0


@pytest.mark.parametrize(("written", "said"), [
    ("power ipmi", "power: ipmi is no power source: one of rapl, node_exporter, prometheus, command"),
    ("power node_exporter", "power node_exporter reads the monitor's page: this scenario has no monitor"),
    ('power prometheus "http://pdu/metrics" "pdu_power"', "power prometheus: pdu_power's name does not say its unit"),
    ('power prometheus "pdu:9100" "x_watts"', "power prometheus: 'pdu:9100' is not an http:// address"),
    ('power prometheus "http://pdu/metrics" "x_watts" volts', "power prometheus: volts is no unit of power or energy"),
    ('power prometheus "http://pdu/metrics" "x watts"', "power prometheus: 'x watts' is not a metric"),
    ('power command ""', "power command: the command is empty"),
    ('power command "ipmitool \'dcmi"', "power command: No closing quotation"),
    ('power rapl "/a" "/b"', "power rapl takes 0 to 1 values"),
    ("power rapl here", "power rapl: its settings are text in double quotes"),
    ("power command", "power command takes 1 value"),
    (f"stop when {{ power(server) > 400W }}", "power(server) needs a power source: the scenario has no `power`"),
    ("power rapl\nstop when { power(client) > 400W }", "power(client): the power of the server's machine"),
    ("power rapl\nstop when { power(server) > 40% }", "power(server) is a power: a number of watts (W or kW)"),
    ("power rapl\nstop when { power(server) > -4W }", "power(server) is a power: a number of watts (W or kW)"),
])
def test_each_mistake_is_said_with_a_hint(written: str, said: str) -> None:
    out = _problems(f"{STEP}\n{written}")
    assert said in out and "hint:" in out, out
