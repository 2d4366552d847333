"""Property-based fuzzing of the language (hypothesis, grammar-aware mutations of every shipped
scenario, example and golden file): `bench check` answers 0 or 2 within 2 s, every diagnostic has
a hint, and whatever check accepts also plans. About 30 s; `make fuzz` runs the same for minutes."""

from __future__ import annotations

import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .fuzzing import SEEDS, Tally, judge, mutate

TEXTS = [p.read_text() for p in SEEDS]


@settings(max_examples=4000, deadline=None, derandomize=False,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.sampled_from(TEXTS), st.integers(min_value=0, max_value=2**32), st.integers(min_value=1, max_value=6))
def test_check_answers_every_mutation_in_time_with_a_hint_and_what_it_accepts_plans(text: str, seed: int,
                                                                                    rounds: int) -> None:
    tally = Tally()
    mutated = mutate(text, random.Random(seed), rounds)
    judge(mutated, tally)
    assert not tally.internal, f"internal error on:\n{mutated}"
    assert not tally.slow, f"over 2 s on:\n{mutated}"
    assert not tally.unplanned, f"accepted by check, not by --plan:\n{mutated}"
    assert tally.no_hint == 0, f"a diagnostic without a hint on:\n{mutated}"


def test_the_fuzzer_finds_what_it_is_there_to_find() -> None:
    """The property is not vacuous: a mutation that breaks a file is reported, one that keeps it is not."""
    tally = Tally()
    judge(TEXTS[0].replace("scenario", "scenari", 1), tally)
    assert tally.diagnostics >= 1 and tally.accepted == 0
    judge(TEXTS[0], tally)
    assert tally.accepted == 1
