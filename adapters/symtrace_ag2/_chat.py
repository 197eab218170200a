"""A top-level AG2 chat's summary is the run's declared final result.

`initiate_chat` / `a_initiate_chat` return a `ChatResult`; its `summary` (the last message,
or an LLM reflection) is what the program got out of the chat. Chats AG2 starts inside a
chat (GroupChat "auto" speaker selection is a nested two-agent chat) are not results, so only
the outermost chat of a context declares. Of chats one after the other the last wins; of
top-level chats that overlap (one assistant serving two `a_initiate_chat`s under `gather`) the
one opened later wins, whichever ended last (`context.activation`: the end order is timing, and
R107 would blame the program for it). A program that calls `symtrace.final_result(...)` itself
afterwards overrides it.

`a_initiate_chats` starts each chat as `a_initiate_chat(chat_id=..., ...)` in a task of its
own, concurrently with the others: such a chat is marked as one actor for lane naming
(`_lanes.concurrent_chat`). Concurrent chats that share a recipient are refused.

Each chat also carries what caused it into the chats and turns that read its result
(_causes.py: a sequence's carryover, a_initiate_chats prerequisites, a nested chat's summary).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

from symtrace.frameworks.contract import active, context, final_result, refuse_construct
from symtrace_ag2 import _causes
from symtrace_ag2._lanes import agent_name, concurrent_chat

_depth: ContextVar[int] = ContextVar("symtrace_ag2_chat_depth", default=0)


def _declare(result: Any, unit: context.Turn | None) -> None:
    summary = getattr(result, "summary", None)
    if isinstance(summary, str):
        final_result(summary, turn=unit)


def initiate_chat(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        token = _depth.set(_depth.get() + 1)
        try:
            with context.activation("ag2.chat") as unit, _causes.chat(kwargs):
                result = original(self, *args, **kwargs)
        finally:
            _depth.reset(token)
        if _depth.get() == 0:
            _declare(result, unit)
        return result

    return wrapper


def a_initiate_chat(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    async def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        token = _depth.set(_depth.get() + 1)
        try:
            with (context.activation("ag2.chat") as unit, concurrent_chat(kwargs.get("chat_id")),
                  _causes.chat(kwargs)):
                result = await original(self, *args, **kwargs)
        finally:
            _depth.reset(token)
        if _depth.get() == 0:
            _declare(result, unit)
        return result

    return wrapper


def refusing_shared_recipients(original: Callable[..., Any]) -> Callable[..., Any]:
    """`a_initiate_chats(chat_queue)`: refuse concurrent chats with one recipient, before any.

    Chats with no prerequisite path between them run at the same time. Two of them talking to
    the same recipient object interleave in that agent's own history (AG2 keeps one message
    list per peer) and its model calls, in an order set by thread timing: no bundle could
    replay that, so the run stops here, before anything of it is sent.
    """

    @functools.wraps(original)
    async def a_initiate_chats(chat_queue: list[dict[str, Any]], *args: Any, **kwargs: Any
                               ) -> Any:
        if active() is not None:
            _check_concurrent_recipients(chat_queue)
        with _causes.concurrent(chat_queue):
            return await original(chat_queue, *args, **kwargs)

    return a_initiate_chats


def _check_concurrent_recipients(chat_queue: list[dict[str, Any]]) -> None:
    prerequisites = {chat.get("chat_id"): set(chat.get("prerequisites") or ())
                     for chat in chat_queue}

    def before(chat_id: Any) -> set[Any]:
        seen: set[Any] = set()
        todo = list(prerequisites.get(chat_id, ()))
        while todo:
            current = todo.pop()
            if current not in seen:
                seen.add(current)
                todo.extend(prerequisites.get(current, ()))
        return seen

    for i, first in enumerate(chat_queue):
        for second in chat_queue[i + 1:]:
            a, b = first.get("chat_id"), second.get("chat_id")
            ordered = a in before(b) or b in before(a)
            if not ordered and first.get("recipient") is second.get("recipient"):
                refuse_construct(
                    f"chats {a} and {b} of a_initiate_chats run at the same time with the "
                    f"same recipient {agent_name(first.get('recipient'))!r}: AG2 interleaves "
                    "them in that agent's history and model calls by thread timing, so the "
                    "run cannot be replayed. Give each concurrent chat its own recipient "
                    f"agent, or make chat {b} list chat {a} in its prerequisites"
                )
