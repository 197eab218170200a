"""Who makes each AG2 LLM call, on which lane, and why.

Every AG2 model call goes through `OpenAIWrapper.create(**config)`, which receives the calling
agent as `agent=`. Attribution is derived from that argument, not from ambient state: the
async API runs the sync client on executor threads (`run_in_executor` does not carry
contextvars), so anything set around `a_generate_reply` would be lost there.

Framework-internal calls get a reason:

* `speaker_selection`: GroupChat "auto" selection runs a throwaway two-agent chat
  (`checking_agent` → `speaker_selection_agent`, a new agent and client per selection). The
  selection agent is remembered when GroupChat creates it and its calls are attributed to the
  GroupChatManager that asked (agent and lane = the manager's name). `select_speaker` itself
  runs under the same attribution, so the random draw (see _nondeterminism.py) lands there too.
* `summary`: `summary_method="reflection_with_llm"` asks the model for a chat summary.

Regular agent calls run on the agent's own lane (_lanes.py). Every call also names the lanes
that caused it (`dispatched_by`, from the messages and chat results that led to it: _causes.py).
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any
from weakref import WeakKeyDictionary

from symtrace.frameworks.contract import context, instance_lane
from symtrace_ag2 import _causes
from symtrace_ag2._cache import CacheLens, inside_create
from symtrace_ag2._lanes import agent_name, lane_for, lane_of

__all__ = ["agent_name", "lane_for", "lane_of"]  # re-exported: _tools, _human_input, ...

SPEAKER_SELECTION = "speaker_selection"
SUMMARY = "summary"
GROUP_CHAT = "group_chat"  # attribution when a GroupChat selects without a manager

# speaker_selection_agent -> (name, lane) of the manager it selects for (weak: throwaway agents)
_selection_owner: WeakKeyDictionary[Any, tuple[str, str]] = WeakKeyDictionary()


def registered_at_creation(original: Callable[..., Any]) -> Callable[..., Any]:
    """`ConversableAgent.__init__`: number same-named agents in the order they are built."""

    @functools.wraps(original)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        instance_lane(self, agent_name(self))

    return __init__


@contextmanager
def _attributed(caller: Any) -> Iterator[None]:
    if caller is None:  # a direct OpenAIWrapper user: keep whatever attribution is current
        yield
        return
    causes = context.dispatched_by(_causes.of_call(caller))
    owner = _selection_owner.get(caller)
    if owner is not None:
        name, lane = owner
        with context.agent(name, lane=lane, reason=SPEAKER_SELECTION), causes:
            yield
        return
    with context.agent(agent_name(caller), lane=lane_of(caller),
                       reason=context.current().reason), causes:
        yield


def llm_create(original: Callable[..., Any]) -> Callable[..., Any]:
    """`OpenAIWrapper.create`: attribute the call to `agent=`; watch the cache it is given."""

    @functools.wraps(original)
    def create(self: Any, **config: Any) -> Any:
        if config.get("cache") is not None:
            config["cache"] = CacheLens.around(config["cache"])
        with inside_create(), _attributed(config.get("agent")):
            return original(self, **config)

    return create


def a_generate_oai_reply(original: Callable[..., Any]) -> Callable[..., Any]:
    """`ConversableAgent.a_generate_oai_reply`: AG2 runs the sync reply on an executor thread
    that does not carry the caller's context, so the turn its LLM call opened there was
    told apart by which pool thread ran it and when: two chats of one agent recorded one
    after the other on a reused thread replayed in one order only. The turn is opened here,
    in the chat's task (the cause), on the lane the thread's call is attributed to, and
    carried to the thread. Same work as AG2's own: the reply under the caller's IOStream."""

    @functools.wraps(original)
    async def a_generate_oai_reply(self: Any, messages: Any = None, sender: Any = None,
                                   config: Any = None, **kwargs: Any) -> Any:
        from autogen.io.base import IOStream

        name, lane = _selection_owner.get(self) or (agent_name(self),
                                                    instance_lane(self, agent_name(self)))
        iostream = IOStream.get_default()

        def reply() -> Any:
            with IOStream.set_default(iostream):
                return self.generate_oai_reply(messages=messages, sender=sender, config=config,
                                               **kwargs)

        with context.agent(name, lane=lane, reason=context.current().reason):
            run = context.carried()
            return await asyncio.get_running_loop().run_in_executor(None, run, reply)

    return a_generate_oai_reply


def reflection_summary(original: Callable[..., Any]) -> Callable[..., Any]:
    """`ConversableAgent._reflection_with_llm`: the LLM call that writes a chat summary."""

    @functools.wraps(original)
    def _reflection_with_llm(self: Any, *args: Any, **kwargs: Any) -> Any:
        with context.reason(SUMMARY):
            return original(self, *args, **kwargs)

    return _reflection_with_llm


def select_speaker(original: Callable[..., Any]) -> Callable[..., Any]:
    """`GroupChat.select_speaker(last_speaker, selector)`: runs as the selecting manager, caused
    by what caused the manager's turn (the speakers so far): a random draw after a live turn
    is live too, since the live chat may need more or fewer draws than the recording had."""

    @functools.wraps(original)
    def wrapper(self: Any, last_speaker: Any, selector: Any, *args: Any, **kwargs: Any) -> Any:
        name, lane = _selector(selector)
        with context.agent(name, lane=lane, reason=SPEAKER_SELECTION), \
                context.dispatched_by(_causes.of_call(selector)):
            return original(self, last_speaker, selector, *args, **kwargs)

    return wrapper


def a_select_speaker(original: Callable[..., Any]) -> Callable[..., Any]:
    """`GroupChat.a_select_speaker`: async twin of select_speaker."""

    @functools.wraps(original)
    async def wrapper(self: Any, last_speaker: Any, selector: Any, *args: Any,
                      **kwargs: Any) -> Any:
        name, lane = _selector(selector)
        with context.agent(name, lane=lane, reason=SPEAKER_SELECTION), \
                context.dispatched_by(_causes.of_call(selector)):
            return await original(self, last_speaker, selector, *args, **kwargs)

    return wrapper


def internal_agents(original: Callable[..., Any]) -> Callable[..., Any]:
    """`GroupChat._create_internal_agents`: remember whose selection the new agent makes."""

    @functools.wraps(original)
    def _create_internal_agents(self: Any, *args: Any, **kwargs: Any) -> Any:
        checking_agent, selection_agent = original(self, *args, **kwargs)
        selector = kwargs.get("selector", args[4] if len(args) > 4 else None)
        _selection_owner[selection_agent] = _selector(selector)
        return checking_agent, selection_agent

    return _create_internal_agents


def _selector(selector: Any) -> tuple[str, str]:
    """(name, lane) of the agent that selects the next speaker."""
    if selector is None:
        return GROUP_CHAT, lane_for(GROUP_CHAT)
    return agent_name(selector), lane_of(selector)
