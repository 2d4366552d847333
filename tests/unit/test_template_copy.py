"""The throwaway server's data directory template (server/template.py), without a server: its key,
and a copy that is the installed files as installed, down to what was left preallocated and
unwritten (InnoDB's tablespace and log are), never a plain copy of zeros."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bench_dsl.server.template import _written, make_data_dir, template_key

MB = 1024 * 1024


def fake_install(data: Path, tmp: Path) -> None:
    """As InnoDB makes a file: its size preallocated, a page written in it."""
    assert tmp.is_dir() and data.parent == tmp
    (data / "sub").mkdir(parents=True, mode=0o700)
    fd = os.open(data / "tablespace", os.O_WRONLY | os.O_CREAT, 0o660)
    try:
        os.posix_fallocate(fd, 0, MB)
        os.pwrite(fd, b"page" * 1024, 64 * 1024)
    finally:
        os.close(fd)
    (data / "sub" / "small").write_bytes(b"small file")
    (data / "empty").touch()


def test_a_copy_is_the_install_down_to_its_unwritten_space(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    installed = tmp_path / "installed"
    installed.mkdir()
    fake_install(installed / "data", installed)
    as_installed = _written(installed / "data" / "tablespace")  # before a read puts its zeros in the page cache
    for i in range(2):
        (tmp_path / f"server{i}").mkdir(mode=0o700)
    made = [make_data_dir(tmp_path / f"server{i}" / "data", "k", fake_install) for i in range(2)]
    assert made == ["new template", "template"]
    for i in range(2):
        data = tmp_path / f"server{i}" / "data"
        # the same ranges written as in a fresh install (where the file system tells them apart,
        # one 4 KiB range, not the whole MiB)
        assert _written(data / "tablespace") == as_installed
        assert (data / "tablespace").read_bytes() == (installed / "data" / "tablespace").read_bytes()
        assert (data / "sub" / "small").read_bytes() == b"small file" and (data / "empty").read_bytes() == b""
        assert (data / "tablespace").stat().st_blocks * 512 >= MB  # and the rest still preallocated
        assert oct((data / "sub").stat().st_mode & 0o777) == "0o700"


def test_the_key_is_the_binaries_identity_and_the_command(tmp_path: Path) -> None:
    binary = tmp_path / "mariadbd"
    binary.write_bytes(b"v1")
    key = template_key([str(binary)], ["install", "--datadir=<datadir>"])
    assert template_key([str(binary)], ["install", "--datadir=<datadir>"]) == key
    assert template_key([str(binary)], ["install", "--datadir=<datadir>", "--skip-test-db"]) != key
    os.utime(binary, ns=(0, 10**9))  # the same size, another mtime: an upgrade in place
    assert template_key([str(binary)], ["install", "--datadir=<datadir>"]) != key
    other = tmp_path / "other"
    other.write_bytes(b"v1")
    os.utime(other, ns=(0, 10**9))
    assert template_key([str(other)], ["install", "--datadir=<datadir>"]) != key
    assert template_key([str(tmp_path / "missing")], ["install"]) != template_key([], ["install"])
