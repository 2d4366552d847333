"""Result files in, configurations out: what the report compares.

A small loader of its own (bench_dsl/summary.py may later hold the one shared loader): a file is a
result when its `format` says so, and a directory is searched for such files at any depth, so a
matrix run's directory (summary.json, report.html, <id>-<slug>/repeat-<k>.json) can be given whole.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench_dsl.errors import UsageError

FORMAT = "bench-dsl-result"


@dataclass(frozen=True, slots=True)
class ResultFile:
    """One result document and where it was read from (None: handed over in memory)."""

    doc: dict[str, Any]
    path: Path | None = None


@dataclass(slots=True)
class Configuration:
    """The runs of one configuration: a matrix run's repeats of it, or one plain result file."""

    key: str
    label: str
    results: list[ResultFile] = field(default_factory=list)

    @property
    def docs(self) -> list[dict[str, Any]]:
        return [r.doc for r in self.results]


def load_results(paths: Iterable[str | Path]) -> list[ResultFile]:
    """Every result in `paths`: files as given, directories searched recursively. A file named
    outright that is not a result is a usage error (a typo or a wrong file is worth saying); files
    found in a directory that are not results (summary.json, a scenario's notes) are passed over."""
    out: list[ResultFile] = []
    seen: set[Path] = set()
    for given in paths:
        p = Path(given)
        if p.is_dir():
            found = [f for f in sorted(p.rglob("*.json")) if f.is_file()]
            docs = [(f, _read(f, strict=False)) for f in found]
            results = [ResultFile(d, f) for f, d in docs if d is not None]
            if not results:
                raise UsageError(f"{p}: no bench-dsl result file in this directory (looked for *.json "
                                 f"with \"format\": \"{FORMAT}\" at any depth)")
        elif p.exists():
            doc = _read(p, strict=True)
            assert doc is not None  # strict reading raises instead
            results = [ResultFile(doc, p)]
        else:
            raise UsageError(f"{p}: no such file or directory")
        for r in results:
            assert r.path is not None
            real = r.path.resolve()
            if real not in seen:  # a file given twice, or also inside a directory given, counts once
                seen.add(real)
                out.append(r)
    return out


def _read(path: Path, strict: bool) -> dict[str, Any] | None:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        if strict:
            raise UsageError(f"{path}: cannot read it: {exc.strerror}") from None
        return None
    except UnicodeDecodeError:
        if strict:
            raise UsageError(f"{path}: not a bench-dsl result (not UTF-8 text)") from None
        return None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        if strict:
            raise UsageError(f"{path}: not a bench-dsl result: not valid JSON (line {exc.lineno}, column "
                             f"{exc.colno}: {exc.msg})") from None
        return None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        if strict:
            raise UsageError(f"{path}: not a bench-dsl result (no \"format\": \"{FORMAT}\"); give the result "
                             "JSON a run wrote, or a directory of them")
        return None
    if doc.get("format_version") != 1:
        if strict:
            raise UsageError(f"{path}: result format version {doc.get('format_version')!r}; this bench-dsl "
                             "reads version 1")
        return None
    return doc


def as_results(docs: Sequence[dict[str, Any] | ResultFile]) -> list[ResultFile]:
    """Documents handed over in memory (the matrix runner has them) or already loaded."""
    return [d if isinstance(d, ResultFile) else ResultFile(d) for d in docs]


def group(results: Sequence[ResultFile]) -> list[Configuration]:
    """Configurations in the order first seen: a matrix run's by `configuration.id` (its repeats
    together), any other file alone, labelled by its scenario's name, or by its file name when
    two of them share a name (two runs of one scenario are told apart by where they were written)."""
    configs: dict[str, Configuration] = {}
    plain: list[ResultFile] = []
    for r in results:
        c = r.doc.get("configuration")
        if isinstance(c, dict) and c.get("id") is not None:
            study = c.get("study")
            key = f"{study}\x00{c['id']}" if study else str(c["id"])
            if key not in configs:
                label = str(c.get("label") or c["id"])
                configs[key] = Configuration(key, label)
            configs[key].results.append(r)
        else:
            configs[f"\x01{len(plain)}"] = Configuration(f"\x01{len(plain)}", "")
            plain.append(r)
    names = [_scenario_name(r) for r in plain]
    labels = [n if names.count(n) == 1 else _file_label(r, n) for r, n in zip(plain, names)]
    for i, (r, label) in enumerate(zip(plain, _unique(labels))):
        configs[f"\x01{i}"].results.append(r)
        configs[f"\x01{i}"].label = label
    out = list(configs.values())
    for c in out:
        c.results.sort(key=lambda r: _repeat(r))
    # two studies with a configuration of the same label: say which study each one is
    labels = [c.label for c in out]
    for c in out:
        study = (c.results[0].doc.get("configuration") or {}).get("study")
        if labels.count(c.label) > 1 and study:
            c.label = f"{study}: {c.label}"
    for c, label in zip(out, _unique([c.label for c in out])):
        c.label = label
    return out


def _scenario_name(r: ResultFile) -> str:
    return str((r.doc.get("scenario") or {}).get("name") or "unnamed scenario")


def _file_label(r: ResultFile, name: str) -> str:
    return r.path.name if r.path is not None else name


def _repeat(r: ResultFile) -> int:
    c = r.doc.get("configuration")
    rep = c.get("repeat") if isinstance(c, dict) else None
    return rep if isinstance(rep, int) else 0


def _unique(labels: list[str]) -> list[str]:
    """Labels are the legend's keys: the same text twice would draw two configurations as one."""
    out: list[str] = []
    for label in labels:
        candidate, n = label, 2
        while candidate in out:
            candidate, n = f"{label} ({n})", n + 1
        out.append(candidate)
    return out
