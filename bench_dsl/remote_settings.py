"""A study's server settings on a server of your own: checked before anything runs (a static one
cannot change under SET GLOBAL), set for each configuration, and restored when the study ends.

A throwaway server needs none of this: each configuration gets a fresh one started with its
settings. A static setting of a remote server changes only when the server restarts, so it needs
`--restart-cmd`: a command bench-dsl runs with the configuration's settings in its environment
(BENCH_SETTINGS="name=value ...", and BENCH_SETTING_<NAME>=value each) and that returns once the
server is restarted with them."""

from __future__ import annotations

import asyncio
import os
import subprocess
import time
from collections.abc import Callable, Iterable

import asyncmy

from bench_dsl import model as m
from bench_dsl.dsn import Dsn, redact
from bench_dsl.errors import TargetError, UsageError
from bench_dsl.server import connect, connect_explained, error_reason

READ_ONLY = 1238  # ER_INCORRECT_GLOBAL_LOCAL_VAR: "Variable '%s' is a read only variable"
RESTART_WAIT = 300.0  # seconds a restarted server may take to accept connections again


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

    async def check(self) -> None:
        """Every varied name is a variable of the server; which are static; their values now.
        Raises UsageError before anything runs when a static one has no --restart-cmd."""
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
                    self.original[name] = str(row[0])
                    try:
                        # setting a variable to its own value changes nothing, and tells a static
                        # one (an error) from a dynamic one; the name is one the server just listed
                        await cur.execute(f"SET GLOBAL {name} = @@GLOBAL.{name}")
                    except asyncmy.errors.MySQLError as exc:
                        if exc.args and exc.args[0] == READ_ONLY:
                            self.static.add(name)
                            continue
                        raise UsageError(f"vary {name}: cannot SET GLOBAL on {self.dsn.redacted()}: "
                                         f"{error_reason(exc)} (the user needs SUPER or SYSTEM_VARIABLES_ADMIN)") from None
        except asyncmy.errors.MySQLError as exc:
            raise TargetError(f"cannot reach {self.dsn.redacted()}: {error_reason(exc)}") from None
        finally:
            conn.close()
        if self.static and not self.restart_cmd:
            names = ", ".join(sorted(self.static))
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

    async def restore(self) -> None:
        """The values the server had before the study: SET GLOBAL, and a restart for static ones."""
        dynamic = [n for n in self.names if n not in self.static]
        if dynamic and self.touched:
            try:
                conn = await connect(self.dsn, self.dsn.database)
                try:
                    async with conn.cursor() as cur:
                        for name in dynamic:
                            await cur.execute(f"SET GLOBAL {name} = %s", (_typed(self.original[name]),))
                finally:
                    conn.close()
                self.log("restored " + ", ".join(f"{n}={self.original[n]}" for n in dynamic))
            except asyncmy.errors.MySQLError as exc:
                self.log(f"could not restore {', '.join(dynamic)}: {error_reason(exc)}")
        if self.restarted_with is not None:
            await self._restart({n: self.original[n] for n in self.static})

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
