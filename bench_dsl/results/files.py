"""The one way bench-dsl writes an output file: whole or not at all, and durably.

Every output goes through `write_atomically`: the run's result document (rewritten at every
interval), summary.json, `bench compare --json/--markdown`, report.html and the report's images.
A reader (a person, a CI step, the matrix runner's next report) never meets half a file, a kill or
a full disk leaves the previous version in place, and a power cut after the call returned does not
take the new one back:

- the text goes to a temporary file in the same directory (a rename is atomic only within one file
  system), which is flushed and fsynced;
- it is renamed over the path, and the directory is fsynced so that the rename itself is durable;
- on any failure the temporary file is removed: a full disk is not left fuller by half a file.

One permission policy: the file gets the mode any program's new file gets (0666 less the umask),
created so by the kernel rather than by reading the umask (which would race between threads). A
result holds no secret (passwords are replaced by *** before anything is written), and a result
that only its writer can read surprises whoever runs `bench compare` from another account.

Only a regular file (or nothing) is replaced: renaming over a symbolic link, a device (/dev/null)
or a pipe would swap it for a regular file, which is never what was meant.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from pathlib import Path


class NotAnOutput(OSError):
    """The path holds something a file must not be renamed over (a link, a device, a directory)."""


def check_kind(path: Path) -> None:
    """A NotAnOutput naming what is at `path` when it is there and is not a regular file."""
    try:
        st = path.lstat()
    except FileNotFoundError:
        return
    if not stat.S_ISREG(st.st_mode):
        kind = ("a symbolic link" if stat.S_ISLNK(st.st_mode) else "a directory" if stat.S_ISDIR(st.st_mode)
                else "a device" if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode) else "not a regular file")
        raise NotAnOutput(f"it is {kind}: results are written to regular files only, never through or over "
                          "anything else")


def write_atomically(path: str | Path, content: str | bytes) -> Path:
    """`content` (text as UTF-8) as the whole of `path`, atomically and durably (see the module).
    The directory is made if need be. Raises OSError (NotAnOutput among them) with the system's
    cause; nothing is left behind when it does."""
    target = Path(path)
    data = content.encode("utf-8") if isinstance(content, str) else content
    target.parent.mkdir(parents=True, exist_ok=True)
    check_kind(target)
    tmp = target.with_name(f".{target.name}.{secrets.token_hex(4)}.tmp")
    # O_EXCL: a name no one else holds; 0o666: the kernel applies the umask, as for any new file
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    _sync_directory(target.parent)
    return target


def _sync_directory(directory: Path) -> None:
    # the rename is an entry of the directory: durable once the directory is. Some file systems
    # cannot open or fsync a directory (EINVAL, EACCES): the file is written all the same.
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
