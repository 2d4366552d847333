"""What the engine tells its sinks. Sinks (console, JSON files, the terminal UI) only read these."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol


@dataclass(frozen=True, slots=True)
class Event:
    type: str  # started | prepare | phase | interval | step | fired | log | checkpoint | finished
    data: dict[str, Any]


class Sink(Protocol):
    def emit(self, event: Event) -> None:
        """Must not block the engine for long: it runs between ticks."""

    def close(self) -> None: ...
