"""A study: the configurations of `vary`, each run `repeat` times in interleaved order (A B C A B
C ...), each run a whole run of its own (bench_dsl.engine.runner.Run) with its own result file. At the end the
directory gets summary.json (bench_dsl.results.summary) and report.html (bench_dsl.results.report).

On a throwaway server each configuration gets a fresh server started with its settings (in its
`server.dir`) and loads its data; on a server of your own, remote_settings sets the varied settings
and restores them when the study ends."""

from __future__ import annotations

import asyncio
import json
import os
import time
import uuid
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console

from bench_dsl.core.dsn import Dsn
from bench_dsl.core.errors import ExitCode, UsageError, error_reason
from bench_dsl.engine import events as ev
from bench_dsl.engine.events import Sink
from bench_dsl.engine.plan import plan
from bench_dsl.engine.runner import Options, Run
from bench_dsl.language import model as m
from bench_dsl.results.sinks import (
    ConsoleSink,
    JsonResultSink,
    OutputClaim,
    check_regular,
)
from bench_dsl.server.remote_settings import RemoteSettings
from bench_dsl.study.plan import (
    output_directory,
    run_path,
    scenario_for,
    select,
    study_configuration,
)

# Which status wins when runs end differently: an interruption ends the study; then the worst.
_SEVERITY: list[int] = [ExitCode.OK, ExitCode.EXPECT_FAILED, ExitCode.BAD_SCENARIO, ExitCode.TARGET_FAILED,
                        ExitCode.FAILURE]


@dataclass
class StudyOptions:
    defines: Mapping[str, str] = field(default_factory=dict)
    only: list[str] = field(default_factory=list)
    time_scale: float = 1.0
    max_steps: int | None = None
    target: Dsn | None = None
    workers: tuple[str | None, int] | None = None  # --workers: (cluster, processes); None: the file's
    keep_server: bool = False
    force_prepare: bool = False
    restart_cmd: str | None = None
    quiet: bool = False
    output: str | None = None  # --json: the study's directory
    replace: bool = False  # --replace: an earlier study's results in that directory are removed first
    fleet_options: Mapping[str, str] = field(default_factory=dict)  # the named fleet's own options given


@dataclass
class StudyRun:
    configuration: m.Configuration
    repeat: int
    path: Path
    status: str | None = None
    exit_code: int | None = None
    problem: str | None = None  # its result file could not be written
    not_applied: list[str] = field(default_factory=list)  # settings the server did not take, said as name=value


async def run_study(sc: m.Scenario, opt: StudyOptions, err: Console) -> int:
    """Every chosen configuration, `repeat` times, interleaved; then summary.json and report.html.
    An interrupted run ends the study (what was measured is written); a failed one does not."""
    study = sc.study
    assert study is not None
    chosen = select(study, opt.only)
    order = [(c, r) for c, r in study.order() if c in chosen]
    say = _sayer(err)
    target = opt.target or sc.target_dsn
    if target is not None and any(c.server_dir for c in chosen):
        raise UsageError("server.dir varies where the throwaway server keeps its files; --target gives a server "
                         "of your own: leave out --target to compare the directories")
    for d in sorted({c.server_dir for c in chosen if c.server_dir}):
        if not os.path.isdir(d) or not os.access(d, os.W_OK | os.X_OK):  # noqa: ASYNC240 (checked once, before any run)
            raise UsageError(f"server.dir {d}: not a directory this user can write in")
    directory = output_directory(sc, opt.output)
    remote = None
    if target is not None:  # a static setting without --restart-cmd is refused before anything is written
        remote = RemoteSettings(target, {s.name for c in chosen for s in c.settings}, opt.restart_cmd,
                                lambda text: say(f"study: {text}"), fixed={s.name for s in sc.server_settings},
                                study=directory)
        await remote.check()  # from here on the server is this study's, until remote.release()
        target = remote.dsn  # every run must reach the server whose settings were written down
    try:
        return await _run_matrix(sc, opt, err, chosen, order, directory, target, remote)
    finally:
        if remote is not None:
            remote.release()


async def _run_matrix(sc: m.Scenario, opt: StudyOptions, err: Console, chosen: list[m.Configuration],
                      order: list[tuple[m.Configuration, int]], directory: Path, target: Dsn | None,
                      remote: RemoteSettings | None) -> int:
    study = sc.study
    assert study is not None
    say = _sayer(err)
    study_id = uuid.uuid4().hex[:12]  # this `bench run`'s: its runs are repeats of each other, no one else's
    runs = [StudyRun(c, r, run_path(directory, c, r)) for c, r in order]
    try:
        directory.mkdir(parents=True, exist_ok=True)  # noqa: ASYNC240 (once, before any run)
    except OSError as exc:
        raise UsageError(f"cannot write the study to {directory}: {exc.strerror}") from None
    claim = _claim(directory / "summary.json")
    try:
        _take_directory(directory, opt.replace, say)
    except BaseException:
        claim.release()
        raise
    try:
        if remote is not None:
            remote.record(directory)  # before the first SET GLOBAL: a killed study leaves them written down
        say(f"study {sc.name!r}: {len(chosen)} configurations x {study.repeat} = {len(runs)} runs, into {directory}/")
        if target is None:
            say("study: each run starts a fresh throwaway server with its configuration and loads the data "
                "(nothing is carried from one run to the next)")
        code: int = ExitCode.OK
        t0 = time.monotonic()
        for i, r in enumerate(runs, 1):
            say(f"── run {i}/{len(runs)}: {r.configuration.id} {r.configuration.label}"
                + (f" (repeat {r.repeat}/{study.repeat})" if study.repeat > 1 else "")
                + f" · {time.monotonic() - t0:.0f}s into the study")
            if remote is not None:
                await remote.configure(r.configuration)
            one = await _run_one(sc, r, opt, target, err, study_id)
            r.exit_code = int(one)
            say(f"── run {i}/{len(runs)} {r.configuration.id}: {r.status} (exit {r.exit_code}) -> {r.path}"
                + (f"; {r.problem}" if r.problem else "")
                + (f"; settings not applied: {', '.join(r.not_applied)}" if r.not_applied else ""))
            if one in (ExitCode.INTERRUPTED, ExitCode.TERMINATED, ExitCode.HANGUP):
                code = one
                break
            if one in _SEVERITY and _SEVERITY.index(one) > _SEVERITY.index(code):
                code = one
    finally:
        problems: list[str] = []
        try:
            if remote is not None:
                await remote.restore()
        finally:
            problems = await asyncio.to_thread(_finish, directory, runs, err)
            claim.release()
    # said last, once every output is closed, as a single run's is: the status and the exit status agree
    status, code = _verdict(runs, code, problems)
    for text in problems:
        say(f"bench: {text}")
    say(f"status: {status} (exit {int(code)})")
    return int(code)


def _verdict(runs: list[StudyRun], code: int, problems: list[str]) -> tuple[str, int]:
    """The study's status line and exit status: its runs' statuses; then a configuration whose
    settings were not applied (exit 2: it did not measure what its label says), then an output not
    written (exit 1), as a single run's `but an output is incomplete`."""
    ran = [r for r in runs if r.status is not None]
    counts = Counter(str(r.status) for r in ran)
    status = (next(iter(counts)) if len(counts) == 1 else
              ", ".join(f"{n} {s}" for s, n in counts.items()) if counts else "not run")
    if 0 < len(ran) < len(runs):
        status += f" ({len(ran)} of {len(runs)} runs)"
    unapplied = list(dict.fromkeys(r.configuration.id for r in runs if r.not_applied))  # in the study's order
    if unapplied:
        status += f", but the settings of {', '.join(unapplied)} were not applied"
        if code in _SEVERITY and _SEVERITY.index(code) < _SEVERITY.index(ExitCode.BAD_SCENARIO):
            code = ExitCode.BAD_SCENARIO
    if problems or any(r.problem for r in runs):
        status += ", but an output is incomplete"
        code = ExitCode.FAILURE
    return status, int(code)


async def _run_one(sc: m.Scenario, r: StudyRun, opt: StudyOptions, target: Dsn | None, err: Console,
                   study_id: str) -> int:
    conf_sc = scenario_for(sc, r.configuration, opt.defines)
    p = plan(conf_sc, opt.time_scale, opt.max_steps)
    try:
        r.path.parent.mkdir(parents=True, exist_ok=True)
        claim = _claim(r.path)
    except (OSError, UsageError) as exc:  # a full disk: this run cannot be recorded, the study goes on
        r.status = "not run"
        r.problem = str(exc) if isinstance(exc, UsageError) else f"could not write {r.path}: {_cause(exc)}"
        return ExitCode.FAILURE
    status: list[str] = []
    result = JsonResultSink(r.path)
    sinks: list[Sink] = [result, _Status(status)]
    if not opt.quiet:
        sinks.append(ConsoleSink(err))
    options = Options(time_scale=opt.time_scale, max_steps=opt.max_steps, keep_server=opt.keep_server,
                      force_prepare=opt.force_prepare, target=target,
                      workers=opt.workers[1] if opt.workers else None, cluster=opt.workers[0] if opt.workers else None,
                      fleet_options=opt.fleet_options,
                      configuration=study_configuration(sc, r.configuration, r.repeat, study_id))
    try:
        run = Run(conf_sc, p, list(sinks), options)
        code = await run.execute()
    finally:
        def close() -> None:
            for s in sinks:
                try:
                    s.close()
                except Exception as exc:  # the next runs go on; this one's file is said to be missing
                    r.problem = f"could not write {r.path}: {_cause(exc)}"
        await asyncio.to_thread(close)
        claim.release()
    r.status = status[0] if status else "not run"
    r.not_applied = [f"{a.get('name')}={a.get('requested')} (the server has {a.get('after')}: {a.get('note')})"
                     for a in (result.document.doc.get("server") or {}).get("settings") or [] if not a.get("applied")]
    if r.problem:
        return ExitCode.FAILURE
    return code


class _Status:
    """Keeps the run's status from its Finished event."""

    def __init__(self, out: list[str]) -> None:
        self.out = out

    def emit(self, event: object) -> None:
        if isinstance(event, ev.Finished):
            self.out.insert(0, event.status)

    def close(self) -> None:
        pass


def _take_directory(directory: Path, replace: bool, say: Callable[[str], None]) -> None:
    """The study's directory holds no other study's results: their runs would be read as repeats
    of this one's. With --replace they are removed (result files only, and the folders they leave
    empty); anything else in the directory stays."""
    from bench_dsl.results.read import is_result_file

    earlier = sorted(p for p in directory.rglob("*.json") if p.is_file() and is_result_file(p))
    if not earlier:
        return
    if not replace:
        raise UsageError(f"{directory} holds the results of an earlier study ({len(earlier)} result file"
                         f"{'s' if len(earlier) != 1 else ''}, e.g. {earlier[0]}): this study's runs would be "
                         "merged with them\n  hint: give another directory (the default, results/{scenario}-{time}/, "
                         "is new each time), or --replace to remove those results first")
    for p in earlier:
        try:
            p.unlink()
        except OSError as exc:
            raise UsageError(f"--replace: cannot remove {p}: {exc.strerror}") from None
    for d in sorted({p.parent for p in earlier}, key=lambda d: -len(d.parts)):
        while d != directory and d.is_relative_to(directory):
            try:
                d.rmdir()  # only when empty: what is not a result stays, and so does its folder
            except OSError:
                break
            d = d.parent
    say(f"study: --replace: removed the {len(earlier)} result files of an earlier study in {directory}/")


def _claim(path: Path) -> OutputClaim:
    try:
        check_regular(path)
        return OutputClaim(path)
    except Exception as exc:
        raise UsageError(f"cannot write {path}: {exc}") from None


def _sayer(err: Console) -> Callable[[str], None]:
    def say(text: str) -> None:
        err.print(text, markup=False, highlight=False, soft_wrap=True)
    return say


def _finish(directory: Path, runs: list[StudyRun], err: Console) -> list[str]:
    """summary.json and report.html from the result files the runs wrote, and the comparison
    table (bench compare's) on the console. Returns what could not be written, with its cause."""
    say = _sayer(err)
    paths = [r.path for r in runs if r.path.exists()]
    if not paths:
        say("study: no run wrote a result; no summary")
        return []
    from bench_dsl.results.files import write_atomically
    from bench_dsl.results.read import BadResult, read_result
    from bench_dsl.results.summary import summarize

    problems: list[str] = []
    results = []
    for p in paths:  # the study's own files, read as `bench compare` and `bench report` read them
        try:
            results.append(read_result(p))
        except BadResult as exc:  # a run killed mid-way leaves no such file; a damaged one is said
            problems.append(f"{exc}: left out of the summary and the report")
    if not results:
        return problems
    summary = summarize(results, base=directory)
    try:
        write_atomically(directory / "summary.json", json.dumps(summary, indent=2) + "\n")
        say(f"summary: {directory / 'summary.json'}")
    except OSError as exc:  # a full disk: the results are written, the report is still worth trying
        problems.append(f"could not write {directory / 'summary.json'}: {_cause(exc)}")
    try:
        from bench_dsl.results.comparison import compare, to_rich

        # force: a study that varies its data ($rows) compares configurations of different data on purpose
        err.print(to_rich(compare(summary, force=True)))
    except Exception as exc:  # the table is a courtesy: summary.json holds the figures
        say(f"study: no comparison table: {error_reason(exc)}")
    try:
        from bench_dsl.results.report import write_html

        write_html(results, directory / "report.html")
        say(f"report:  {directory / 'report.html'}")
    except OSError as exc:
        problems.append(f"could not write {directory / 'report.html'}: {_cause(exc)}")
    except Exception as exc:  # the summary and every result are written: the report is the last thing
        problems.append(f"the report could not be made: {error_reason(exc)}")
    return problems


def _cause(exc: BaseException) -> str:
    """Why a write failed, as a person reads it: the system's words, not the temporary file's name."""
    return (exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)) or "unknown error"
