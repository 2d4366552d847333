"""The throwaway server's initialised data directory, made once and copied at each start.

`mariadb-install-db` costs about a second of CPU, and the suite and every study configuration start
many servers. Its result depends only on the binaries and the command, so it is kept, per user, in
$XDG_CACHE_HOME/bench-dsl/server-templates/<key>/ (or ~/.cache/...), and each server gets a copy.

- The key hashes the identity (path, size, mtime, inode) of the server, the installer and the
  files it reads, and the install command with its paths left out: another binary or version,
  or another command, is another template; one is never used with a server it was not made by.
- The user's cache rather than the temp dir: private by construction (core/cache.py's checks
  apply: the user's, mode 0700, no link), kept across reboots (one install per server version),
  and not a predictable name in a shared directory another user could take first.
- A template is built in a private directory beside the others and renamed into place whole, so
  a start sees one complete or none. A lock per key makes a second first start (the suite's four
  processes start together) wait for the first's build rather than build its own.
- Every file's size and CRC are written down at the build and checked at each copy: a template
  changed, cut short or half removed is discarded and built again. When the cache cannot be used
  (not private, read-only, full), the server is installed in its own directory as without one.
- It holds what the installer made and nothing else: accounts without passwords, no secret. The
  template itself is never started; each server sets its own random root password on its copy.
- It is installed with a small redo log: the copy is then ~20 MB, not ~110, and the server
  makes its log at its first start, at the size its own settings give (innodb_log_file_size, the
  run's or the default), as it resized an installed one before; the log is then the server's
  own preallocation, as a fresh install's is, not a copy of zeros.
- The same for the other files: the build notes the ranges the installer wrote (SEEK_DATA), and a
  copy preallocates each file and writes those ranges only (7 of the 22 MB): InnoDB's tablespace
  is left unwritten where a fresh install leaves it (its doublewrite area), so that the first
  writes there cost the file system what they would have cost.

Templates unused for a month are removed when a new one is built."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import os
import shutil
import tempfile
import time
import zlib
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from bench_dsl.core.cache import cache_dir, private

FORMAT = 2  # what a template holds and how: a change here makes every older one unused
MANIFEST = "manifest.json"
UNUSED_DAYS = 30
ABANDONED_BUILD_S = 24 * 3600  # a build directory older than this was left by a killed start


def template_key(files: Sequence[str], command: Sequence[str]) -> str:
    """What the installed directory depends on: each file's identity (a missing one counts as such)
    and the command, its per-start paths replaced by placeholders by the caller."""
    ids: list[object] = []
    for f in files:
        try:
            st = os.stat(f)
            ids.append([os.path.realpath(f), st.st_size, st.st_mtime_ns, st.st_ino, st.st_dev])
        except OSError:
            ids.append([f, None])
    doc = json.dumps({"format": FORMAT, "files": ids, "command": list(command), "euid": os.geteuid()})
    return hashlib.sha256(doc.encode()).hexdigest()[:32]


def templates_root() -> Path | None:
    """The private directory the templates are in (made if need be); None when it cannot be used."""
    try:
        top = cache_dir()
        top.mkdir(mode=0o700, parents=True, exist_ok=True)
        root = top / "server-templates"
        root.mkdir(mode=0o700, exist_ok=True)
        return root if private(top) and private(root) else None
    except (OSError, RuntimeError):  # RuntimeError: no home directory to find
        return None


def make_data_dir(dest: Path, key: str, install: Callable[[Path, Path], None]) -> str:
    """Makes `dest` (absent, its parent private) an initialised data directory: a copy of the
    template for `key`, built first when there is none (or a bad one). `install(datadir, tmpdir)`
    runs the installer. Returns how: "template", "new template" or "install" (no cache)."""
    root = templates_root()
    if root is None:
        install(dest, dest.parent)
        return "install"
    tpl = root / key
    if _copy(tpl, dest):
        return "template"
    try:
        with _locked(root / f"{key}.lock"):
            if _copy(tpl, dest):  # another start built it while this one waited
                return "template"
            _discard(tpl)
            _build(root, tpl, install)
            _prune(root, key)
    except Exception:  # the cache's disk full, or the installer failing there: as without a cache
        pass  # (an install in the server's own directory says what is wrong, if something is)
    if _copy(tpl, dest):
        return "new template"
    install(dest, dest.parent)
    return "install"


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # released by the kernel if this process dies holding it
        yield
    finally:
        os.close(fd)


def _build(root: Path, tpl: Path, install: Callable[[Path, Path], None]) -> None:
    build = Path(tempfile.mkdtemp(prefix=".build-", dir=root))  # mode 0700
    try:
        data = build / "data"
        # its bootstrap's temporary files in the build's own directory, never the shared temp dir
        install(data, build)
        files: dict[str, list[object]] = {}
        dirs = []
        for path in sorted(data.rglob("*")):
            if path.is_dir() and not path.is_symlink():
                dirs.append(str(path.relative_to(data)))
            elif path.is_file() and not path.is_symlink():
                written = _written(path)  # before the read below puts the file's zeros in the page cache
                body = path.read_bytes()
                files[str(path.relative_to(data))] = [len(body), zlib.crc32(body), written]
        (build / MANIFEST).write_text(json.dumps({"format": FORMAT, "key": tpl.name, "dirs": dirs, "files": files}))
        os.rename(build, tpl)  # whole or not at all; the lock keeps a second build from racing it
    finally:
        shutil.rmtree(build, ignore_errors=True)


def _copy(tpl: Path, dest: Path) -> bool:
    """Copies the template's data directory to `dest` (absent); False, and nothing made, when there
    is no usable template. An error writing `dest` (its disk full) is raised, `dest` removed."""
    read = _read(tpl)
    if read is None:
        return False
    dirs, files = read
    try:
        dest.mkdir(mode=0o700)
        for rel, mode in dirs:
            (dest / rel).mkdir(mode=0o700)
            os.chmod(dest / rel, mode)  # the installer's, whatever this process's umask
        for rel, mode, body, written in files:
            fd = os.open(dest / rel, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
            try:
                os.fchmod(fd, mode)
                _write(fd, body, written)
            finally:
                os.close(fd)
    except BaseException:
        shutil.rmtree(dest, ignore_errors=True)
        raise
    with contextlib.suppress(OSError):
        os.utime(tpl)  # in use: not pruned
    return True


Files = list[tuple[str, int, bytes, list[list[int]]]]


def _read(tpl: Path) -> tuple[list[tuple[str, int]], Files] | None:
    """The template's directories and files (path, mode, content, written ranges), each checked
    against its manifest; None when it is missing, not private, or not what was installed."""
    try:
        if not private(tpl):
            return None
        manifest = json.loads((tpl / MANIFEST).read_text())
        expected: dict[str, list[Any]] = manifest["files"]
        if manifest.get("format") != FORMAT or manifest.get("key") != tpl.name or not expected:
            return None
        src = tpl / "data"
        dirs: list[tuple[str, int]] = []
        files: Files = []

        def fail(exc: OSError) -> None:
            raise exc

        for d, subdirs, names in os.walk(src, onerror=fail):
            rel = Path(d).relative_to(src)
            dirs += [(str(rel / n), os.lstat(Path(d) / n).st_mode & 0o777) for n in sorted(subdirs)]
            for name in names:
                key = str(rel / name)
                body = (Path(d) / name).read_bytes()
                size, crc, written = expected[key]
                if [len(body), zlib.crc32(body)] != [size, crc]:
                    return None
                if any(not 0 <= start < end <= size for start, end in written):
                    return None
                files.append((key, os.lstat(Path(d) / name).st_mode & 0o777, body, written))
        if {f[0] for f in files} != set(expected) or {d[0] for d in dirs} != set(manifest["dirs"]):
            return None
        return dirs, files
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def _written(path: Path) -> list[list[int]]:
    """The byte ranges of `path` the installer wrote, as [start, end): the rest it preallocated and
    left unwritten (InnoDB's tablespace and log), which a copy leaves so too, as a fresh install
    would (the first write there costs the file system more than a rewrite). Where the file system
    cannot tell (no SEEK_DATA), the whole file."""
    size = path.stat().st_size
    ranges: list[list[int]] = []
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        at = 0
        while at < size:
            try:
                start = os.lseek(fd, at, os.SEEK_DATA)
            except OSError as exc:
                if exc.errno == errno.ENXIO:  # no data past `at`
                    break
                return [[0, size]]
            at = os.lseek(fd, start, os.SEEK_HOLE)
            ranges.append([start, at])
    finally:
        os.close(fd)
    return ranges


def _write(fd: int, body: bytes, written: list[list[int]]) -> None:
    """The file's full size preallocated, and the ranges the installer wrote written."""
    if body:
        try:
            os.posix_fallocate(fd, 0, len(body))
        except OSError as exc:
            if exc.errno not in (errno.EOPNOTSUPP, errno.EINVAL):
                raise  # the disk full
            written = [[0, len(body)]]  # a file system without it: the zeros written too
    view = memoryview(body)
    for start, end in written:
        while start < end:
            start += os.pwrite(fd, view[start:end], start)


def _discard(tpl: Path) -> None:
    """Removes a bad template: renamed away first, so that no start copies it half removed."""
    if not tpl.exists() and not tpl.is_symlink():
        return
    gone = tpl.with_name(f".discarded-{tpl.name}-{os.getpid()}")
    os.rename(tpl, gone)
    if gone.is_symlink() or not gone.is_dir():
        gone.unlink()
    else:
        shutil.rmtree(gone, ignore_errors=True)


def _prune(root: Path, keep: str) -> None:
    now = time.time()
    for p in root.iterdir():
        try:
            age = now - p.lstat().st_mtime
            if p.name.startswith(".") and p.is_dir() and age > ABANDONED_BUILD_S:
                shutil.rmtree(p, ignore_errors=True)
            elif not p.name.startswith(".") and p.name.split(".")[0] != keep and age > UNUSED_DAYS * 86400:
                if p.is_dir() and not p.is_symlink():
                    shutil.rmtree(p, ignore_errors=True)
                else:
                    p.unlink()
        except OSError:
            continue
