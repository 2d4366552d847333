"""TPC-C: the plugin, its sessions, data load, procedures, schema and consistency checks."""
