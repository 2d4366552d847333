"""Why a run stops. One holder, shared by what may stop a run (a signal or a front end: the run; a
stop condition or the target's watch: the tally; a failure) and read by the scheduler at each
tick, so that none of them calls into another to ask."""

from __future__ import annotations

from typing import Any


class Stop:
    def __init__(self) -> None:
        # None while the run goes on; then the result's "stop": {"reason": ..., ...}
        self.reason: dict[str, Any] | None = None

    def stopping(self) -> bool:
        return self.reason is not None
