"""The figures the server side derives and declares (core.figures): what it counts over a step
(bench_dsl.server.counters reads the counters). Apart from the reading, which loads the driver:
a result's checks and the declarations' tests know them without it."""

from __future__ import annotations

from bench_dsl.core.figures import Counted, Figure

SECONDS = Figure("seconds", "s", "count", "sum", "server", "server", "the time between the two readings",
                 digits=3, required=True)
TPM = Counted(Figure("tpm", "tpm", "rate", "recompute", "server", "server", "Com_commit + Com_rollback, as HammerDB",
                     title="server tpm"), "commits_rollbacks")
