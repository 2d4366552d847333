"""What a run leaves: sinks, the result document, and what reads results back (summary, compare, report, replay)."""
