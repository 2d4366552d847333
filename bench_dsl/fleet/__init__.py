"""Where the users run: the Fleet seam, in-process and worker-process fleets, the users themselves."""
