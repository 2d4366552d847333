"""bench-dsl's cache: what takes a second or more to build and is the same every time (the
grammar's parse tables, the Vega bundle a report embeds), kept per user in
$XDG_CACHE_HOME/bench-dsl (or ~/.cache/bench-dsl).

It is used only while private: the directory the user's own, mode 0700, and each file the user's
and writable by nobody else. What is kept there is trusted when read back (the parse tables are a
pickle; the bundle runs in the browser of whoever opens a report), so a cache another user could
write is never used: the thing is then built again, as without a cache."""

from __future__ import annotations

import os
import stat
from pathlib import Path


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "bench-dsl"


def private(p: Path) -> bool:
    """`p` is ours, not a link, and nobody else may write it (a directory: nor list or enter it)."""
    st = p.lstat()
    if st.st_uid != os.geteuid() or stat.S_ISLNK(st.st_mode):
        return False
    return not st.st_mode & (0o077 if stat.S_ISDIR(st.st_mode) else 0o022)


def cache_file(name: str) -> Path | None:
    """Where `name` is kept: a path in the private cache directory (made if need be) that is either
    absent or a private file; None when the cache cannot be used (a read-only home, a directory
    or a file someone else may write)."""
    d = cache_dir()
    try:
        d.mkdir(mode=0o700, parents=True, exist_ok=True)
        if not private(d):
            return None
        path = d / name
        return path if (not path.exists() and not path.is_symlink()) or private(path) else None
    except OSError:
        return None
