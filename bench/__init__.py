"""The performance benchmark of bench-dsl: sysbench and bench-dsl side by side on one server, plus
the engine's own costs (measurement overhead, server start, memory per user). `make bench` runs it;
`python -m bench.run --help` lists its options. It is not part of the test suite."""
