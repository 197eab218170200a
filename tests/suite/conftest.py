"""Fixtures for the task-suite tests: one set of services per module, reset before each test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from symtrace_suite.services import Services, start_services


@pytest.fixture(scope="module")
def services() -> Iterator[Services]:
    with start_services() as running:
        yield running


@pytest.fixture
def svc(services: Services) -> Services:
    services.reset()
    return services
