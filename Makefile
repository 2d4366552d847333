# The two commands of the README: `make run` and `make test`. Both install what they need.
PY := .venv/bin/python
BENCH := .venv/bin/bench

.PHONY: run test test-machine test-min lint setup check clean bench fuzz soak

setup:
	@scripts/setup.sh

## Run examples/quickstart.bench against a throwaway MariaDB server started for the run.
run: setup
	$(BENCH) run examples/quickstart.bench --json results/quickstart.json

## Run the whole test suite (starts its own throwaway server unless BENCH_DSN is set) in four processes
## (pytest-xdist; tests/conftest.py says how they share the machine and in which order the files are
## handed out), or in one against BENCH_DSN's server (its tables and settings are the tests'). Four on
## two cores: most of a test is waiting (for a server, a run's clock, a terminal); two processes left a
## third of the CPU idle, three some 15% (9:42 against 9:06 with four, the same suite); the tests that
## measure time or CPU against absolutes run `alone`. PYTEST_ARGS="-n 0": in one.
XDIST := $(if $(BENCH_DSN),,-n 4 --dist loadfile --no-loadscope-reorder)
## Two kinds of test take the whole machine, and are left to `make test-machine`, which runs them one at
## a time after `make test` in CI (~5 min): those marked `provoked` make a resource run out on purpose (a
## server held to one core, both cores filled, the disk throttled by a cgroup) to check what the run says
## ran out; those marked `harness` run the benchmark's harness (make bench) against sysbench at full
## load. Beside the suite's other processes they starved those and were starved.
MACHINE := provoked or harness
test: setup
	$(PY) -m pytest -q $(XDIST) -m "not ($(MACHINE))" $(PYTEST_ARGS)

test-machine: setup
	$(PY) -m pytest -q -n 0 -m "$(MACHINE)" $(PYTEST_ARGS)

## The fast part of the suite (not the slow end-to-end runs) with every dependency at exactly its
## lower bound in pyproject.toml, in .venv-min: the bounds are tested, not guessed. CI runs it.
test-min: setup
	@scripts/setup-min.sh
	.venv-min/bin/python -m pytest -q $(XDIST) -m "not slow and not ($(MACHINE))" $(PYTEST_ARGS)

## ruff, mypy and the floors' contract (lint-imports) over bench_dsl/ and tui/: zero findings.
lint: setup
	.venv/bin/ruff check bench_dsl tui
	.venv/bin/mypy
	.venv/bin/lint-imports --no-cache

## Benchmark bench-dsl against sysbench side by side on a throwaway server (~30 min; installs sysbench
## when missing); writes bench/results/latest.md and .json. Options: BENCH_ARGS="--quick" (see --help).
bench: setup
	@bench/install-sysbench.sh
	$(PY) -m bench.run $(BENCH_ARGS)

## Fuzz the language for minutes (grammar-aware mutations of every shipped file): inputs tried, internal
## errors, hangs, accepted-but-unplannable inputs. FUZZ_MINUTES=5 by default; the suite runs ~20 s of it.
fuzz: setup
	$(PY) -m tests.fuzzing --minutes $(or $(FUZZ_MINUTES),5)

## The unit and engine floors ROUNDS times (20) under HOGS busy loops (4): what the wall clock or a busy
## machine breaks fails here first. Takes the machine: run nothing else beside it.
soak: setup
	@scripts/soak.sh

## Validate every shipped scenario and example.
check: setup
	$(BENCH) check examples/*.bench scenarios/*.bench

clean:
	rm -rf .venv .venv-min build dist *.egg-info results
