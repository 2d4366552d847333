"""sysbench 1.0's OLTP tests: the plugin (spec, validation, statements) and what runs them."""
