"""The one reader of result files: `bench compare`, `bench report`, `bench replay` and a study's
summary all read results here, and here is where bad input stops.

    read_result(path) -> ResultFile              one file named outright: a result, or BadResult
    find_results(paths) -> Found                 files and directories: the results, and what was skipped

A file is opened without blocking and checked to be a regular file before a byte is read, so a
FIFO, /dev/zero or /dev/urandom (or a link to one) is refused at once instead of hanging or filling
memory; it is read up to MAX_BYTES. JSON nested deeper than MAX_DEPTH is refused (real results are
a handful of levels deep; the parser's own recursion limit is a clean error too). Then the document
is checked against schema/result-v1.json as far as any reader relies on it (conformance.py): the types of
the fields, and every figure finite and, where it is a count, a rate, a duration or a latency, not
negative. The checks are written out rather than run through jsonschema: a validator walking the
whole schema reads about 650 report intervals a second, a day's run at a 1 s interval is 86,400 of
them, and no JSON schema can say "finite" anyway (Python reads NaN and 1e400 as floats, and an integer of
400 digits whole, which then fails the first float() that meets it).

Anything wrong is one error type, BadResult, a UsageError (exit 2) whose text is "FILE: FIELD: what
is wrong". In a directory, what cannot be a result (not JSON, cut short, another program's JSON, a
device) is skipped and named in Found.skipped, never silently; bench-dsl's own other files there
(summary.json, a comparison) are passed over. A document that says it is a result and is damaged is
an error wherever it is. Files come in natural order (c2 before c10, repeat-2 before repeat-10: the
order a study writes them), and one file reached twice (named twice, a hard or symbolic link to it)
counts once.
"""

from __future__ import annotations

import errno
import json
import os
import re
import stat
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench_dsl.core.errors import UsageError
from bench_dsl.results.conformance import MAX_DEPTH, Problem, check_result

RESULT_FORMAT = "bench-dsl-result"
# bench-dsl's own files that live beside results (a study's summary.json, a saved comparison)
OWN_FORMATS = ("bench-dsl-summary", "bench-dsl-comparison")
# a day's run with a 1 s report interval is a few hundred MB; this bounds a wrong path
MAX_BYTES = 1 << 30
GIVE = "give the result JSON files of `bench run`, or a directory that holds them"


class BadResult(UsageError):
    """A file that cannot be read as a result: `FILE: FIELD: what is wrong` (FIELD may be empty)."""

    def __init__(self, path: Path | str, problem: str, where: str = "") -> None:
        self.path, self.where, self.problem = Path(path), where, problem
        super().__init__(f"{path}: {where + ': ' if where else ''}{problem}")


@dataclass(frozen=True, slots=True)
class ResultFile:
    """One result document and where it was read from (path None: handed over in memory)."""

    doc: dict[str, Any]
    path: Path | None = None
    inode: tuple[int, int] | None = None  # (device, inode): one file reached by two names is one


@dataclass(slots=True)
class Found:
    results: list[ResultFile] = field(default_factory=list)
    skipped: list[tuple[Path, str]] = field(default_factory=list)  # (file, why) found in a directory

    def warnings(self) -> list[str]:
        return [f"warning: {p}: skipped: {why}" for p, why in self.skipped]


def natural(path: Path) -> list[Any]:
    """The sort key that puts c2-... before c10-... and repeat-2 before repeat-10."""
    return [(0, int(t), "") if t.isdigit() else (1, 0, t) for t in re.split(r"(\d+)", str(path))]


def read_bytes(path: Path, limit: int = MAX_BYTES) -> tuple[bytes, tuple[int, int]]:
    """The bytes of a regular file (through links), at most `limit` of them, and its (device, inode).
    O_NONBLOCK: opening a FIFO returns at once, and fstat then says what it is."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            raise BadResult(path, "no such file") from None
        raise BadResult(path, f"cannot be read: {exc.strerror}") from None
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise BadResult(path, "is a directory")
        if not stat.S_ISREG(st.st_mode):
            kind = ("a FIFO" if stat.S_ISFIFO(st.st_mode) else "a device" if stat.S_ISCHR(st.st_mode)
                    or stat.S_ISBLK(st.st_mode) else "a socket" if stat.S_ISSOCK(st.st_mode) else "not a file")
            raise BadResult(path, f"is {kind}, not a regular file: results are read from regular files only")
        if st.st_size > limit:
            raise BadResult(path, f"is {st.st_size:,} bytes, more than a result can be ({limit:,})")
        chunks, size = [], 0
        while size <= limit:  # the file may grow while it is read
            chunk = os.read(fd, min(1 << 20, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > limit:
            raise BadResult(path, f"grew past {limit:,} bytes while it was read: not a result")
        return b"".join(chunks), (st.st_dev, st.st_ino)
    except OSError as exc:
        raise BadResult(path, f"cannot be read: {exc.strerror or exc}") from None
    finally:
        os.close(fd)


def parse_json(path: Path, data: bytes, line: int | None = None) -> Any:
    """A JSON text, or BadResult saying why it is not one (cut short, not UTF-8, nested too deep)."""
    where = "" if line is None else f"line {line}"
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise BadResult(path, "not UTF-8 text: not a bench-dsl result", where) from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        cut = exc.pos >= len(text.rstrip()) or exc.msg.startswith("Unterminated string")  # it ran to the end
        what = "cut short (it ends in the middle of the JSON)" if cut else \
            f"not JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})"
        raise BadResult(path, what, where) from None
    except RecursionError:
        raise BadResult(path, f"JSON nested deeper than {MAX_DEPTH} levels: not a result", where) from None
    except ValueError:  # Python reads no integer of more than sys.get_int_max_str_digits() digits
        raise BadResult(path, _too_long(text), where) from None
    return doc


def _too_long(text: str) -> str:
    """Where the number is that Python refused to read (its error says neither where nor which)."""
    limit = sys.get_int_max_str_digits() + 1
    found = re.search(rf"(?<=[:\[,])\s*-?(\d{{{limit},}})(?=\s*[,\]}}])", text)
    if found is None:
        return "not JSON: a number Python cannot read"
    start = found.start(1)
    line = text.count("\n", 0, start) + 1
    col = start - text.rfind("\n", 0, start)
    return (f"not a result (line {line}, column {col}: a number of {len(found.group(1)):,} digits is not a figure: "
            "a result holds numbers a float can hold only)")


def result_of(path: Path, doc: Any, inode: tuple[int, int] | None = None) -> ResultFile:
    """A parsed document checked as a result (see conformance.py), or BadResult naming the field."""
    if not isinstance(doc, dict) or doc.get("format") != RESULT_FORMAT:
        what = doc.get("format") if isinstance(doc, dict) else None
        raise BadResult(path, "not a bench-dsl result" + (f" (its format is {what!r})" if isinstance(what, str) else "")
                        + f": {GIVE}")
    if doc.get("format_version") != 1:
        raise BadResult(path, f"result format version {doc.get('format_version')!r}; this bench-dsl reads version 1",
                        "format_version")
    problem: Problem | None = check_result(doc)
    if problem is not None:
        raise BadResult(path, problem.what, problem.where)
    return ResultFile(doc, path, inode)


def read_result(path: str | Path) -> ResultFile:
    """One file named outright: it must be a result."""
    p = Path(path)
    data, inode = read_bytes(p)
    return result_of(p, parse_json(p, data), inode)


def _in_directory(path: Path) -> ResultFile | str | None:
    """A file found in a directory: its result, why it was skipped, or None (bench-dsl's own other file)."""
    try:
        data, inode = read_bytes(path)
        doc = parse_json(path, data)
    except BadResult as exc:
        return f"{exc.where + ': ' if exc.where else ''}{exc.problem}"
    if isinstance(doc, dict) and doc.get("format") in OWN_FORMATS:
        return None
    if not isinstance(doc, dict) or doc.get("format") != RESULT_FORMAT:
        return "not a bench-dsl result"
    return result_of(path, doc, inode)  # a result that is damaged is an error: it belongs here


def find_results(paths: Iterable[str | Path]) -> Found:
    """The results among `paths`: a file is taken as given (and must be a result); a directory is
    searched at any depth for *.json, in natural order (see the module)."""
    found = Found()
    seen: set[tuple[int, int]] = set()
    for given in paths:
        p = Path(given)
        if p.is_dir():
            inside = [r for f in sorted(p.rglob("*.json"), key=natural) if (r := _keep(f, found)) is not None]
            if not inside:
                raise UsageError(f"{p}: no bench-dsl result files in this directory (looked for *.json with "
                                 f"\"format\": \"{RESULT_FORMAT}\" at any depth)")
        else:
            inside = [read_result(p)]
        for r in inside:
            if r.inode is None or r.inode not in seen:
                if r.inode is not None:
                    seen.add(r.inode)
                found.results.append(r)
    return found


def _keep(path: Path, found: Found) -> ResultFile | None:
    got = _in_directory(path)
    if isinstance(got, str):
        found.skipped.append((path, got))
        return None
    return got


def is_result_file(path: Path) -> bool:
    """Whether a file says it is a result (of any format version, damaged or not): a study's
    directory that holds one holds an earlier study."""
    try:
        data, _ = read_bytes(path)
        doc = parse_json(path, data)
    except BadResult:
        return False
    return isinstance(doc, dict) and doc.get("format") == RESULT_FORMAT
