"""Helpers for testing code with symtrace (the pytest plugin lives in ``pytest_plugin``)."""
