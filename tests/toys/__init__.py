"""Toys (issue 40, 5): kinds from outside bench-dsl, each one module that declares what it adds
(bench_dsl.core.plugins), named in BENCH_DSL_PLUGINS by the test that runs them. They prove the seams:
a run, its result, --jsonl, compare, replay and the live screen take them with no edit to a module of
bench-dsl (tests/e2e/test_toys.py)."""
