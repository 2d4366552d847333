"""What loading a workload's data did (bench_dsl.workloads.base.Workload.prepare builds it): the rows
written and how long it took, or that the data was already there. The `Prepared` event carries it;
the result's "prepare" is its JSON. Types only: the workloads make it, and the events, a replay and
the displays read it without loading a workload (the import contracts keep a replay from them)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class PrepareReport:
    skipped: bool  # the data a previous prepare loaded was there and kept
    rows: int
    seconds: float  # 0.0 when skipped
    prepared_at: str | None = None  # when skipped: when the kept data was loaded (the server's clock)

    def to_json(self) -> dict[str, Any]:
        # a load of its own has no "prepared_at" in a result: none is written then
        return {"skipped": self.skipped, "rows": self.rows, "seconds": self.seconds,
                **({"prepared_at": self.prepared_at} if self.prepared_at is not None else {})}

    @classmethod
    def from_json(cls, d: Any) -> PrepareReport | None:
        """A result's "prepare" (None where it has none: a run that never loaded)."""
        if not isinstance(d, dict):
            return None
        rows, seconds, at = d.get("rows"), d.get("seconds"), d.get("prepared_at")
        return cls(bool(d.get("skipped")), int(rows) if isinstance(rows, int | float) else 0,
                   float(seconds) if isinstance(seconds, int | float) else 0.0, str(at) if at is not None else None)
