"""The Vega bundle a report embeds is built once per machine and kept in the user's cache, and is
read back only from a file and directory nobody else may write (a report runs it in a browser)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bench_dsl.results.report import render


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
