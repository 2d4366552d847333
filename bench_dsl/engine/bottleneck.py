"""What ran out at each step (bench_dsl.attribution), judged with what the run knows beside the step's
figures: the server machine's cores and those mysqld may use, whether the users share its machine,
the users the server refused, its max_connections, and the client-limit probe's word on the step.
The tally asks it at each step's end; the judge carries the verdict of the step that ended the
climb to the saturation point."""

from __future__ import annotations

from dataclasses import dataclass

from bench_dsl.attribution import Context, Diagnosis, attribute
from bench_dsl.engine import client_limit
from bench_dsl.engine.rows import StepRow


@dataclass
class RunFacts:
    """What the run learns of the machines as it starts (None: not known)."""

    server_cores: float | None = None  # the cores cpu(server) is a % of (this machine's, for a local server)
    allowed_cores: float | None = None  # of those, the ones mysqld may use (affinity, a cgroup's quota)
    shared_machine: bool | None = None  # the users run on the server's machine
    client_capacity_pct: float | None = None  # % of its machine the client's processes may use
    client_cores: float | None = None
    max_connections: int | None = None


class Bottleneck:
    def __init__(self) -> None:
        self.facts = RunFacts()

    def of(self, row: StepRow, earlier: list[StepRow], refused: int = 0) -> Diagnosis:
        """The verdict on a step, against the steps before it."""
        f = self.facts
        figures = row.figures
        ctx = Context(cores=f.server_cores, allowed_cores=f.allowed_cores, shared_machine=f.shared_machine,
                      refused=refused, client_limit=client_limit.why(figures, f.client_capacity_pct, row.users),
                      client_probed=True, client_cores=f.client_cores, max_connections=f.max_connections)
        return attribute(row.to_json(histograms=False), [s.to_json(histograms=False) for s in earlier], ctx)
