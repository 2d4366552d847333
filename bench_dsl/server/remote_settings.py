"""A study's server settings on a server of your own: checked before anything runs (a static one
cannot change under SET GLOBAL), set for each configuration, and restored when the study ends.

A throwaway server needs none of this: each configuration gets a fresh server started with its
settings. A static setting of a remote server changes only when the server restarts, so it needs
`--restart-cmd`: a command bench-dsl runs with the configuration's settings in its environment
(BENCH_SETTINGS="name=value ...", and BENCH_SETTING_<NAME>=value each) and that returns once the
server is restarted with them.

Every setting a study changes (the varied ones and its fixed `server { }` ones) is written down
before the first configuration is set: in the study's directory and in a state file per server
(no user, no password) under $XDG_STATE_HOME (~/.local/state)/bench-dsl/servers/, removed once they
are set back. The file is filed under the server's identity (its host name, port and data directory
as the server reports them), not under the address that reached it: TCP and the socket lead to one
file. A study claims the server with a lock on that file's neighbour for as long as it runs, so a
second study against the same server, by any address, is refused. A study killed before it set
them back (SIGKILL, a power cut) leaves the state file: the next study against the server sets them
back first, or says which settings an earlier study left changed and what each one was.

What a state file says is set on the server: it is read only from a place no other user could have
written (the directories and the file owned by this user, writable by no one else, no link
followed), and a study stops, changing nothing, when it is not."""

from __future__ import annotations

import asyncio
import datetime as dt
import hashlib
import os
import re
import socket
import subprocess
import time
from collections.abc import Callable, Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any

import asyncmy

from bench_dsl.core.dsn import Dsn, quote_identifier, redact
from bench_dsl.core.errors import TargetError, UsageError, error_reason
from bench_dsl.language import model as m
from bench_dsl.server.connect import connect, connect_explained, identify
from bench_dsl.server.settings_state import (
    STATE_FORMAT,
    Claim,
    absolute,
    identity_json,
    server_key,
    typed,
    write_private,
)

READ_ONLY = 1238  # ER_INCORRECT_GLOBAL_LOCAL_VAR: "Variable '%s' is a read only variable"
RESTART_WAIT = 300.0  # seconds a restarted server may take to accept connections again
STUDY_FILE = "server-settings.json"  # the copy in the study's directory


class RemoteSettings:
    def __init__(self, dsn: Dsn, names: Iterable[str], restart_cmd: str | None,
                 log: Callable[[str], None], fixed: Iterable[str] = (), study: Path | None = None) -> None:
        self.dsn = dsn
        self.varied = set(names)
        # the study's `server { }` settings: each configuration's run sets them too, so they are
        # written down and set back as the varied ones are
        self.names = sorted(self.varied | set(fixed))
        self.restart_cmd = restart_cmd
        self.log = log
        self.study = absolute(study) if study is not None else None
        self.original: dict[str, str] = {}
        self.static: set[str] = set()
        self.restarted_with: dict[str, str] | None = None
        self.touched = False  # a configuration ran: its settings are to be set back
        self.claim: Claim | None = None  # this study's hold on the server, from check() to release()
        self.copy: Path | None = None  # the study directory's copy, once written
        self.inherited: dict[str, str] = {}  # what an earlier study left changed and could not be set back

    @property
    def state(self) -> Path:
        assert self.claim is not None
        return self.claim.path

    async def check(self) -> None:
        """Which server the address reaches, claimed for this study; what an earlier study left
        changed on it, set back; every name a variable of the server; which are static; their
        values now. Raises UsageError before anything runs when another study holds the server,
        when its state file is not to be trusted, or when a varied static one has no --restart-cmd.
        From here on, every connection of the study must reach that same server."""
        conn = await connect_explained(self.dsn, self.dsn.database)
        try:
            async with conn.cursor() as cur:
                identity = await identify(cur)
        except asyncmy.errors.MySQLError as exc:
            raise TargetError(f"cannot reach {self.dsn.redacted()}: {error_reason(exc)}") from None
        finally:
            conn.close()
        self.dsn = replace(self.dsn, reaches=identity)
        self.claim = Claim.take(identity, server_key(self.dsn), self.study)
        try:
            self._legacy()
            earlier = self.claim.read(self.log)
            if earlier is not None:
                await self._recover(earlier)
            await self._check_names()
        except BaseException:
            self.release()
            raise

    def _legacy(self) -> None:
        """A file an earlier version of bench-dsl filed under this address's text: it does not say
        which server it was written for (another one may have listened here since), so it is never
        applied; it is named, for a person to read."""
        key = server_key(self.dsn)
        readable = re.sub(r"[^A-Za-z0-9._-]+", "-", key).strip("-.")[:60]
        old = self.state.parent / f"{readable}-{hashlib.sha256(key.encode()).hexdigest()[:12]}.json"
        if os.path.lexists(old):
            self.log(f"{old}: written by an earlier version of bench-dsl for the address {key}, it does not say "
                     "which server it was for, so it is not applied: read it, set back by hand what it names if "
                     "this is that server, then remove it")

    def release(self) -> None:
        """The server is free for another study (the state file, if any, stays)."""
        if self.claim is not None:
            self.claim.release()
            self.claim = None

    async def _check_names(self) -> None:
        if not self.names:
            return
        values, static, refused = await self._probe(self.names)
        for name in self.names:
            what = f"vary {name}" if name in self.varied else f"server {{ {name} }}"
            if name not in values:
                if name in self.varied:
                    raise UsageError(f"vary {name}: the server at {self.dsn.redacted()} has no such variable")
                continue  # the run says it was not applied: this study changes nothing there
            if name in refused:
                raise UsageError(f"{what}: cannot SET GLOBAL on {self.dsn.redacted()}: {refused[name]} "
                                 "(the user needs SUPER or SYSTEM_VARIABLES_ADMIN)")
            # an earlier study's original when it left the value changed: the value now is not the server's own
            self.original[name] = self.inherited.get(name, values[name])
        self.static |= static
        varied_static = self.static & self.varied  # a fixed one is not applied, and said so by the run
        if varied_static and not self.restart_cmd:
            names = ", ".join(sorted(varied_static))
            raise UsageError(f"vary {names}: static on {self.dsn.redacted()} (it changes only when the server "
                             "restarts), so SET GLOBAL cannot apply it.\n  give --restart-cmd 'COMMAND': bench "
                             "runs it with BENCH_SETTINGS=\"name=value ...\" in its environment before each "
                             "configuration, and it returns once the server runs with them")

    async def _probe(self, names: list[str]) -> tuple[dict[str, str], set[str], dict[str, str]]:
        """Each name's value on the server, those it says are static, and those this user may not
        set (with the server's reason). Names the server does not have are left out."""
        values: dict[str, str] = {}
        static: set[str] = set()
        refused: dict[str, str] = {}
        conn = await connect_explained(self.dsn, self.dsn.database)
        try:
            async with conn.cursor() as cur:
                for name in names:
                    await cur.execute("SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_VARIABLES "
                                      "WHERE VARIABLE_NAME = %s", (name.upper(),))
                    row = await cur.fetchone()
                    if row is None:
                        continue
                    values[name] = str(row[0])
                    try:
                        # setting a variable to its own value changes nothing, and tells a static
                        # one (an error) from a dynamic one: the server says which, not a file
                        await cur.execute(f"SET GLOBAL {quote_identifier(name)} = @@GLOBAL.{quote_identifier(name)}")
                    except asyncmy.errors.MySQLError as exc:
                        if exc.args and exc.args[0] == READ_ONLY:
                            static.add(name)
                        else:
                            refused[name] = error_reason(exc)
        except asyncmy.errors.MySQLError as exc:
            raise TargetError(f"cannot reach {self.dsn.redacted()}: {error_reason(exc)}") from None
        finally:
            conn.close()
        return values, static, refused

    async def configure(self, conf: m.Configuration) -> None:
        """Before a configuration's run: restart the server when its static settings differ from
        those it runs with (the dynamic ones the run sets itself, with SET GLOBAL)."""
        self.touched = True
        wanted = {s.name: s.text for s in conf.settings if s.name in self.static}
        if wanted and wanted != self.restarted_with:
            await self._restart(wanted)

    def record(self, directory: Path) -> None:
        """The values the server has now (or had before an earlier study changed them), written
        down before the first configuration is set: the server's state file, and a copy in the
        study's directory. A file that cannot be written is a warning."""
        directory = absolute(directory)
        self.original.update({n: v for n, v in self.inherited.items() if n not in self.original})
        if not self.original:
            return
        doc = self._document(self.original, directory)
        assert self.claim is not None
        try:
            self.claim.write(doc)
        except OSError as exc:
            self.log(f"cannot write the server's settings down in {self.state}: {exc.strerror or exc}; a study "
                     "killed before it sets them back leaves the next one unable to")
        try:
            write_private(directory / STUDY_FILE, doc)
        except OSError as exc:
            self.log(f"cannot write the server's settings down in {directory / STUDY_FILE}: {exc.strerror or exc}")
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
            if left:
                self.log(f"{', '.join(sorted(left))}: still written down in {self.state}; every study against this "
                         "server tries to set them back until one can, or until that file is removed")

    async def _set_back(self, values: dict[str, str], changed: dict[str, str] | None = None) -> dict[str, str]:
        """SET GLOBAL each of `values`; those that could not be set, with the reason said."""
        left: dict[str, str] = {}
        done: list[str] = []
        try:
            conn = await connect(self.dsn, self.dsn.database)
        except (asyncmy.errors.MySQLError, OSError, TargetError) as exc:
            self.log(f"could not restore {', '.join(sorted(values))}: {error_reason(exc)}")
            return dict(values)
        try:
            async with conn.cursor() as cur:
                for name, value in sorted(values.items()):
                    try:
                        await cur.execute(f"SET GLOBAL {quote_identifier(name)} = %s", (typed(value),))
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

    async def _recover(self, earlier: dict[str, Any]) -> None:
        """Set back what an earlier study left changed, or say what each setting was."""
        original: dict[str, str] = earlier["original"]
        where = f" ({earlier['study']})" if earlier.get("study") else ""
        addresses = earlier.get("addresses")
        through = (f"; it reached the server through {', '.join(str(a) for a in addresses)}"
                   if isinstance(addresses, list) and addresses else "")
        self.log(f"an earlier study{where} ended before it set the server's settings back ({self.state}{through})")
        # the file's own list of static names is not asked: a forged one would block every study
        now, static, _ = await self._probe(list(original))
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
                     + ("" if not set(left) & static else "; a static one needs --restart-cmd or a restart with it")
                     + f" (written down in {self.state})")
        self.inherited = left
        self.static |= set(left) & static
        self._keep(left, Path(earlier["study"]) if earlier.get("study") else None)

    def _keep(self, left: dict[str, str], directory: Path | None) -> None:
        """The state file holds what is still to be set back, or goes."""
        assert self.claim is not None
        try:
            if left:
                self.claim.write(self._document(left, directory))
            else:
                self.claim.remove()
        except OSError as exc:
            self.log(f"{self.state}: {exc.strerror or exc}")
        if self.copy is not None:
            try:
                if left:
                    write_private(self.copy, self._document(left, directory))
                else:
                    self.copy.unlink(missing_ok=True)
            except OSError as exc:
                self.log(f"{self.copy}: {exc.strerror or exc}")

    def _document(self, original: dict[str, str], directory: Path | None) -> dict[str, Any]:
        assert self.claim is not None
        return {"format": STATE_FORMAT, "server": identity_json(self.claim.identity),
                "addresses": self.claim.addresses, "study": str(directory) if directory else None,
                "pid": os.getpid(), "machine": socket.gethostname(),
                "written_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
                "original": dict(sorted(original.items())),
                # what the server said when it was written, for a person reading the file: never read back
                "static": sorted(self.static & set(original))}

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
            except TargetError:  # another server answers at the address: waiting will not make it ours
                raise
            except (asyncmy.errors.MySQLError, OSError) as exc:
                if time.monotonic() > deadline:
                    raise TargetError(f"the server did not come back within {RESTART_WAIT:.0f}s after "
                                      f"--restart-cmd: {error_reason(exc)}") from None
                await asyncio.sleep(0.5)
        self.restarted_with = settings
