"""Three deterministic HTTP JSON services on 127.0.0.1: shop admin, wiki, routing.

`start_services()` runs them in this process (threads); `python -m symtrace_suite.services
--ready-file F` runs them in their own process. Either way each service answers
`POST /__reset`, `GET /__state` and `GET /__requests`, and `remote_reset` / `remote_state` /
`remote_requests` drive those from another process.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import httpx

from symtrace_suite.services.base import ServedService, Service, ServiceError
from symtrace_suite.services.route import Route
from symtrace_suite.services.shop import Shop
from symtrace_suite.services.wiki import Wiki

__all__ = [
    "SERVICE_NAMES",
    "ServiceError",
    "Services",
    "remote_requests",
    "remote_reset",
    "remote_state",
    "start_services",
]

SERVICE_CLASSES: tuple[type[Service], ...] = (Shop, Wiki, Route)
SERVICE_NAMES = tuple(cls.name for cls in SERVICE_CLASSES)


class Services:
    """The running services; a context manager. `urls` maps name → base URL."""

    def __init__(self) -> None:
        self._served: dict[str, ServedService] = {}
        try:
            for cls in SERVICE_CLASSES:
                self._served[cls.name] = ServedService(cls())
        except BaseException:
            self.close()
            raise
        self.urls: dict[str, str] = {name: s.url for name, s in self._served.items()}

    def reset(self) -> None:
        for served in self._served.values():
            served.reset()

    def state(self) -> dict[str, Any]:
        return {name: served.state() for name, served in self._served.items()}

    def requests(self) -> dict[str, list[dict[str, Any]]]:
        return {name: served.requests() for name, served in self._served.items()}

    def close(self) -> None:
        served, self._served = self._served, {}
        for one in served.values():
            one.close()

    def __enter__(self) -> Services:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def start_services() -> Services:
    return Services()


_client: httpx.Client | None = None


def _http() -> httpx.Client:
    """One client per process: a new client builds an SSL context (~0.1 s) every time, and a
    study resets the services before every attempt."""
    global _client
    if _client is None:
        _client = httpx.Client(timeout=10.0)
    return _client


def _each(urls: Mapping[str, str], method: str, path: str) -> dict[str, Any]:
    out = {}
    client = _http()
    for name in sorted(urls):
        response = client.request(method, urls[name].rstrip("/") + path)
        response.raise_for_status()
        out[name] = response.json()
    return out


def remote_reset(urls: Mapping[str, str]) -> None:
    _each(urls, "POST", "/__reset")


def remote_state(urls: Mapping[str, str]) -> dict[str, Any]:
    return _each(urls, "GET", "/__state")


def remote_requests(urls: Mapping[str, str]) -> dict[str, list[dict[str, Any]]]:
    return {name: body["requests"] for name, body in _each(urls, "GET", "/__requests").items()}
