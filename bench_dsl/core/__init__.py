"""Shared facts every layer reads: diagnostics and exit statuses, addresses, TLS, MySQL error codes."""
