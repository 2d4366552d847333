"""Result files in, configurations out: what the report compares.

A small loader of its own (bench_dsl/results/summary.py may later hold the one shared loader): a file is a
result when its `format` says so, and a directory is searched for such files at any depth, so a
matrix run's directory (summary.json, report.html, <id>-<slug>/repeat-<k>.json) can be given whole.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench_dsl.core.errors import UsageError
from bench_dsl.results.summary import configuration_key

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
    broken = [k for k in ("steps", "intervals") if not isinstance(doc.get(k, []), list)
              or not all(isinstance(x, dict) for x in doc.get(k, []))]
    if broken:
        if strict:
            raise UsageError(f"{path}: a damaged bench-dsl result: {' and '.join(broken)} should be a list of objects")
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
    out: list[Configuration] = []
    matrix: dict[str, Configuration] = {}
    plain: list[tuple[Configuration, ResultFile]] = []
    for r in results:
        c = r.doc.get("configuration")
        found = configuration_key(r.doc, r.path)
        if isinstance(c, dict) and found is not None:
            # ids are a matrix run's own (c1, c2, ...): two studies' c1 are two configurations
            key = json.dumps(found)
            if key not in matrix:
                matrix[key] = Configuration(key, str(c.get("label") or c["id"]))
                out.append(matrix[key])
            matrix[key].results.append(r)
        else:
            conf = Configuration(f"file {len(plain)}", "", [r])
            plain.append((conf, r))
            out.append(conf)
    names = [_scenario_name(r) for _, r in plain]
    files = [r.path.name if r.path is not None else None for _, r in plain]
    for (conf, r), name, file in zip(plain, names, files):
        if names.count(name) == 1 or file is None:
            conf.label = name
        elif files.count(file) == 1:
            conf.label = file
        else:  # repeat-1.json of two directories
            assert r.path is not None
            conf.label = f"{r.path.parent.name}/{file}"
    for conf in matrix.values():
        conf.results.sort(key=_repeat)
    # two studies with a configuration of the same label: say which study each one is
    labels = [c.label for c in out]
    for conf in matrix.values():
        study = (conf.results[0].doc.get("configuration") or {}).get("study")
        if labels.count(conf.label) > 1 and study:
            conf.label = f"{study}: {conf.label}"
    for conf, label in zip(out, _unique([c.label for c in out])):
        conf.label = label
    return out


def _scenario_name(r: ResultFile) -> str:
    return str((r.doc.get("scenario") or {}).get("name") or "unnamed scenario")


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
