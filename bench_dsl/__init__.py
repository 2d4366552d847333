"""bench-dsl: find the saturation point of a MySQL/MariaDB server from one .bench file."""

__version__ = "0.1.0"
