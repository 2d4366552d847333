"""A matrix of configurations and repeats: one Run each, then a summary and a report."""
