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

Regular agent calls run on the agent's own lane (its name).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any
from weakref import WeakKeyDictionary

from symtrace import context
from symtrace_ag2._cache import CacheLens, inside_create

SPEAKER_SELECTION = "speaker_selection"
SUMMARY = "summary"
GROUP_CHAT = "group_chat"  # attribution when a GroupChat selects without a manager

# speaker_selection_agent -> name of the manager it selects for (weak: agents are throwaway)
_selection_owner: WeakKeyDictionary[Any, str] = WeakKeyDictionary()


def agent_name(agent: Any) -> str:
    name = getattr(agent, "name", None)
    return str(name) if name else type(agent).__name__


@contextmanager
def _attributed(caller: Any) -> Iterator[None]:
    if caller is None:  # a direct OpenAIWrapper user: keep whatever attribution is current
        yield
        return
    owner = _selection_owner.get(caller)
    if owner is not None:
        with context.agent(owner, reason=SPEAKER_SELECTION):
            yield
        return
    with context.agent(agent_name(caller), reason=context.current().reason):
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


def reflection_summary(original: Callable[..., Any]) -> Callable[..., Any]:
    """`ConversableAgent._reflection_with_llm`: the LLM call that writes a chat summary."""

    @functools.wraps(original)
    def _reflection_with_llm(self: Any, *args: Any, **kwargs: Any) -> Any:
        with context.reason(SUMMARY):
            return original(self, *args, **kwargs)

    return _reflection_with_llm


def select_speaker(original: Callable[..., Any]) -> Callable[..., Any]:
    """`GroupChat.select_speaker(last_speaker, selector)`: runs as the selecting manager."""

    @functools.wraps(original)
    def wrapper(self: Any, last_speaker: Any, selector: Any, *args: Any, **kwargs: Any) -> Any:
        with context.agent(_selector_name(selector), reason=SPEAKER_SELECTION):
            return original(self, last_speaker, selector, *args, **kwargs)

    return wrapper


def a_select_speaker(original: Callable[..., Any]) -> Callable[..., Any]:
    """`GroupChat.a_select_speaker`: async twin of select_speaker."""

    @functools.wraps(original)
    async def wrapper(self: Any, last_speaker: Any, selector: Any, *args: Any,
                      **kwargs: Any) -> Any:
        with context.agent(_selector_name(selector), reason=SPEAKER_SELECTION):
            return await original(self, last_speaker, selector, *args, **kwargs)

    return wrapper


def internal_agents(original: Callable[..., Any]) -> Callable[..., Any]:
    """`GroupChat._create_internal_agents`: remember whose selection the new agent makes."""

    @functools.wraps(original)
    def _create_internal_agents(self: Any, *args: Any, **kwargs: Any) -> Any:
        checking_agent, selection_agent = original(self, *args, **kwargs)
        selector = kwargs.get("selector", args[4] if len(args) > 4 else None)
        _selection_owner[selection_agent] = _selector_name(selector)
        return checking_agent, selection_agent

    return _create_internal_agents


def _selector_name(selector: Any) -> str:
    return agent_name(selector) if selector is not None else GROUP_CHAT
