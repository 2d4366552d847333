"""Whole runs, studies and the commands on their results, against a real throwaway server."""
