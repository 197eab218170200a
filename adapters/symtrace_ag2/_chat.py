"""A top-level AG2 chat's summary is the run's declared final result.

`initiate_chat` / `a_initiate_chat` return a `ChatResult`; its `summary` (the last message,
or an LLM reflection) is what the program got out of the chat. Chats AG2 starts inside a
chat (GroupChat "auto" speaker selection is a nested two-agent chat) are not results, so only
the outermost chat of a context declares. The last top-level chat wins, and a program that
calls `symtrace.final_result(...)` itself afterwards overrides it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

from symtrace.api import final_result

_depth: ContextVar[int] = ContextVar("symtrace_ag2_chat_depth", default=0)


def _declare(result: Any) -> None:
    summary = getattr(result, "summary", None)
    if isinstance(summary, str):
        final_result(summary)


def initiate_chat(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        token = _depth.set(_depth.get() + 1)
        try:
            result = original(self, *args, **kwargs)
        finally:
            _depth.reset(token)
        if _depth.get() == 0:
            _declare(result)
        return result

    return wrapper


def a_initiate_chat(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    async def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        token = _depth.set(_depth.get() + 1)
        try:
            result = await original(self, *args, **kwargs)
        finally:
            _depth.reset(token)
        if _depth.get() == 0:
            _declare(result)
        return result

    return wrapper
