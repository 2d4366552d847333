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
  run's or the default), as it resizes an installed one today; the log is then the server's own
  preallocation, as a fresh install's is, not a copy of zeros.

Templates unused for a month are removed when a new one is built."""

from __future__ import annotations

import contextlib
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

from bench_dsl.core.cache import cache_dir, private

FORMAT = 1  # what a template holds and how: a change here makes every older one unused
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
    except OSError:  # the cache's disk full or unwritable: as without a cache
        pass
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
        files: dict[str, list[int]] = {}
        dirs = []
        for path in sorted(data.rglob("*")):
            if path.is_dir() and not path.is_symlink():
                dirs.append(str(path.relative_to(data)))
            elif path.is_file() and not path.is_symlink():
                body = path.read_bytes()
                files[str(path.relative_to(data))] = [len(body), zlib.crc32(body)]
        (build / MANIFEST).write_text(json.dumps({"format": FORMAT, "key": tpl.name, "dirs": dirs, "files": files}))
        os.rename(build, tpl)  # whole or not at all; the lock keeps a second build from racing it
    finally:
        shutil.rmtree(build, ignore_errors=True)


def _copy(tpl: Path, dest: Path) -> bool:
    """Copies the template's data directory to `dest`, checking each file against the manifest;
    False (and nothing left at `dest`) when there is no usable template."""
    try:
        if not private(tpl):
            return False
        manifest = json.loads((tpl / MANIFEST).read_text())
        expected: dict[str, list[int]] = manifest["files"]
        if manifest.get("format") != FORMAT or manifest.get("key") != tpl.name or not expected:
            return False
        src = tpl / "data"
        seen, seen_dirs = set(), set()
        dest.mkdir(mode=0o700)
        for d, dirs, names in os.walk(src):
            rel = Path(d).relative_to(src)
            for name in dirs:
                (dest / rel / name).mkdir(mode=0o700)
                os.chmod(dest / rel / name, os.lstat(Path(d) / name).st_mode & 0o777)  # the installer's, past the umask
                seen_dirs.add(str(rel / name))
            for name in names:
                key = str(rel / name)
                body = (Path(d) / name).read_bytes()
                if expected.get(key) != [len(body), zlib.crc32(body)]:
                    raise ValueError(f"{key} is not what was installed")
                fd = os.open(dest / key, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
                with os.fdopen(fd, "wb") as out:
                    os.fchmod(fd, os.lstat(Path(d) / name).st_mode & 0o777)
                    out.write(body)
                seen.add(key)
        if seen != set(expected) or seen_dirs != set(manifest["dirs"]):
            raise ValueError("files are missing")
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        shutil.rmtree(dest, ignore_errors=True)
        return False
    with contextlib.suppress(OSError):
        os.utime(tpl)  # in use: not pruned
    return True


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
