"""The machine bench-dsl runs on, as the `Begin` event and the result's "machine" say it: what a
reader needs to weigh a run's figures (its cores, its memory, the processor) and to tell runs of
two machines apart."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Machine:
    hostname: str
    platform: str
    python: str
    cpu_model: str
    cpu_count: int | None  # logical cores (None: the system did not say)
    memory_bytes: int | None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, d: Any) -> Machine:
        """A result's "machine"; what it lacks (a result of before, a hand-made one) is empty."""
        d = d if isinstance(d, dict) else {}
        count, memory = d.get("cpu_count"), d.get("memory_bytes")
        return cls(str(d.get("hostname") or ""), str(d.get("platform") or ""), str(d.get("python") or ""),
                   str(d.get("cpu_model") or ""), count if isinstance(count, int) else None,
                   memory if isinstance(memory, int) else None)
