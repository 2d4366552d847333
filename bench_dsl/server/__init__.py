"""The database side: the throwaway server, connections, facts, settings, counters, replicas, host."""
