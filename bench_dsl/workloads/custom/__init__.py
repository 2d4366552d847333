"""Workloads of your own: transactions of SQL with generated values, and a setup that fills tables."""
