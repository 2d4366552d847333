"""The `bench` command: one module per command."""
