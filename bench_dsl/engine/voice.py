"""How every part of a run speaks: events to the sinks (Bus), log lines
with the run's secrets scrubbed from them, and the run's clock. One object handed down to the
stage and the tally, instead of a callable for each."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from bench_dsl.core.clock import MONOTONIC, Clock
from bench_dsl.core.dsn import redact
from bench_dsl.engine import events as ev


class Bus:
    """Hands each event to every sink. A sink that raises (a closed pipe, a full disk) is dropped
    and that is said as a warning: a sink must never end the run."""

    def __init__(self, sinks: Sequence[ev.Sink] = (), clock: Callable[[], float] | None = None) -> None:
        self.sinks: list[ev.Sink] = list(sinks)
        self.clock = clock  # the run's elapsed seconds, for the warning that a sink stopped
        self.dropped: list[tuple[ev.Sink, Exception]] = []

    def publish(self, event: ev.Event) -> None:
        queue = [event]
        while queue:
            said_now = queue.pop(0)
            for s in list(self.sinks):
                try:
                    said = s.emit(said_now)
                except Exception as exc:
                    self.sinks.remove(s)
                    self.dropped.append((s, exc))
                    name = getattr(s, "name", type(s).__name__)
                    queue.append(ev.Log("warning", f"{name} stopped at this point: {type(exc).__name__}: {exc}",
                                     round(self.clock(), 3) if self.clock else None))
                    continue
                if said:
                    queue.extend(said)


class Voice:
    def __init__(self, sinks: Sequence[ev.Sink], clock: Clock = MONOTONIC) -> None:
        self.clock = clock  # the run's (a test's is virtual)
        self.t0 = 0.0  # when the run began (on `clock`); 0: not yet
        self.bus = Bus(sinks, clock=self.elapsed)
        self.secrets: list[str] = []  # passwords: never quoted in any output

    def elapsed(self) -> float:
        return self.clock.now() - self.t0 if self.t0 else 0.0

    def publish(self, event: ev.Event) -> None:
        self.bus.publish(event)

    def log(self, message: str, level: str = "info") -> None:
        self.publish(ev.Log(level, self.scrub(message), round(self.elapsed(), 3)))

    def secret(self, text: str | None) -> None:
        if text and text not in self.secrets:
            self.secrets.append(text)

    def scrub(self, text: str) -> str:
        for s in self.secrets:  # first: a password is found whatever surrounds it
            text = text.replace(s, "***")
        return redact(text)
