"""`python -m bench_dsl.cli`: the `bench` command."""

import sys

from bench_dsl.cli.main import main

sys.exit(main())
