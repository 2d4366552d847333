"""Sinks of the event stream: the console (rich, on stderr), the JSON result file (rewritten
at every interval by files.write_atomically, so a kill leaves the last complete picture), and JSON
lines (every event, in stream.py's form).
They read events only: nothing here imports the engine."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import stat
import sys
import threading
from pathlib import Path
from typing import IO, Any

from rich.console import Console
from rich.markup import escape as esc  # scenario text may hold [brackets]: never read them as styles

from bench_dsl.core.figures import Figure
from bench_dsl.engine import events as ev
from bench_dsl.engine.profiles.registry import DEFAULT_AXIS, axis_named
from bench_dsl.measure.stalls import STALL_SHOWN_S
from bench_dsl.results.document import ResultDocument
from bench_dsl.results.files import NotAnOutput, check_kind, write_atomically
from bench_dsl.results.stream import encode
from bench_dsl.results.verdict import Line, expect_line, ran_out_line, verdict_lines


class OutputTaken(Exception):
    """The path cannot be a run's output: another run writes it, or it is not a regular file."""


def check_regular(path: Path) -> None:
    """A result is written through a temporary file renamed over the path: that would replace a
    device node (/dev/null), a symlink or a pipe by a regular file, so only a regular file (or
    nothing) may be there; and a regular file only when bench-dsl wrote it (an earlier result,
    summary or comparison) or it is empty: `output "notes.txt"` must not replace someone's notes."""
    _check_kind(path)
    try:
        with open(path, "rb") as f:
            head = f.read(BENCH_FILE_HEAD)
    except FileNotFoundError:
        return
    if head and BENCH_FILE.search(head) is None:
        raise OutputTaken("it is a file bench-dsl did not write: move it away or give another path")


def check_stream(path: Path) -> None:
    """An event stream (--jsonl) is written in place, so it may go to a pipe or a terminal; but a
    regular file there (through a link too) is truncated: only one that holds an earlier stream, or
    nothing, may be."""
    try:
        st = path.stat()
    except FileNotFoundError:
        return
    if stat.S_ISDIR(st.st_mode):
        raise OutputTaken("it is a directory")
    if not stat.S_ISREG(st.st_mode) or st.st_size == 0:
        return
    with open(path, "rb") as f:
        head = f.read(BENCH_FILE_HEAD)
    if BENCH_STREAM.match(head) is None:
        raise OutputTaken("it is a file bench-dsl did not write: move it away or give another path")


# an event stream's first line: any event with its format version (stream.py), or the `started`
# event of a stream written before lines had one
BENCH_STREAM = re.compile(rb'\{"type": "[a-z_]+", "format_version": \d+, |\{"type": "started", "scenario": ')
# bench-dsl's JSON files name their format near the start ("$schema" first, then "format")
BENCH_FILE = re.compile(rb'^\s*\{[^{]*"format":\s*"bench-dsl-[a-z]+"')
BENCH_FILE_HEAD = 4096


def _check_kind(path: Path) -> None:
    try:
        check_kind(path)
    except NotAnOutput as exc:
        raise OutputTaken(str(exc)) from None


class OutputClaim:
    """An output path held by this run alone, for as long as it runs: a second run given the same
    path is refused at once instead of both writing it (one result lost, broken lines). The claim
    is an exclusive lock on a hidden file beside the path, removed when the run ends."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.lock = path.parent / f".{path.name}.lock"
        while True:
            fd = os.open(self.lock, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                raise OutputTaken("another run is writing it (give this one another path)") from None
            try:  # the file may have been removed by the run that held it, between our open and lock
                same = os.stat(self.lock).st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(fd)
        self.fd: int | None = fd

    def release(self) -> None:
        if self.fd is None:
            return
        with contextlib.suppress(OSError):
            self.lock.unlink()  # while still locked: whoever opened it before is told to look again
        os.close(self.fd)
        self.fd = None


class JsonResultSink:
    """The versioned result document (schema: bench_dsl/results/schema/result-v1.json), built from the
    run's events (bench_dsl.results.document) and rewritten whole at each interval and at the end.

    Encoding and fsyncing a long run's document takes long enough to stall the virtual users of a
    single-process run, so a thread writes it; the newest state replaces one not yet written.
    close() writes the last one before it returns, and raises if it could not. A write that failed
    (a full disk) is said as a warning event at the next write, once, and so is the first one that
    succeeds after it: the person watching knows the file is behind."""

    WRITE_ON = (ev.Started, ev.Totals, ev.Finished)

    def __init__(self, path: Path) -> None:
        self.path = path
        self.name = f"the result file {path}"
        self.document = ResultDocument()
        self._pending: dict[str, Any] | None = None
        self._error: BaseException | None = None
        self._told: BaseException | None = None  # the write error a warning said
        self._closed = False
        self._encoded: list[str] = []  # the intervals written so far, each encoded once
        self._cond = threading.Condition()
        self._thread = threading.Thread(target=self._write_loop, name="json-result", daemon=True)
        self._thread.start()

    def emit(self, event: ev.Event) -> list[ev.Event] | None:
        self.document.apply(event)
        if not isinstance(event, self.WRITE_ON):
            return None
        said = self._tell(event)
        doc = self.document.doc
        # the document's lists grow while the thread encodes: hand over copies of them
        snapshot = {k: (list(v) if isinstance(v, list) else v) for k, v in doc.items()}
        with self._cond:
            self._pending = snapshot
            self._cond.notify()
        return said

    def _write_loop(self) -> None:
        while True:
            with self._cond:
                while self._pending is None and not self._closed:
                    self._cond.wait()
                doc, self._pending = self._pending, None
                if doc is None:
                    return
            try:
                # json's C encoder only runs without indent: a long run's document is rewritten
                # every interval, so checkpoints are compact and only the final one is indented
                final = doc.get("status") != "running"
                text = json.dumps(doc, indent=1, default=str) if final else self._compact(doc)
                write_atomically(self.path, text + "\n")
                self._error = None
            except Exception as exc:  # reported by close(): the run must not die of a full disk
                self._error = exc

    def _tell(self, event: ev.Event) -> list[ev.Event] | None:
        """A warning when writes began to fail, and one when they work again; not one per failure."""
        error = self._error
        if error is self._told or (error is not None and self._told is not None):
            return None
        self._told = error
        t = getattr(event, "elapsed_s", None)
        if error is not None:
            return [ev.Log("warning", f"could not write {self.path}: {error}; trying again at every interval", t)]
        return [ev.Log("warning", f"{self.path} written again", t)]

    _INTERVALS = "\x00intervals\x00"

    def _compact(self, doc: dict[str, Any]) -> str:
        """The document without indent. Intervals are only ever appended, so each is encoded once:
        a long run's checkpoint costs what is new, not the whole history again (the encoder holds
        the interpreter lock, which a single-process run's users need)."""
        intervals = doc.get("intervals")
        if not isinstance(intervals, list):
            return json.dumps(doc, default=str)
        if len(intervals) < len(self._encoded):  # not the same run's list: start again
            self._encoded = []
        self._encoded += [json.dumps(i, default=str) for i in intervals[len(self._encoded):]]
        head = json.dumps(doc | {"intervals": self._INTERVALS}, default=str)
        return head.replace(json.dumps(self._INTERVALS), "[" + ",".join(self._encoded) + "]", 1)

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify()
        self._thread.join()
        if self._error is not None:
            raise self._error


class JsonLinesSink:
    """One JSON object per line, as the run goes: every event, each with its format version
    (bench_dsl/results/stream.py), so that `bench replay` plays the run as the sinks met it.

    Each line is written whole by a write() of its own, past the stream's buffer. A line that cannot
    be written whole (a full disk, a file size limit) is cut back off a regular file before the
    error is raised, so that whoever reads the stream only ever meets whole lines; through the
    buffer, its first part stayed in the file and the rest in the buffer, to be written after
    whatever came next if the disk had room again by then."""

    def __init__(self, stream: IO[str], name: str = "the event stream") -> None:
        self.stream = stream
        self.name = name
        self.fd = stream.fileno()

    def emit(self, event: ev.Event) -> None:
        self._write((json.dumps(encode(event), default=str) + "\n").encode())

    def _write(self, data: bytes) -> None:
        self.stream.flush()  # whatever else went through the stream stays before this line
        try:
            start: int | None = os.lseek(self.fd, 0, os.SEEK_CUR)
        except OSError:
            start = None  # a pipe or a terminal: nothing to cut back
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(self.fd, view):]
        except OSError:
            if start is not None and len(view) < len(data):
                with contextlib.suppress(OSError):
                    os.ftruncate(self.fd, start)
                    os.lseek(self.fd, start, os.SEEK_SET)
            raise

    def close(self) -> None:
        if self.stream in (sys.stdout, sys.stderr):
            try:
                self.stream.flush()
            except BrokenPipeError:
                # the reader left (`| head`): keep Python from complaining about stdout at exit
                os.dup2(os.open(os.devnull, os.O_WRONLY), self.stream.fileno())
        else:
            self.stream.close()


def _ms(v: Any) -> str:
    return "    -" if v is None else f"{v:7.2f}"


# the tones of the verdict's words (bench_dsl.results.verdict), as the console styles them
TONE_STYLE = {"dim": "dim", "strong": "bold", "good": "bold green", "bad": "bold red", "error": "red",
              "warn": "yellow", "note": "yellow"}


class ConsoleSink:
    """Human progress on stderr: one line per report interval, as sysbench's --report-interval."""

    def __init__(self, console: Console | None = None) -> None:
        self.c = console or Console(stderr=True, highlight=False)
        self.c.soft_wrap = True  # one line per interval, as sysbench: never folded
        self.axis = DEFAULT_AXIS  # the run's load axis, once it begins: its words for an interval's load
        self.host: tuple[Figure, ...] = ()  # the server machine's figures (its power), from the run's catalog

    def emit(self, event: ev.Event) -> None:
        match event:
            case ev.Begin():
                self.axis = axis_named(event.scenario.load_axis)
                self.host = tuple(f for f in event.figures.at("figures") if f.side == "host")
            case ev.Power(source=str(), no_power_figure=str(why)):
                self.c.print(f"[yellow]no power figure: {esc(why)}[/]")
            case ev.Started():
                self.c.print(f"[bold]{esc(event.scenario)}[/] on {esc(event.target)} ({esc(event.server_version)})")
            case ev.Log():
                style = {"warning": "yellow", "error": "bold red"}.get(event.level, "dim")
                self.c.print(f"[{style}]{esc(event.message)}[/]", markup=True)
            case ev.Interval():
                row, d = event.row, event.row.figures
                lat = d["latency_ms"]
                cpu = d["cpu"]
                cpus = " ".join(f"{k} {v:.0f}%" for k, v in cpu.items() if v is not None)
                phase = ev.phase_label(row.phase, row.step, short=True)
                secs = d["seconds"] or 1
                extra = ""
                extra += self.axis.row_words(d)  # the load's own figures (a rate's: offered, dropped, busy)
                if st := d.get("statements"):  # sysbench's r/w/o, per second
                    extra += f" r/w/o {st['reads_per_s']:.0f}/{st['writes_per_s']:.0f}/{st['other_per_s']:.0f}"
                if (d.get("stall_s") or 0) >= STALL_SHOWN_S:
                    extra += f" stall {d['stall_s']:.1f}s"
                if (rep := d.get("replication")) and rep.get("lag_s") is not None:
                    extra += f" lag {rep['lag_s']:.2f}s"
                if disk := d.get("disk"):
                    extra += f" disk {disk['busiest']} {disk['util_pct']:.0f}% {disk['iops']:.0f}iops"
                extra += "".join(f" {f.title or f.name} {d[f.name]:.1f}" for f in self.host
                                 if "tick" in f.live and d.get(f.name) is not None)
                self.c.print(
                    f"[{row.t:5.0f}s] {phase:<9} users {d['users']:>4} tps {d['tps']:8.1f} qps {d['qps']:8.1f} "
                    f"lat ms p50/p95/p99 {_ms(lat['p50']).strip()}/{_ms(lat['p95']).strip()}/{_ms(lat['p99']).strip()} "
                    f"err/s {d['errors'] / secs:.1f} retry/s {d['retries'] / secs:.1f} cpu {cpus}{extra}",
                    markup=False)
            case ev.StepEnded():
                step, d = event.row, event.row.figures
                lat = d["latency_ms"]
                stall = f", stall {d['stall_s']:.1f}s" if d.get("stalls") else ""
                self.c.print(f"[bold cyan]step {step.step} done:[/] {step.users} users, tps {d['tps']:.1f}, "
                             f"p90 {_ms(lat['p90']).strip()} ms, p99 {_ms(lat['p99']).strip()} ms, "
                             f"errors {d['errors']}{stall}"
                             + "".join(f", {f.name} {d[f.name]:.{min(f.digits, 1)}f} {f.unit}" for f in self.host
                                       if f.unit and d.get(f.name) is not None)
                             + (" [yellow](not complete)[/]" if not step.complete else ""))
                if step.bottleneck is not None:  # what ran out in it, with what was ruled out
                    self._said([("  ", "plain"), *ran_out_line(step.bottleneck.to_json())])
            case ev.Finished():
                self._verdict(event)

    def _verdict(self, fin: ev.Finished) -> None:
        d = fin.to_json()
        sat = d["saturation"] or {}
        if sat.get("saturated") or sat.get("users") is not None:  # nothing measured: the error said why
            for line in verdict_lines(sat, fin.stop):
                self._said(line)
        s = d.get("summary")
        if s:
            lat = s["latency_ms"]
            self.c.print(f"measured: {s['count']} transactions in {s['seconds']:.0f}s, tps {s['tps']:.1f}, "
                         f"p95 {_ms(lat['p95']).strip()} ms, errors {s['errors']}"
                         + "".join(f", {f.name} {s[f.name]:.{min(f.digits, 1)}f} {f.unit}" for f in self.host
                                   if f.unit and s.get(f.name) is not None))
        for e in d.get("expect") or []:
            self._said(expect_line(e))

    def _said(self, line: Line) -> None:
        self.c.print("".join(f"[{TONE_STYLE[tone]}]{esc(words)}[/]" if tone in TONE_STYLE else esc(words)
                             for words, tone in line))

    def close(self) -> None:
        pass
