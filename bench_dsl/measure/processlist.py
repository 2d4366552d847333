"""What the sessions in the server were doing, sampled: the processlist's states (SHOW PROCESSLIST),
read about once a second on the coordinator's own connection beside SHOW GLOBAL STATUS
(bench_dsl.server.counters). Without performance_schema (off by default on MariaDB) the states are
the only sign of a metadata lock ("Waiting for table metadata lock"): bench_dsl.attribution's
table-locks rule reads a window's mean sessions in each state. With them, the round trip of a
ping on that connection: the least of a window's is the network's ("network": {"rtt_ms"}),
what the network rule sets against a transaction's time."""

from __future__ import annotations

# SHOW PROCESSLIST, not a SELECT from information_schema: it counts in Com_show_processlist, never
# in the Com_select a scenario's conditions and the result read of the users' load. Its columns:
# Id, User, Host, db, Command, Time, State, Info, Progress
QUERY = "SHOW PROCESSLIST"
# the sessions that count: not idle ones, not the server's own threads (and never the sampler)
IDLE = frozenset(("Sleep", "Daemon", "Binlog Dump", "Slave_IO", "Slave_SQL", "Slave_worker", "Killed"))


def states_of(rows: list[tuple[object, ...]], own_id: int | None = None) -> dict[str, int]:
    """One sample, from SHOW PROCESSLIST's rows: sessions by state (a session without one is '')."""
    out: dict[str, int] = {}
    for row in rows:
        if len(row) < 7 or str(row[4]) in IDLE or (own_id is not None and row[0] == own_id):
            continue
        key = "" if row[6] is None else str(row[6])
        out[key] = out.get(key, 0) + 1
    return out


class States:
    """A window's samples of the processlist: the mean sessions active and in each state."""

    def __init__(self) -> None:
        self.samples = 0
        self.active = 0
        self.by_state: dict[str, int] = {}
        self.rtt_ms: float | None = None  # the least round trip seen

    def add(self, sample: dict[str, int] | None, rtt_ms: float | None = None) -> None:
        """A reading's states (None: the processlist could not be read) and round trip."""
        if rtt_ms is not None:
            self.rtt_ms = rtt_ms if self.rtt_ms is None else min(self.rtt_ms, rtt_ms)
        if sample is None:
            return
        self.samples += 1
        for state, n in sample.items():
            self.active += n
            self.by_state[state] = self.by_state.get(state, 0) + n

    def network(self) -> dict[str, object] | None:
        return None if self.rtt_ms is None else {"rtt_ms": round(self.rtt_ms, 3)}

    def to_json(self) -> dict[str, object] | None:
        if not self.samples:
            return None
        return {"samples": self.samples, "active_mean": round(self.active / self.samples, 3),
                "states": {s: round(n / self.samples, 3) for s, n in sorted(self.by_state.items()) if s}}
