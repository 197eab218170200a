"""AG2's response cache as a recorded side channel.

`OpenAIWrapper.create` looks a request up in a cache (`cache=` an AG2 `Cache` or any
`AbstractCache` backend, or the legacy `cache_seed`, which builds `Cache.disk(seed)` inside
create) and on a hit returns the stored reply without any HTTP: a hit is not a live boundary.
Whether a lookup hits depends on state outside the run (a disk or Redis cache warmed by an
earlier run), so a replay could take the other branch. Each lookup is therefore recorded as a
tool boundary `ag2.cache.get` (the key; the answer, None for a miss) and each store as
`ag2.cache.set`. On replay both are served from the bundle: the same hits and misses happen
whatever the cache holds now, and nothing is written to it.

Only caches used inside `OpenAIWrapper.create` are wrapped (`CacheLens`); other users of
AG2's cache classes (e.g. contrib transforms) pass through untouched.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from symtrace.frameworks.contract import call_tool
from symtrace_ag2._codec import CACHED_REPLY

CACHE_GET = "ag2.cache.get"
CACHE_SET = "ag2.cache.set"

_inside_create: ContextVar[bool] = ContextVar("symtrace_ag2_inside_create", default=False)


@contextmanager
def inside_create() -> Iterator[None]:
    token = _inside_create.set(True)
    try:
        yield
    finally:
        _inside_create.reset(token)


class CacheLens:
    """Stands in for an AG2 cache inside `OpenAIWrapper.create`; get/set are boundaries."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    @classmethod
    def around(cls, cache: Any) -> Any:
        return cache if isinstance(cache, CacheLens) else cls(cache)

    def __enter__(self) -> Any:
        return CacheLens.around(self._inner.__enter__())

    def __exit__(self, *exc_info: Any) -> Any:
        return self._inner.__exit__(*exc_info)

    def get(self, key: str, default: Any = None) -> Any:
        value = call_tool(
            CACHE_GET, {"key": key}, lambda: self._inner.get(key, None),
            codec=CACHED_REPLY, meta={"backend": type(self._inner).__name__},
        )
        return default if value is None else value

    def set(self, key: str, value: Any) -> None:
        call_tool(
            CACHE_SET, {"key": key}, lambda: self._inner.set(key, value),
            meta={"backend": type(self._inner).__name__},
        )

    def close(self) -> None:
        self._inner.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def cache_enter(original: Callable[..., Any]) -> Callable[..., Any]:
    """`Cache.__enter__` returns the backend; inside create it returns a lens over it."""

    def __enter__(self: Any) -> Any:
        entered = original(self)
        return CacheLens.around(entered) if _inside_create.get() else entered

    __enter__.__wrapped__ = original  # type: ignore[attr-defined]
    return __enter__
