"""The result document (schema bench_dsl/results/schema/result-v1.json), built from the run's events alone.

The engine decides and says so in events; this module only writes it down. It imports nothing of
the engine but its events, so the document a run writes is exactly what its event stream says.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from bench_dsl.engine import events as ev

RESULT_SCHEMA = "https://bench-dsl.dev/schema/result-v1.json"
TOOL = "bench-dsl"


class ResultDocument:
    """Folds events into the document. `doc` is complete enough to write after `Begin`."""

    def __init__(self) -> None:
        self.doc: dict[str, Any] = _head(None, "", {}, {})
        self.errors: Counter[int] = Counter()
        self.messages: dict[int, str] = {}

    def apply(self, event: ev.Event) -> None:
        d = self.doc
        match event:
            case ev.Begin():
                conf = event.configuration
                self.doc = _head(event.tool_version, event.started_at, event.scenario.to_json(),
                                 event.machine.to_json(), conf.to_json() if conf is not None else None)
                if event.figures:  # a run's always; a replayed result's written before it had them, not
                    self.doc["figures"] = event.figures.to_json()
            case ev.Started() if event.server is not None:
                d["server"] = event.server.to_json()
            case ev.Prepared():
                d["prepare"] = event.report.to_json()
            case ev.Workers():
                d["workers"] = event.processes
                if event.fleet:
                    d["fleet"] = event.fleet
            case ev.Cluster():
                d["cluster"] = event.cluster.to_json()
                _node_cpu(d)
            case ev.WorkerLostEvent():
                d.setdefault("workers_lost", []).append(
                    {"t": event.t, "reasons": event.reasons, "workers_left": event.workers, "users": event.users})
            case ev.Interval():
                d["intervals"].append(event.row.to_json())
                d["elapsed_s"] = max(d["elapsed_s"], event.row.t)
                for tx in (event.row.figures.get("transactions") or {}).values():
                    self.errors.update({int(k): n for k, n in (tx.get("errors_by_code") or {}).items()})
                self._errors()
            case ev.StepEnded():
                d["steps"].append(event.row.to_json())
            case ev.Totals():
                d["summary"] = event.summary
                d["executor"] = event.executor
                if event.stop is not None:
                    d["stop"] = event.stop.to_json()
                d["elapsed_s"] = round(event.elapsed_s, 3)
            case ev.Fired():
                d["stop"] = event.stop.to_json()
            case ev.Saturation():
                d["saturation"] = event.saturation.to_json()
            case ev.Power():
                d["power"] = {"source": event.source, "measured": event.no_power_figure is None,
                              "no_power_figure": event.no_power_figure}
            case ev.Log(level="warning"):
                d["warnings"].append(event.message)
            case ev.ErrorMessages():
                for code, message in event.messages.items():
                    self.messages.setdefault(code, message)
                self._errors()
            case ev.Finished():
                d.update(status=event.status, exit_code=event.exit_code, finished_at=event.finished_at,
                         elapsed_s=round(event.elapsed_s, 3),
                         saturation=event.saturation.to_json() if event.saturation is not None else None,
                         stop=event.stop.to_json() if event.stop is not None else None,
                         expect=[e.to_json() for e in event.expect], executor=event.executor)
                if event.workload_report is not None:
                    d["workload_report"] = event.workload_report
                _node_cpu(d)

    def _errors(self) -> None:
        self.doc["errors"] = [{"code": k, "count": v, "message": self.messages.get(k, "")}
                              for k, v in sorted(self.errors.items())]


def _node_cpu(d: dict[str, Any]) -> None:
    """A cluster's nodes with their CPU over the measured run, from the summary's figures: the
    node's whole CPU (its workers read it) and bench-dsl's own there (its workers' CPU, % of one core)."""
    summary, cluster = d.get("summary") or {}, d.get("cluster")
    if cluster is None:
        return
    hosts, each = summary.get("cpu_by_client_host") or {}, summary.get("client_cpu_by_process") or {}
    for node in cluster.get("nodes", ()):
        node["cpu_pct"] = hosts.get(node.get("host"))
        mine = [each[w] for w in node.get("workers", ()) if each.get(w) is not None]
        node["client_cpu_pct"] = round(sum(mine), 1) if mine else None


def _head(version: str | None, started_at: str, scenario: dict[str, Any], machine: dict[str, Any],
          configuration: dict[str, Any] | None = None) -> dict[str, Any]:
    """The document before anything is measured."""
    return {
        "$schema": RESULT_SCHEMA, "format": "bench-dsl-result", "format_version": 1,
        "tool": {"name": TOOL, "version": version},
        "status": "running", "exit_code": None, "started_at": started_at, "finished_at": None,
        "elapsed_s": 0.0, "scenario": scenario, "configuration": configuration, "machine": machine,
        "server": None, "prepare": None, "workers": None, "executor": None,
        "steps": [], "intervals": [], "stop": None,
        "saturation": None, "expect": [], "summary": None, "errors": [], "warnings": [],
    }
