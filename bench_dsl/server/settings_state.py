"""The state file of a study's server settings: where what a study changes on a server is written
down (under the server's identity, not the address that reached it), the claim a study holds on the
server while it runs (a lock, so that no second study by any address changes it too), and the trust
a file must earn before what it says is set on a server: the directories and the file this user's
alone, writable by no one else, no link followed, new files made O_EXCL (issue 38)."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import os
import pwd
import re
import secrets
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench_dsl.core.dsn import Dsn, ServerIdentity
from bench_dsl.core.errors import UsageError

STATE_FORMAT = "bench-dsl-server-settings"
VARIABLE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")  # a state file's names go into SET GLOBAL: names only


class UntrustedState(UsageError):
    """A state directory or file another user could have written: what it says is not set on a server."""

    def __init__(self, path: Path, why: str) -> None:
        super().__init__(
            f"{path}: {why}. bench-dsl reads the settings an earlier study left to set back only from where no other "
            "user could have written them (a planted file would set the server to values someone else chose), so "
            "this study stops: nothing was changed on the server.\n  hint: if that place is yours, make it yours "
            f"alone (chown {_name(os.geteuid())}; chmod 700 for a directory, 600 for a file; a link or a file you did "
            "not write: read it, then remove it), or give XDG_STATE_HOME a directory of your own")


class Claim:
    """One study's hold on one server, through a lock on a file next to the server's state file:
    held from the check to the end of the study, and let go by the system when the process dies,
    however it dies. The directory is opened once and every file in it relative to it, never
    through a link."""

    def __init__(self, identity: ServerIdentity, address: str, directory: int, path: Path, lock: int) -> None:
        self.identity = identity
        self.directory = directory
        self.path = path  # the state file, as it is shown
        self.name = path.name
        self.lock = lock
        self.addresses = [address]  # the addresses that reached this server, shown to a person

    @classmethod
    def take(cls, identity: ServerIdentity, address: str, study: Path | None = None) -> Claim:
        """The server claimed for this study, or a UsageError naming the study that holds it."""
        directory, where = _state_directory()
        name = state_name(identity)
        lock_name = name.removesuffix(".json") + ".lock"
        try:
            try:
                lock = os.open(lock_name, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                               0o600, dir_fd=directory)
            except OSError as exc:
                if exc.errno == errno.ELOOP:
                    raise UntrustedState(where / lock_name, "a symbolic link") from None
                raise UsageError(f"cannot claim the server in {where / lock_name}: {exc.strerror}") from None
            try:
                _trusted(os.fstat(lock), where / lock_name, file=True)
                try:
                    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    raise UsageError(f"another study ({_holder(lock)}) is changing the settings of the server "
                                     f"{identity}, here reached as {address}: run one study at a time against a "
                                     "server") from None
                holder = {"pid": os.getpid(), "address": address, "study": str(study) if study else None}
                with contextlib.suppress(OSError):  # a full disk: the claim holds, a second study names no one
                    os.ftruncate(lock, 0)
                    os.pwrite(lock, (json.dumps(holder) + "\n").encode(), 0)
            except BaseException:
                os.close(lock)
                raise
        except BaseException:
            os.close(directory)
            raise
        return cls(identity, address, directory, where / name, lock)

    def read(self, log: Callable[[str], None]) -> dict[str, Any] | None:
        """What an earlier study left to set back on this server (None: nothing). Raises
        UntrustedState for a file another user could have written."""
        try:
            fd = os.open(self.name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=self.directory)
        except FileNotFoundError:
            return None
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise UntrustedState(self.path, "a symbolic link") from None
            log(f"{self.path}: unreadable ({exc.strerror}): what an earlier study may have left changed is unknown")
            return None
        try:
            _trusted(os.fstat(fd), self.path, file=True)
            with os.fdopen(fd, "rb", closefd=False) as f:
                raw = f.read(1 << 20)
        finally:
            os.close(fd)
        try:
            doc = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            log(f"{self.path}: unreadable ({exc}): what an earlier study may have left changed is unknown")
            return None
        if not isinstance(doc, dict) or doc.get("format") != STATE_FORMAT:
            log(f"{self.path}: not a file of bench-dsl's (no format {STATE_FORMAT!r}): not read, and replaced")
            return None
        if doc.get("server") != identity_json(self.identity):
            log(f"{self.path}: written for another server ({doc.get('server')}): not read, and replaced")
            return None
        original = doc.get("original")
        if not isinstance(original, dict):
            return None
        addresses = doc.get("addresses")
        if isinstance(addresses, list):
            self.addresses = list(dict.fromkeys([*(str(a) for a in addresses), *self.addresses]))
        doc["original"] = {str(k): str(v) for k, v in original.items() if VARIABLE.match(str(k))}
        if doc.get("study") is not None:
            doc["study"] = str(doc["study"])
        return doc

    def write(self, doc: dict[str, Any]) -> None:
        """Written whole: a new temporary file (never one that was there) renamed over it."""
        fd, tmp = _new_file(f".{self.name}", self.directory)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(json.dumps(doc, indent=1) + "\n")
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.name, src_dir_fd=self.directory, dst_dir_fd=self.directory)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=self.directory)
            raise

    def remove(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.name, dir_fd=self.directory)

    def release(self) -> None:
        # the lock file stays: removing it while another study opens it would let two hold it
        with contextlib.suppress(OSError):
            os.ftruncate(self.lock, 0)
        os.close(self.lock)
        os.close(self.directory)


def _holder(lock: int) -> str:
    """The study holding a lock, as it wrote itself down in the lock file."""
    try:
        holder = json.loads(os.pread(lock, 4096, 0).decode("utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        holder = None
    if not isinstance(holder, dict):  # it has the lock and is still writing who it is
        return "a process of this machine"
    text = f"process {holder.get('pid')}, through {holder.get('address')}"
    return text + (f", writing {holder['study']}" if holder.get("study") else "")


def typed(value: str) -> int | float | str:
    """A variable's value as information_schema shows it, back in the type SET GLOBAL wants."""
    for kind in (int, float):
        try:
            return kind(value)
        except ValueError:
            pass
    return value


def server_key(dsn: Dsn) -> str:
    """A server's address without who connects: host:port, or its socket. Shown to a person: a
    server's state is filed under its identity, whatever address reached it."""
    return f"socket:{dsn.socket}" if dsn.socket else f"{dsn.host}:{dsn.port}"


def state_name(identity: ServerIdentity) -> str:
    readable = re.sub(r"[^A-Za-z0-9._-]+", "-", f"{identity.hostname}-{identity.port}").strip("-.")[:60]
    return f"{readable}-{hashlib.sha256(identity.text().encode()).hexdigest()[:12]}.json"


def state_base() -> Path:
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return absolute(Path(base))


def state_path(identity: ServerIdentity) -> Path:
    """Where what a study changes on this server is written down."""
    return state_base() / "bench-dsl" / "servers" / state_name(identity)


def _state_directory() -> tuple[int, Path]:
    """bench-dsl/servers/ under the state base, opened: made 0700 (its missing parents too), and
    checked to be this user's alone. Raises UntrustedState when it is not."""
    base = state_base()
    try:
        missing = [p for p in (base, *base.parents) if not os.path.lexists(p)]
        for p in reversed(missing):
            with contextlib.suppress(FileExistsError):
                os.mkdir(p, 0o700)
        chain = [(p, os.stat(p)) for p in (base, *base.parents)]
    except OSError as exc:
        raise UsageError(f"cannot keep a server's settings under {base}: {exc.strerror or exc} (a study writes "
                         "them down before it changes them)\n  hint: give XDG_STATE_HOME a directory of your own") \
            from None
    for p, st in chain:
        # a directory others may write in and not sticky: they could put another in place of ours
        if st.st_mode & stat.S_IWOTH and not st.st_mode & stat.S_ISVTX:
            raise UntrustedState(p, f"writable by every user (mode {stat.S_IMODE(st.st_mode):o})")
        if st.st_uid not in (os.geteuid(), 0):
            raise UntrustedState(p, f"owned by {_user(st.st_uid)}, not by {_user(os.geteuid())} or root")
    fd = os.open(base, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    where = base
    try:
        for part in ("bench-dsl", "servers"):
            where = where / part
            with contextlib.suppress(FileExistsError):
                os.mkdir(part, 0o700, dir_fd=fd)
            try:
                sub = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise UntrustedState(where, "a symbolic link" if os.path.islink(where) else "not a directory") \
                        from None
                raise UsageError(f"cannot keep a server's settings in {where}: {exc.strerror}") from None
            os.close(fd)
            fd = sub
            st = os.fstat(fd)
            _trusted(st, where, file=False)
            if stat.S_IMODE(st.st_mode) != 0o700:  # ours: an earlier version left it readable by others
                os.fchmod(fd, 0o700)
    except BaseException:
        os.close(fd)
        raise
    return fd, where


def _trusted(st: os.stat_result, path: Path, file: bool) -> None:
    if file and not stat.S_ISREG(st.st_mode):
        raise UntrustedState(path, "not a regular file")
    if st.st_uid != os.geteuid():
        raise UntrustedState(path, f"owned by {_user(st.st_uid)}, not by {_user(os.geteuid())}")
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise UntrustedState(path, f"writable by other users (mode {stat.S_IMODE(st.st_mode):o})")


def _user(uid: int) -> str:
    name = _name(uid)
    return f"{name} (uid {uid})" if name != str(uid) else f"uid {uid}"


def _name(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def identity_json(identity: ServerIdentity) -> dict[str, Any]:
    return {"hostname": identity.hostname, "port": identity.port, "datadir": identity.datadir}


def absolute(path: Path) -> Path:
    """A path as it reads from anywhere: the study's directory is named to a later study, run elsewhere."""
    return Path(os.path.abspath(path))


def write_private(path: Path, doc: dict[str, Any]) -> None:
    """Written whole (a new temporary file renamed over it), readable by this user only."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd, name = _new_file(str(path.with_name(f".{path.name}")), None)
    tmp = Path(name)
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


def _new_file(prefix: str, dir_fd: int | None) -> tuple[int, str]:
    """A temporary file made here and now (O_EXCL): never one that was already there, which another
    user may have put in a directory they can write (a study's directory may be one), and which
    would then be renamed into place still theirs. A name taken is passed over for another."""
    for _ in range(16):
        name = f"{prefix}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
        try:
            return os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600,
                           dir_fd=dir_fd), name
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no free name for a temporary file", prefix)
