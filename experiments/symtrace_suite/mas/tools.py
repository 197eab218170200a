"""The suite's tools: plain Python functions that call the services over httpx.

Every MAS offers the same functions, with type hints and docstrings the frameworks turn into
tool schemas. A tool returns the service's JSON (a dict); an HTTP error answer comes back as
the service's error object (`{"status": "error", "http_status": 404, ...}`) rather than an
exception, so the agent sees it as an observation and symtrace's diagnosis sees the failure.

A service that cannot be reached at all (connection refused, timeout: an `httpx.TransportError`)
is not an observation about the task: it is an infrastructure fault of the harness. The tool
then ends the program at once with `EXIT_INFRASTRUCTURE` (75, EX_TEMPFAIL) and a marker line
on stderr, so a study counts the attempt as a system error (and retries it) instead of as a
failed repair of an agent that was handed "connection refused".
"""

from __future__ import annotations

import json
import os
import sys
import threading
import typing
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any
from urllib.parse import quote

import httpx
import orjson

URLS_ENV = "SYMTRACE_SUITE_URLS"
_TIMEOUT = 10.0
EXIT_INFRASTRUCTURE = 75  # EX_TEMPFAIL: the harness, not the agent, failed
INFRASTRUCTURE_MARKER = "symtrace_suite: infrastructure fault:"


class SuiteConfigError(RuntimeError):
    """SYMTRACE_SUITE_URLS is missing or malformed."""


def service_urls() -> dict[str, str]:
    raw = os.environ.get(URLS_ENV)
    if not raw:
        raise SuiteConfigError(f"{URLS_ENV} is not set (JSON object: service name -> base URL)")
    try:
        urls = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise SuiteConfigError(f"{URLS_ENV} is not JSON: {exc}") from exc
    missing = [n for n in ("shop", "wiki", "route") if not isinstance(urls.get(n), str)]
    if not isinstance(urls, dict) or missing:
        raise SuiteConfigError(
            f"{URLS_ENV} lacks a URL for {', '.join(missing) or 'every service'}"
        )
    return urls


_client: httpx.Client | None = None
_client_lock = threading.Lock()


def _http() -> httpx.Client:
    """One client per process: building a client (its TLS context) costs ~0.1 s per call."""
    global _client
    with _client_lock:
        if _client is None:
            _client = httpx.Client(timeout=_TIMEOUT)
        return _client


@contextmanager
def using_urls(urls: Mapping[str, str]) -> Iterator[None]:
    """Point the tools at *urls* inside the block (for in-process drivers)."""
    previous = os.environ.get(URLS_ENV)
    os.environ[URLS_ENV] = json.dumps(dict(urls))
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop(URLS_ENV, None)
        else:
            os.environ[URLS_ENV] = previous


def _call(service: str, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
    url = service_urls()[service].rstrip("/") + path
    try:
        response = _http().request(method, url, **kwargs)
    except httpx.TransportError as exc:
        infrastructure_fault(f"{service} {method} {path}: {type(exc).__name__}: {exc}")
    try:
        return response.json()
    except ValueError:
        return {"status": "error", "http_status": response.status_code, "error": response.text}


def infrastructure_fault(message: str) -> typing.NoReturn:
    """End the program now with EXIT_INFRASTRUCTURE. `os._exit`, not an exception: every
    framework catches a tool's exceptions and hands them to the agent as an observation."""
    sys.stderr.write(f"{INFRASTRUCTURE_MARKER} {message}\n")
    sys.stderr.flush()
    sys.stdout.flush()
    os._exit(EXIT_INFRASTRUCTURE)


def _seg(value: str) -> str:
    return quote(str(value), safe="")


def _params(**values: Any) -> dict[str, Any]:
    return {k: v for k, v in values.items() if v not in (None, "")}


def shop_search_products(query: str) -> dict[str, Any]:
    """Search the shop catalogue by product name or SKU."""
    return _call("shop", "GET", "/products", params={"q": query})


def shop_find_customers(query: str) -> dict[str, Any]:
    """Find shop customers by name, email or customer id (e.g. C-101)."""
    return _call("shop", "GET", "/customers", params={"q": query})


def shop_list_orders(
    customer_id: str = "", status: str = "", since: str = "", until: str = "", sku: str = ""
) -> dict[str, Any]:
    """List orders, newest first. Filters: customer_id, status (pending, processing, shipped,
    complete, canceled), since/until dates YYYY-MM-DD (inclusive), sku (contains product)."""
    params = _params(customer_id=customer_id, status=status, since=since, until=until, sku=sku)
    return _call("shop", "GET", "/orders", params=params)


def shop_get_order(order_id: str) -> dict[str, Any]:
    """One order with its items, shipping fee, total, status and refunded amount."""
    return _call("shop", "GET", f"/orders/{_seg(order_id)}")


def shop_cancel_order(order_id: str) -> dict[str, Any]:
    """Cancel a pending or processing order."""
    return _call("shop", "POST", f"/orders/{_seg(order_id)}/cancel")


def shop_update_order_status(order_id: str, status: str) -> dict[str, Any]:
    """Set an order's status (pending, processing, shipped, complete, canceled)."""
    return _call("shop", "POST", f"/orders/{_seg(order_id)}/status", json={"status": status})


def shop_refund_order(order_id: str, amount: float) -> dict[str, Any]:
    """Refund an amount (at most what is left) of a shipped, complete or canceled order."""
    return _call("shop", "POST", f"/orders/{_seg(order_id)}/refund", json={"amount": amount})


def wiki_search(query: str) -> dict[str, Any]:
    """Search the wiki; results carry the page slug."""
    return _call("wiki", "GET", "/search", params={"q": query})


def wiki_article(slug: str) -> dict[str, Any]:
    """A wiki page by slug: title, category, coordinates (lat, lon) and facts."""
    return _call("wiki", "GET", f"/pages/{_seg(slug)}")


def route_travel(
    from_lat: float, from_lon: float, to_lat: float, to_lon: float, profile: str = "car"
) -> dict[str, Any]:
    """Road distance (km) and travel time (seconds and H:MM:SS) between two coordinates;
    profile is car, bike or foot."""
    params = {"from_lat": from_lat, "from_lon": from_lon, "to_lat": to_lat, "to_lon": to_lon}
    return _call("route", "GET", "/travel", params={**params, "profile": profile})


def route_nearest(lat: float, lon: float, kind: str) -> dict[str, Any]:
    """The point of interest of a kind (park, hospital, station, museum) nearest to a
    coordinate, with its relation id, coordinates and driving distance."""
    return _call("route", "GET", "/nearest", params={"lat": lat, "lon": lon, "kind": kind})


TOOLS = (
    shop_search_products,
    shop_find_customers,
    shop_list_orders,
    shop_get_order,
    shop_cancel_order,
    shop_update_order_status,
    shop_refund_order,
    wiki_search,
    wiki_article,
    route_travel,
    route_nearest,
)
