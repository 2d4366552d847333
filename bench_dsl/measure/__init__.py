"""What a run measures in its processes: histograms and counts, stalls, scheduling lag, CPU."""
