"""The workloads bench-dsl can run: sysbench's OLTP tests, TPC-C and the user's own (custom), each
a plugin listed in registry.py."""

from bench_dsl.workloads.base import Session, Workload
from bench_dsl.workloads.registry import build_workload, make_workload

__all__ = ["Session", "Workload", "build_workload", "make_workload"]
