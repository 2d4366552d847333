"""What takes long to build is kept in the user's private cache (core/cache.py): the Vega bundle a
report embeds and the grammar's parse tables, read back only from a file and directory nobody else
may write (a report runs the bundle in a browser; the tables are a pickle)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bench_dsl.results.report import html as render


def test_the_bundle_is_kept_and_a_tampered_copy_is_not_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    version = render.vl_version()
    built = render._bundle.__wrapped__(version)  # type: ignore[attr-defined]  # past the process's own cache
    (kept,) = (tmp_path / "bench-dsl").glob("vega-bundle-*.js")
    assert kept.read_text() == built and len(built) > 100_000
    assert (kept.parent.stat().st_mode & 0o777) == 0o700
    kept.write_text("alert('kept')")
    assert render._bundle.__wrapped__(version) == "alert('kept')"  # type: ignore[attr-defined]  # read, not rebuilt
    os.chmod(kept, 0o666)  # anyone may have written it: rebuilt instead
    assert render._bundle.__wrapped__(version) == built  # type: ignore[attr-defined]
    os.chmod(kept.parent, 0o777)
    kept.write_text("alert('shared dir')")
    assert render._bundle.__wrapped__(version) == built  # type: ignore[attr-defined]


def test_the_cache_is_used_only_while_nobody_else_may_write_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from bench_dsl.core.cache import cache_file
    from bench_dsl.language import parser

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    parser._parser.__wrapped__(parser.CORE_UNITS)  # type: ignore[attr-defined]  # past the process's own cache
    (tables,) = (tmp_path / "bench-dsl").glob("grammar-*.pickle")  # the parse tables, kept
    assert cache_file(tables.name) == tables
    os.chmod(tables, 0o664)  # another may have written it: not read
    assert cache_file(tables.name) is None
    os.chmod(tables, 0o644)
    (tmp_path / "bench-dsl" / "link").symlink_to(tables)
    assert cache_file("link") is None
    os.chmod(tmp_path / "bench-dsl", 0o755)  # a directory others may enter: not used at all
    assert cache_file(tables.name) is None and cache_file("new") is None
