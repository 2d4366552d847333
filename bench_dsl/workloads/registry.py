"""Every kind of workload, by the name a scenario gives it (`workload KIND`), and what the rest of
bench-dsl asks of a workload through its kind: building it, and its lines in `bench check --plan`.
A new kind is a package with a PLUGIN (see plugin.py) and one line here: its plugin module holds
what checking a scenario needs, and loads the driver only when `build` is called for a run."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bench_dsl.core import plugins
from bench_dsl.language.comparisons import Comparison
from bench_dsl.language.metric_decls import MetricDecl, Table
from bench_dsl.language.model import Fill, Scenario, SetupSql, WorkloadSpec
from bench_dsl.workloads.custom import plugin as custom
from bench_dsl.workloads.plugin import WorkloadPlugin
from bench_dsl.workloads.sysbench import plugin as sysbench
from bench_dsl.workloads.tpcc import plugin as tpcc

if TYPE_CHECKING:
    from bench_dsl.workloads.base import Workload

# In the order messages list them ("workloads: sysbench, custom, tpcc").
PLUGINS: dict[str, WorkloadPlugin[Any]] = {plugin.kind: plugin for plugin in (
    sysbench.PLUGIN,
    custom.PLUGIN,
    tpcc.PLUGIN,
    *plugins.contributions("WORKLOADS"),  # a kind from outside (bench_dsl.core.plugins)
)}


# Every metric: the core ones and each kind's own (TPC-C's nopm), for the floors above this one
# (results, the live screen); the language is handed the kinds and builds the same (validate.metrics_of).
# A plugin's metrics beside the kinds' (bench_dsl.core.plugins: METRICS), a figure of the server's among them.
# A plugin's comparisons (COMPARISONS: a condition `METRIC WORD LIMIT` of its own) go with them.
OWN_METRICS: tuple[MetricDecl | Comparison, ...] = (*plugins.contributions("METRICS"),
                                                    *plugins.contributions("COMPARISONS"))
METRICS = Table.of(*(k.metrics for k in PLUGINS.values()), [d for d in OWN_METRICS if isinstance(d, MetricDecl)],
                   comparisons=[d for d in OWN_METRICS if isinstance(d, Comparison)])


def make_workload(sc: Scenario) -> Workload:
    assert sc.seed is not None, "a run's scenario is seeded before it starts (Scenario.seeded)"
    return build_workload(sc.workload, sc.setup, sc.seed)


def build_workload(spec: WorkloadSpec, setup: tuple[Fill | SetupSql, ...], seed: int) -> Workload:
    """The workload of a scenario from just the parts a worker process needs to be sent."""
    return PLUGINS[spec.kind].build(spec, setup, seed)


def plan_lines(spec: WorkloadSpec) -> list[str]:
    """The "  workload: ..." lines `bench check --plan` prints for this workload."""
    return PLUGINS[spec.kind].plan_lines(spec)
