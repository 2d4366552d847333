"""Where the power the server's machine draws is read (the scenario's `power`): the model's part,
checked by bench_dsl.language.power and read by bench_dsl.server.power."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from bench_dsl.core.dsn import redact

PowerKind = Literal["rapl", "node_exporter", "prometheus", "command"]
POWER_KINDS: tuple[PowerKind, ...] = ("rapl", "node_exporter", "prometheus", "command")
POWERCAP = "/sys/class/powercap"
# a Prometheus metric's unit, when its name does not say it: the watts it is read in, or the joules a
# counter of energy counts (energy units are counters, read as their growth)
WATTS = {"W": 1.0, "kW": 1000.0}
JOULES = {"J": 1.0, "Wh": 3600.0, "kWh": 3.6e6}


@dataclass(frozen=True, slots=True)
class PowerSource:
    kind: PowerKind
    at: str | None = None  # rapl: the powercap directory; prometheus: the page's address
    metric: str | None = None  # prometheus: the metric read, with its labels (`name{psu="1"}`)
    unit: str | None = None  # prometheus: one of WATTS or JOULES; None: the metric's name says it
    argv: tuple[str, ...] = ()  # command: the program and its arguments, run without a shell

    def describe(self) -> str:
        """As the plan and the result name it (an address without its password)."""
        match self.kind:
            case "rapl":
                return f"rapl {self.at or POWERCAP}"
            case "node_exporter":
                return "node_exporter (the monitor's page)"
            case "prometheus":
                return f"prometheus {redact(self.at or '')} {self.metric}" + (f" in {self.unit}" if self.unit else "")
            case _:
                return "command " + " ".join(self.argv)
