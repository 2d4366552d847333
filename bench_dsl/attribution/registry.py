"""Every class of bottleneck the verdict weighs, one line each. The order breaks ties between
findings of equal share and corroboration."""

from __future__ import annotations

from bench_dsl.attribution.rules import (
    buffer_pool,
    client,
    commit_flush,
    connections,
    disk,
    machine_cpu,
    network,
    redo_log,
    row_locks,
    server_cpu,
    table_locks,
    user_locks,
)
from bench_dsl.attribution.window import Rule

RULES: tuple[Rule, ...] = (
    client.RULE,
    server_cpu.RULE,
    machine_cpu.RULE,
    disk.RULE,
    commit_flush.RULE,
    redo_log.RULE,
    buffer_pool.RULE,
    row_locks.RULE,
    table_locks.RULE,
    user_locks.RULE,
    connections.RULE,
    network.RULE,
)


def rule(cls: str) -> Rule:
    return next(r for r in RULES if r.cls == cls)


def title(cls: str) -> str:
    """A verdict's class in words, for a row of `bench compare` ("c1: the buffer pool")."""
    return next((r.title for r in RULES if r.cls == cls), cls)
