"""`load NAME { }`: a load profile of its own syntax (bench_dsl.language.loads), read by the kind it
names, which the language is handed (tests/toys/clients_load.py's; bench-dsl's own have none)."""

from __future__ import annotations

import pytest

from bench_dsl.core.errors import ScenarioError
from bench_dsl.language import validate
from bench_dsl.workloads.registry import PLUGINS
from tests.toys.clients_load import Clients, ClientsLoad

KINDS = {"clients": Clients.syntax}
HEAD = 'scenario "s" {\n  workload sysbench oltp_point_select { }\n'


def _load(body: str, kinds: dict[str, object] | None = None) -> object:
    sc = validate.load("t.bench", text=HEAD + body + "}\n", env={}, workloads=PLUGINS, fleets={},
                       load_kinds=KINDS if kinds is None else kinds)  # type: ignore[arg-type]
    return sc.ramp


def _errors(body: str, kinds: dict[str, object] | None = None) -> str:
    with pytest.raises(ScenarioError) as e:
        _load(body, kinds)
    return e.value.render()


def test_a_load_of_a_kind_handed_in_is_its_model() -> None:
    assert _load("  load clients { start = 1  max = 8  hold = 5s  settle = 1s }\n") == ClientsLoad(1, 8, 1.0, 5.0)


def test_an_unknown_load_names_the_kinds_there_are_or_says_where_they_come_from() -> None:
    assert "unknown load 'client'" in (out := _errors("  load client { start = 1 }\n")) and "load clients" in out
    out = _errors("  load clients { start = 1 }\n", kinds={})
    assert "unknown load 'clients'" in out and "BENCH_DSL_PLUGINS" in out


def test_the_kind_reads_its_settings_with_the_languages_words() -> None:
    out = _errors("  load clients { start = 1  max = 8  hold = 5  setle = 1s }\n")
    assert "this load takes no 'setle'" in out and "did you mean settle?" in out
    assert "needs its hold" in _errors("  load clients { start = 1  max = 8 }\n")
    assert "max is below start" in _errors("  load clients { start = 4  max = 2  hold = 1s }\n")
    assert "is given more than once" in _errors("  load clients { start = 1  start = 2  max = 4  hold = 1s }\n")


def test_a_load_says_the_whole_load() -> None:
    out = _errors("  load clients { start = 1  max = 8  hold = 5s }\n  users 4\n  duration 10s\n")
    assert out.count("says the whole load") == 2
