"""How every part of a run speaks: events to the sinks (bench_dsl.engine.events.Bus), log lines
with the run's secrets scrubbed from them, and the run's clock. One object handed down to the
stage and the tally, instead of a callable for each."""

from __future__ import annotations

from collections.abc import Sequence

from bench_dsl.core.clock import MONOTONIC, Clock
from bench_dsl.core.dsn import redact
from bench_dsl.engine import events as ev


class Voice:
    def __init__(self, sinks: Sequence[ev.Sink], clock: Clock = MONOTONIC) -> None:
        self.clock = clock  # the run's (a test's is virtual)
        self.t0 = 0.0  # when the run began (on `clock`); 0: not yet
        self.bus = ev.Bus(sinks, clock=self.elapsed)
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
