"""The MySQL/MariaDB error codes a load test meets, and what each means for a run: one table, read
by the users (retry, reconnect, stop), the stage (loading), the workloads (what they retry) and the
live screen (a short name beside a code)."""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Meaning(enum.Enum):
    RETRY = "retry"  # the transaction may run again as it is: a deadlock, a lock wait timeout
    LOST = "lost"  # the connection is gone: reconnect, and if that fails for long, the target is lost
    REFUSED = "refused"  # the server would not take the connection: the step is not the one asked for
    SCENARIO = "scenario"  # the scenario cannot run as written (no such table, no privilege, bad SQL)
    COUNTED = "counted"  # counted by code and the run goes on (a duplicate key the workload makes)


@dataclass(frozen=True, slots=True)
class ErrorCode:
    code: int
    name: str  # a few words, beside the code in the log
    meaning: Meaning


_TABLE = (
    ErrorCode(1020, "record changed", Meaning.RETRY),
    ErrorCode(1205, "lock wait timeout", Meaning.RETRY),
    ErrorCode(1213, "deadlock", Meaning.RETRY),
    ErrorCode(2002, "cannot connect", Meaning.LOST),
    ErrorCode(2003, "cannot connect", Meaning.LOST),
    ErrorCode(2006, "server gone away", Meaning.LOST),
    ErrorCode(2011, "connection failed", Meaning.LOST),
    ErrorCode(2013, "lost connection", Meaning.LOST),
    ErrorCode(2055, "lost connection", Meaning.LOST),
    ErrorCode(1040, "too many connections", Meaning.REFUSED),
    ErrorCode(1226, "user limit reached", Meaning.REFUSED),
    ErrorCode(1203, "user connection limit", Meaning.REFUSED),
    ErrorCode(1044, "access denied", Meaning.SCENARIO),
    ErrorCode(1045, "access denied", Meaning.SCENARIO),
    ErrorCode(1046, "no database", Meaning.SCENARIO),
    ErrorCode(1049, "unknown database", Meaning.SCENARIO),
    ErrorCode(1054, "unknown column", Meaning.SCENARIO),
    ErrorCode(1064, "syntax error", Meaning.SCENARIO),
    ErrorCode(1142, "no privilege", Meaning.SCENARIO),
    ErrorCode(1146, "no such table", Meaning.SCENARIO),
    ErrorCode(1149, "syntax error", Meaning.SCENARIO),
    ErrorCode(1210, "wrong arguments", Meaning.SCENARIO),
    ErrorCode(1318, "wrong arguments", Meaning.SCENARIO),
    ErrorCode(1364, "no default value", Meaning.SCENARIO),
    ErrorCode(1406, "data too long", Meaning.SCENARIO),
    ErrorCode(1452, "foreign key", Meaning.SCENARIO),
    ErrorCode(1062, "duplicate key", Meaning.COUNTED),
    ErrorCode(1290, "read only", Meaning.COUNTED),
    ErrorCode(1317, "query interrupted", Meaning.COUNTED),
    ErrorCode(1836, "read only", Meaning.COUNTED),
)
CODES: dict[int, ErrorCode] = {e.code: e for e in _TABLE}

# A broken socket carries no code of the server's: it counts as this one.
LOST_CONNECTION = 2013


def _with(meaning: Meaning) -> frozenset[int]:
    return frozenset(e.code for e in _TABLE if e.meaning is meaning)


RETRYABLE = _with(Meaning.RETRY)
CONNECTION_LOST = _with(Meaning.LOST)
SCENARIO_ERRORS = _with(Meaning.SCENARIO)
# the names a custom workload's `retry on` takes, and the code each stands for
RETRY_NAMES = {"deadlock": 1213, "lock_wait_timeout": 1205, "lock_wait": 1205}


def name(code: int) -> str | None:
    e = CODES.get(code)
    return e.name if e else None
