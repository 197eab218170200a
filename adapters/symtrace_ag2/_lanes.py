"""Lane names of AG2 agents (shared by attribution, tools, causes and chats).

Regular agent calls run on the agent's own lane: its name, or `f"{name}@2"` for the second
agent object with that name (`symtrace.session.core.instance_lane`, registered when AG2
constructs the agent, so in program order). Chats that `a_initiate_chats` runs at the same
time are separate actors even when they share an agent (the user proxy that starts them all,
runs their tools and asks for their summaries): inside such a chat, calls made on the event
loop get the lane `f"chat#{chat_id}/{name}"` (`lane_for`). Calls AG2 runs on executor threads
do not see that context and keep the agent's name, the same way in record and replay.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from symtrace.frameworks.contract import instance_lane

# the chat_id of the a_initiate_chats chat this context runs in (chats there run concurrently)
_concurrent_chat: ContextVar[int | None] = ContextVar("symtrace_ag2_chat_id", default=None)


def agent_name(agent: Any) -> str:
    name = getattr(agent, "name", None)
    return str(name) if name else type(agent).__name__


def lane_of(agent: Any) -> str:
    """The agent object's lane (its name, `name@n` for the n-th object with that name),
    qualified by the concurrent chat it works in, if any."""
    return lane_for(instance_lane(agent, agent_name(agent)))


def lane_for(name: str) -> str:
    """*name*'s lane, qualified by the concurrent chat it works in, if any."""
    chat = _concurrent_chat.get()
    return name if chat is None else f"chat#{chat}/{name}"


def chat_sequence() -> str:
    """The causal sequence seeded ids are drawn in (model/seeded_ids.py): the concurrent
    chat this context runs in, else `main` (chats run one after another there)."""
    chat = _concurrent_chat.get()
    return "main" if chat is None else f"chat#{chat}"


@contextmanager
def concurrent_chat(chat_id: Any) -> Iterator[None]:
    """The block is one chat of `a_initiate_chats` (which gives every chat a chat_id)."""
    if chat_id is None or _concurrent_chat.get() is not None:  # nested chats: same actor
        yield
        return
    token = _concurrent_chat.set(chat_id)
    try:
        yield
    finally:
        _concurrent_chat.reset(token)
