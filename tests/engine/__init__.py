"""Tests of the parts that talk to a real server: the executor, counters, TLS, replicas, fleets."""
