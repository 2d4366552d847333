"""A study's server settings on a server of your own: checked before anything runs (a static one
cannot change under SET GLOBAL), set for each configuration, and restored when the study ends.

A throwaway server needs none of this: each configuration gets a fresh one started with its
settings. A static setting of a remote server changes only when the server restarts, so it needs
`--restart-cmd`: a command bench-dsl runs with the configuration's settings in its environment
(BENCH_SETTINGS="name=value ...", and BENCH_SETTING_<NAME>=value each) and that returns once the
server is restarted with them.

The values the server had are written down before the first configuration is set: in the study's
directory and in a state file per server address (no user, no password) under $XDG_STATE_HOME
(~/.local/state)/bench-dsl/servers/, removed once they are set back. A study killed before it set
them back (SIGKILL, a power cut) leaves that file: the next study against the server sets them back
first, or says which settings an earlier study left changed and what each one was."""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import hashlib
import json
import os
import re
import socket
import subprocess
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import asyncmy

from bench_dsl.core.dsn import Dsn, redact
from bench_dsl.core.errors import TargetError, UsageError, error_reason
from bench_dsl.language import model as m
from bench_dsl.server.connect import connect, connect_explained

READ_ONLY = 1238  # ER_INCORRECT_GLOBAL_LOCAL_VAR: "Variable '%s' is a read only variable"
RESTART_WAIT = 300.0  # seconds a restarted server may take to accept connections again
STUDY_FILE = "server-settings.json"  # the copy in the study's directory
STATE_FORMAT = "bench-dsl-server-settings"
VARIABLE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")  # a state file's names go into SET GLOBAL: names only


class RemoteSettings:
    def __init__(self, dsn: Dsn, names: Iterable[str], restart_cmd: str | None,
                 log: Callable[[str], None]) -> None:
        self.dsn = dsn
        self.names = sorted(set(names))
        self.restart_cmd = restart_cmd
        self.log = log
        self.original: dict[str, str] = {}
        self.static: set[str] = set()
        self.restarted_with: dict[str, str] | None = None
        self.touched = False  # a configuration ran: its settings are to be set back
        self.state = state_path(dsn)
        self.copy: Path | None = None  # the study directory's copy, once written
        self.inherited: dict[str, str] = {}  # what an earlier study left changed and could not be set back

    async def check(self) -> None:
        """Every varied name is a variable of the server; which are static; their values now.
        Raises UsageError before anything runs when a static one has no --restart-cmd."""
        earlier = self._earlier()
        if earlier is not None:
            await self._recover(earlier)
        if not self.names:
            return
        conn = await connect_explained(self.dsn, self.dsn.database)
        try:
            async with conn.cursor() as cur:
                for name in self.names:
                    await cur.execute("SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_VARIABLES "
                                      "WHERE VARIABLE_NAME = %s", (name.upper(),))
                    row = await cur.fetchone()
                    if row is None:
                        raise UsageError(f"vary {name}: the server at {self.dsn.redacted()} has no such variable")
                    # an earlier study's original when it left the value changed: the value now is not the server's own
                    self.original[name] = self.inherited.get(name, str(row[0]))
                    try:
                        # setting a variable to its own value changes nothing, and tells a static
                        # one (an error) from a dynamic one; the name is one the server just listed
                        await cur.execute(f"SET GLOBAL {name} = @@GLOBAL.{name}")
                    except asyncmy.errors.MySQLError as exc:
                        if exc.args and exc.args[0] == READ_ONLY:
                            self.static.add(name)
                            continue
                        raise UsageError(f"vary {name}: cannot SET GLOBAL on {self.dsn.redacted()}: "
                                         f"{error_reason(exc)} (the user needs SUPER or "
                                         "SYSTEM_VARIABLES_ADMIN)") from None
        except asyncmy.errors.MySQLError as exc:
            raise TargetError(f"cannot reach {self.dsn.redacted()}: {error_reason(exc)}") from None
        finally:
            conn.close()
        varied_static = self.static & set(self.names)  # not one an earlier study left: that one was said
        if varied_static and not self.restart_cmd:
            names = ", ".join(sorted(varied_static))
            raise UsageError(f"vary {names}: static on {self.dsn.redacted()} (it changes only when the server "
                             "restarts), so SET GLOBAL cannot apply it.\n  give --restart-cmd 'COMMAND': bench "
                             "runs it with BENCH_SETTINGS=\"name=value ...\" in its environment before each "
                             "configuration, and it returns once the server runs with them")

    async def configure(self, conf: m.Configuration) -> None:
        """Before a configuration's run: restart the server when its static settings differ from
        those it runs with (the dynamic ones the run sets itself, with SET GLOBAL)."""
        self.touched = True
        wanted = {s.name: s.text for s in conf.settings if s.name in self.static}
        if wanted and wanted != self.restarted_with:
            await self._restart(wanted)

    def record(self, directory: Path) -> None:
        """The values the server has now (or had before an earlier study changed them), written
        down before the first configuration is set: the state file of the server's address, and a
        copy in the study's directory. A file that cannot be written is a warning."""
        self.original.update({n: v for n, v in self.inherited.items() if n not in self.original})
        if not self.original:
            return
        doc = self._document(self.original, directory)
        for path in (self.state, directory / STUDY_FILE):
            try:
                _write_private(path, doc)
            except OSError as exc:
                self.log(f"cannot write the server's settings down in {path}: {exc.strerror or exc}; a study "
                         "killed before it sets them back leaves the next one unable to")
        self.copy = directory / STUDY_FILE

    async def restore(self) -> None:
        """The values the server had before the study: SET GLOBAL, and a restart for static ones.
        What could not be set back stays written down for the next study."""
        left: dict[str, str] = {}
        dynamic = [n for n in self.original if n not in self.static and (self.touched or n in self.inherited)]
        if dynamic:
            left |= await self._set_back({n: self.original[n] for n in dynamic})
        if self.restarted_with is not None:
            wanted = {n: self.original[n] for n in self.static if n in self.original}
            try:
                await self._restart(wanted)
            except TargetError as exc:
                self.log(f"could not restore {', '.join(sorted(wanted))}: {exc}")
                left |= wanted
        else:  # a static one an earlier study left, that no restart here has set back
            left |= {n: v for n, v in self.inherited.items() if n in self.static}
        if self.original:
            self._keep(left, self.copy.parent if self.copy is not None else None)

    async def _set_back(self, values: dict[str, str], changed: dict[str, str] | None = None) -> dict[str, str]:
        """SET GLOBAL each of `values`; those that could not be set, with the reason said."""
        left: dict[str, str] = {}
        done: list[str] = []
        try:
            conn = await connect(self.dsn, self.dsn.database)
        except (asyncmy.errors.MySQLError, OSError) as exc:
            self.log(f"could not restore {', '.join(sorted(values))}: {error_reason(exc)}")
            return dict(values)
        try:
            async with conn.cursor() as cur:
                for name, value in sorted(values.items()):
                    try:
                        await cur.execute(f"SET GLOBAL {name} = %s", (_typed(value),))
                        was = (changed or {}).get(name)
                        before = f" (it was {was})" if was is not None and was != value else ""
                        done.append(f"{name}={value}{before}")
                    except asyncmy.errors.MySQLError as exc:
                        self.log(f"could not restore {name}={value}: {error_reason(exc)}")
                        left[name] = value
        finally:
            conn.close()
        if done:
            self.log("restored " + ", ".join(done))
        return left

    def _earlier(self) -> dict[str, Any] | None:
        """The state an earlier study left for this server (None: it set everything back). A study
        that still runs against it is a UsageError: two studies would take each other's values."""
        try:
            doc = json.loads(self.state.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            self.log(f"{self.state}: unreadable ({exc}): what an earlier study may have left changed is unknown")
            return None
        original = doc.get("original") if isinstance(doc, dict) else None
        if not isinstance(original, dict):
            return None
        pid = doc.get("pid")
        if (isinstance(pid, int) and pid != os.getpid() and doc.get("machine") == socket.gethostname()
                and _alive(pid)):
            raise UsageError(f"another study (process {pid}, writing {doc.get('study')}) is changing the settings "
                             f"of the server at {self.dsn.redacted()}: run one study at a time against a server")
        doc["original"] = {str(k): str(v) for k, v in original.items() if VARIABLE.match(str(k))}
        return doc

    async def _recover(self, earlier: dict[str, Any]) -> None:
        """Set back what an earlier study left changed, or say what each setting was."""
        original: dict[str, str] = earlier["original"]
        static = {n for n in earlier.get("static") or [] if n in original}
        where = f" ({earlier['study']})" if earlier.get("study") else ""
        self.log(f"an earlier study{where} ended before it set the server's settings back")
        now = await self._values(list(original))
        changed = {n: v for n, v in original.items() if now.get(n) is not None and now[n] != v}
        left = await self._set_back({n: v for n, v in changed.items() if n not in static}, now)
        statics = {n: v for n, v in changed.items() if n in static}
        if statics and self.restart_cmd:
            try:
                await self._restart(statics)
                self.restarted_with = None  # the server runs with its own settings again
                self.log("restored " + ", ".join(f"{n}={v} (it was {now[n]})" for n, v in sorted(statics.items())))
            except TargetError as exc:
                self.log(f"could not restore {', '.join(sorted(statics))}: {exc}")
                left |= statics
        else:
            left |= statics
        if left:
            self.log("an earlier study left the server changed: " + "; ".join(
                f"{n} is {now.get(n)}, it was {v} before that study" for n, v in sorted(left.items()))
                     + ("" if not set(left) - static else "; SET GLOBAL name = value puts one back")
                     + ("" if not set(left) & static else "; a static one needs --restart-cmd or a restart with it"))
        self.inherited = left
        self.static |= set(left) & static
        self._keep(left, Path(earlier["study"]) if earlier.get("study") else None)

    async def _values(self, names: list[str]) -> dict[str, str]:
        if not names:
            return {}
        conn = await connect_explained(self.dsn, self.dsn.database)
        try:
            async with conn.cursor() as cur:
                await cur.execute("SELECT VARIABLE_NAME, VARIABLE_VALUE FROM information_schema.GLOBAL_VARIABLES "
                                  "WHERE VARIABLE_NAME IN (" + ", ".join(["%s"] * len(names)) + ")",
                                  tuple(n.upper() for n in names))
                found = {str(k).lower(): str(v) for k, v in await cur.fetchall()}
        except asyncmy.errors.MySQLError as exc:
            raise TargetError(f"cannot reach {self.dsn.redacted()}: {error_reason(exc)}") from None
        finally:
            conn.close()
        return {n: found[n.lower()] for n in names if n.lower() in found}

    def _keep(self, left: dict[str, str], directory: Path | None) -> None:
        """The state file holds what is still to be set back, or goes."""
        paths = [self.state] + ([self.copy] if self.copy is not None else [])
        for path in paths:
            try:
                if left:
                    _write_private(path, self._document(left, directory))
                else:
                    path.unlink(missing_ok=True)
            except OSError as exc:
                self.log(f"{path}: {exc.strerror or exc}")

    def _document(self, original: dict[str, str], directory: Path | None) -> dict[str, Any]:
        return {"format": STATE_FORMAT, "server": server_key(self.dsn), "study": str(directory) if directory else None,
                "pid": os.getpid(), "machine": socket.gethostname(),
                "written_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
                "original": dict(sorted(original.items())), "static": sorted(self.static & set(original))}

    async def _restart(self, settings: dict[str, str]) -> None:
        assert self.restart_cmd is not None
        text = " ".join(f"{k}={v}" for k, v in sorted(settings.items()))
        self.log(f"restarting the server with {text} (--restart-cmd)")
        env = dict(os.environ, BENCH_SETTINGS=text, **{f"BENCH_SETTING_{k.upper()}": v for k, v in settings.items()})
        proc = await asyncio.to_thread(subprocess.run, ["/bin/sh", "-c", self.restart_cmd], env=env,
                                       stdin=subprocess.DEVNULL, capture_output=True, text=True)
        if proc.returncode != 0:
            tail = redact((proc.stderr or proc.stdout).strip()[-400:])
            raise TargetError(f"--restart-cmd exited {proc.returncode}" + (f": {tail}" if tail else ""))
        deadline = time.monotonic() + RESTART_WAIT
        while True:
            try:
                conn = await connect(self.dsn, self.dsn.database)
                conn.close()
                break
            except (asyncmy.errors.MySQLError, OSError) as exc:
                if time.monotonic() > deadline:
                    raise TargetError(f"the server did not come back within {RESTART_WAIT:.0f}s after "
                                      f"--restart-cmd: {error_reason(exc)}") from None
                await asyncio.sleep(0.5)
        self.restarted_with = settings


def _typed(value: str) -> int | float | str:
    """A variable's value as information_schema shows it, back in the type SET GLOBAL wants."""
    for kind in (int, float):
        try:
            return kind(value)
        except ValueError:
            pass
    return value


def server_key(dsn: Dsn) -> str:
    """A server's address without who connects: host:port, or its socket."""
    return f"socket:{dsn.socket}" if dsn.socket else f"{dsn.host}:{dsn.port}"


def state_path(dsn: Dsn) -> Path:
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    key = server_key(dsn)
    readable = re.sub(r"[^A-Za-z0-9._-]+", "-", key).strip("-.")[:60]
    return Path(base) / "bench-dsl" / "servers" / f"{readable}-{hashlib.sha256(key.encode()).hexdigest()[:12]}.json"


def _write_private(path: Path, doc: dict[str, Any]) -> None:
    """Written whole (a temporary file renamed over it), readable by this user only."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(json.dumps(doc, indent=1) + "\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
