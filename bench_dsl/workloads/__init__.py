"""The workloads bench-dsl can run: sysbench's OLTP tests, TPC-C and the user's own (custom), each
a plugin listed in registry.py. Importing the package loads nothing else."""
