"""Tests that need no server: the language, the judge on a fake fleet, metrics, the code's shape."""
