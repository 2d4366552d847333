"""A result never silently loses a field: a run of each kind of load holds every field its kind's
result held when the format's version was last set (tests/fixtures/format/result-v1-*.keys). A field may be
added (the inventory then says nothing of it); one dropped or renamed fails here, and is a new
format version: bump `format_version`, say what changed in docs/language.md (output) and write the new
inventory (tests/fixtures/result_keys.key_paths of a run of each scenario)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ..conftest import ROOT, run_bench
from ..fixtures.result_keys import key_paths

pytestmark = pytest.mark.slow

GOLDEN = ROOT / "tests" / "fixtures" / "format"


@pytest.mark.parametrize("kind", ["closed", "rate"])
def test_a_result_holds_every_field_of_its_format_version(kind: str, dsn_url: str, tmp_path: Path) -> None:
    out = tmp_path / f"{kind}.json"
    r = run_bench("run", str(GOLDEN / f"format-{kind}.bench"), "--headless", "-q", "--json", str(out))
    assert r.returncode == 0, r.stderr
    doc = json.loads(out.read_text())
    assert doc["format_version"] == 1, "a new format version: write its inventory (see the module)"
    held = (GOLDEN / f"result-v1-{kind}.keys").read_text().split()
    lost = sorted(set(held) - key_paths(doc))
    assert lost == [], f"fields of format version 1 the result no longer holds: {lost}"
