"""Bad input is a diagnostic (exit 2, file:line:col, the line, a caret, a hint), never an internal
error, a hang, or a file that `check` accepts and `run` then cannot plan."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ..conftest import run_bench
from ..fuzzing import check

W = "workload sysbench oltp_read_write { tables = 1 }"


@pytest.mark.parametrize(("body", "says"), [
    (f"{W} ramp step {{ start 1 users step +1 users hold 1s max 99999999999999999999 users }}", "max must be at most"),
    (f"{W} users 99999999999999999999 duration 5s", "users must be at most 100000"),
    (f"{W} users 2 duration 99999999999999999999999h", "duration is too long"),
    (f"{W} ramp step {{ start 1 users step +1 users hold 1s max 100000 users }}", "steps; a run has at most"),
    (f'{W} users 2 duration 5s output "results/{{scenario"', "a '{' without its '}'"),
    ('workload custom { transaction t { let a = randstr(10, 5) query "SELECT :a" } } users 2 duration 5s',
     "randstr(): the minimum length is larger than the maximum"),
    ('workload custom { transaction t { let a = nurand(0, 100, 1) query "SELECT :a" } } users 2 duration 5s',
     "nurand(): x is larger than y"),
    ("workload sysbench oltp_read_write { tables = -1K } users 2 duration 5s", "tables must be at least 1"),
    ("workload sysbench oltp_read_write { table_size = -5M } users 2 duration 5s", "table_size must be at least 1"),
    (f"{W} users 2 duration 5s seed 9007199254740993", "seed is too large"),
    (f"{W} ramp step {{ start 1 users step x2 hold 1s max 8 users }} stop when {{ cpu(server) > 150% }}",
     "can never be reached"),
    (f"{W} ramp step {{ start 1 users step x2 hold 1s max 8 users }} stop when {{ error_rate > 200% }}",
     "can never be reached"),
])
def test_what_check_would_have_let_through(body: str, says: str) -> None:
    out = check(f'scenario "s" {{ {body} }}\n')
    assert out.code == 2 and says in out.stderr and "hint: " in out.stderr, out.stderr


def test_a_nul_in_the_output_path_is_refused(tmp_path: Path) -> None:
    f = tmp_path / "nul.bench"
    f.write_bytes(f'scenario "n" {{ {W} users 2 duration 5s output "res\x00ults.json" }}\n'.encode())
    r = run_bench("check", str(f))
    assert r.returncode == 2 and "NUL" in r.stderr


@pytest.mark.parametrize(("data", "says"), [
    ('scenario "café" { users 2 }\n'.encode("latin-1"), "byte 0xe9 is not UTF-8 text"),
    ('scenario "x" { users 2 }\n'.encode("utf-16"), "the file is UTF-16 text"),
    (bytes(range(256)) * 4, "is not UTF-8 text (a binary file?)"),
])
def test_files_that_are_not_utf8_text(tmp_path: Path, data: bytes, says: str) -> None:
    f = tmp_path / "enc.bench"
    f.write_bytes(data)
    r = run_bench("check", str(f))
    assert r.returncode == 2 and says in r.stderr and "hint: " in r.stderr and "Traceback" not in r.stderr


def test_a_utf8_byte_order_mark_is_fine(tmp_path: Path) -> None:
    f = tmp_path / "bom.bench"
    f.write_bytes(b"\xef\xbb\xbf" + f'scenario "b" {{ {W} users 2 duration 5s }}\n'.encode())
    assert run_bench("check", str(f)).returncode == 0


def test_the_caret_lines_up_under_tabs(tmp_path: Path) -> None:
    f = tmp_path / "tab.bench"
    f.write_text(f'scenario "t" {{\n\t{W}\n\tusers 2\tduration 5q\n}}\n')
    lines = run_bench("check", str(f)).stderr.splitlines()
    line, caret = lines[1], lines[2]
    # the caret line keeps the tabs of the source line: any terminal draws both alike
    assert line.split("| ", 1)[1].expandtabs(8).index("5q") == caret.split("| ", 1)[1].expandtabs(8).index("^")


def test_deep_nesting_and_endless_input(tmp_path: Path) -> None:
    f = tmp_path / "deep.bench"
    f.write_text('scenario "x" { target ' + "env(" * 5000 + '"A"' + ")" * 5000 + " users 2 }\n")
    r = run_bench("check", str(f), timeout=30)
    assert r.returncode == 2 and "nested too deeply" in r.stderr
    r = run_bench("check", "/dev/zero", timeout=30)  # read at most 1 MiB, not until memory runs out
    assert r.returncode == 2 and "larger than 1 MiB" in r.stderr


def test_many_errors_on_one_long_line_stay_short(tmp_path: Path) -> None:
    f = tmp_path / "long.bench"
    f.write_text(f'scenario "x" {{ {W} ramp step {{ start 1 users step x2 hold 1s max 8 users }} stop when {{ '
                 + " ".join("tps < 1x" for _ in range(6_000)) + " } }\n")
    r = run_bench("check", str(f), timeout=60)
    assert r.returncode == 2
    assert len(r.stderr) < 50_000 and "more error" in r.stderr  # 50 shown, the rest counted; short excerpts


def test_an_invisible_character_is_named(tmp_path: Path) -> None:
    f = tmp_path / "nbsp.bench"
    f.write_text(f'scenario "x" {{ {W} users\u00a02 duration 5s }}\n')
    r = run_bench("check", str(f))
    assert r.returncode == 2 and "NO-BREAK SPACE" in r.stderr


@pytest.mark.parametrize(("gate", "says", "hint"), [
    ("tps < -500%", "tps cannot fall by more than 100% (to 0), so this gate could never fail",
     'e.g. --fail-if "tps < -5%"'),
    ("tps < -100%", "could never fail", 'e.g. --fail-if "tps < -5%"'),
    ("tps > -5%", "it fails two identical results (a difference of 0% is > -5%)",
     'did you mean --fail-if "tps < -5%"?'),
    ("p95 < +10%", "it fails two identical results", 'did you mean --fail-if "p95 > +10%"?'),
])
def test_a_gate_that_could_never_fail_or_always_fails_is_refused(gate: str, says: str, hint: str) -> None:
    # refused before any file is read: the results need not exist
    r = run_bench("compare", "base.json", "new.json", "--fail-if", gate)
    assert r.returncode == 2 and says in r.stderr, r.stderr
    assert hint in r.stderr.split("hint: ", 1)[1], r.stderr


PYTHON_NAMES = re.compile(r"\b\w*(Error|Exception|Exit|Interrupt)\b|Traceback|internal error|object has no")


def test_a_broken_result_is_said_in_words_never_in_python_names(dsn_url: str, tmp_path: Path) -> None:
    f = tmp_path / "ok.bench"
    f.write_text('scenario "ok" {\n  target env("BENCH_DSN")\n  workload custom { transaction one { query "SELECT 1" } }\n'
                 "  users 1\n  duration 1s\n}\n")
    base = tmp_path / "base.json"
    assert run_bench("run", str(f), "--headless", "-q", "--json", str(base)).returncode == 0
    doc = json.loads(base.read_text())

    def broken(name: str, change: Callable[[dict[str, Any]], object]) -> str:
        d = json.loads(json.dumps(doc))
        change(d)
        (tmp_path / name).write_text(json.dumps(d))
        return str(tmp_path / name)

    (tmp_path / "cut.jsonl").write_text('{"type": "interval", "t": 1}\n')
    cases = [
        ("compare", str(base), broken("users.json", lambda d: d["steps"][0].update(users="many"))),
        ("compare", str(base), broken("steps.json", lambda d: d.update(steps=5))),
        ("replay", broken("intervals.json", lambda d: d.pop("intervals"))),
        ("replay", broken("summary.json", lambda d: d.update(summary=5))),
        ("replay", broken("scenario.json", lambda d: d.update(scenario=None))),
        ("replay", str(tmp_path / "cut.jsonl")),
        ("report", broken("bare.json", lambda d: d.pop("steps")), "-o", str(tmp_path / "r.html")),
    ]
    for args in cases:
        r = run_bench(*args)
        said = r.stdout + r.stderr
        assert r.returncode in (0, 2) and not PYTHON_NAMES.search(said), (args, said)
        if r.returncode:
            named = args[1] if args[0] == "report" else args[-1]  # the result, not the report's output
            assert named in r.stderr or "missing or malformed" in r.stderr, (args, r.stderr)
