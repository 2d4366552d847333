"""The workloads bench-dsl can run: sysbench's OLTP tests and the user's own (custom)."""

from bench_dsl.workloads.base import Session, Workload
from bench_dsl.workloads.custom import make_workload

__all__ = ["Session", "Workload", "make_workload"]
