"""Which configuration of a study (`vary` / `repeat`) a run measures, as the study says it
(bench_dsl.study.plan.study_configuration) and the `Begin` event carries it: the result's
"configuration" is its JSON, null for a plain run. Here rather than in the study, which the engine
and a replay may not import: the study hands it to the run it starts."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class StudyConfiguration:
    id: str  # c1, c2 ... in the order of the file's values
    label: str  # name=value pairs, the values as the file wrote them
    values: dict[str, str]  # what varies (innodb_io_capacity, server.dir, $rows) and its value here
    repeat: int
    repeats: int
    study: str  # the scenario's name
    # the `bench run` of the study that made it: runs of one configuration are repeats of each other
    # only with the same study_id (None: a result of before it was said)
    study_id: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "label": self.label, "values": dict(self.values), "repeat": self.repeat,
                "repeats": self.repeats, "study": self.study,
                **({"study_id": self.study_id} if self.study_id is not None else {})}

    @classmethod
    def from_json(cls, d: Any) -> StudyConfiguration | None:
        """A result's "configuration" (None: a plain run's, or none that says which)."""
        if not isinstance(d, dict):
            return None
        repeat, repeats, study_id = d.get("repeat"), d.get("repeats"), d.get("study_id")
        return cls(str(d.get("id") or ""), str(d.get("label") or ""),
                   {str(k): str(v) for k, v in (d.get("values") or {}).items()},
                   int(repeat) if isinstance(repeat, int | float) else 1,
                   int(repeats) if isinstance(repeats, int | float) else 1, str(d.get("study") or ""),
                   str(study_id) if study_id is not None else None)
