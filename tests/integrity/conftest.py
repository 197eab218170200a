"""Fixtures of the integrity tests (the stub endpoint: tests/conftest.py `stub_llm`)."""
