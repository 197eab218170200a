"""symtrace adapter for classic AG2 (module `autogen`, PyPI `ag2>=0.13.3,<1`).

LLM values are captured by the core at the httpx transport (AG2 → openai SDK → httpx, also
for speaker selection and on the executor threads of the async API). This adapter adds what
only the framework knows, through the hook table below:

* attribution: which agent made each LLM call, on which lane, and why (_attribution.py),
  and which lanes caused it, through messages and chat results (_causes.py);
* tool boundaries at AG2's function-execution seam, sync and asyncio.gather (_tools.py);
* AG2's response cache as a recorded side channel (_cache.py);
* what a human types at an input prompt (_human_input.py);
* its nondeterminism: random speaker selection and event uuids (_nondeterminism.py);
* the final result: the summary of the outermost chat (_chat.py).

Importing this package does not import AG2; the hooks resolve when the adapter installs.
"""

from __future__ import annotations

from collections.abc import Sequence

from symtrace.errors import UnsupportedConstruct
from symtrace.frameworks.contract import Hook, PatchingAdapter
from symtrace_ag2 import (
    _attribution,
    _cache,
    _causes,
    _chat,
    _human_input,
    _nondeterminism,
    _tools,
)

AGENT = "autogen.agentchat.conversable_agent:ConversableAgent"
GROUP_CHAT = "autogen.agentchat.groupchat:GroupChat"

HOOKS: tuple[Hook, ...] = (
    Hook(f"{AGENT}.__init__", _attribution.registered_at_creation,
         "numbers same-named agent objects in construction order (lanes name, name@2, ...)"),
    Hook("autogen.oai.client:OpenAIWrapper.create", _attribution.llm_create,
         "every LLM call: agent=, lane and reason from the `agent=` argument; wraps `cache=`"),
    Hook(f"{AGENT}.a_generate_oai_reply", _attribution.a_generate_oai_reply,
         "an async reply's turn opens in the chat's task and is carried to AG2's executor "
         "thread (one agent in concurrent chats replays in either order)"),
    Hook(f"{AGENT}.receive", _causes.receiving,
         "a turn is caused by the message's sender and what caused it (dispatched_by lanes), "
         "with or without content"),
    Hook(f"{AGENT}.a_receive", _causes.a_receiving, "async twin: the turn's causes"),
    Hook(f"{AGENT}._reflection_with_llm", _attribution.reflection_summary,
         "reason=summary for reflection_with_llm chat summaries"),
    Hook(f"{GROUP_CHAT}.select_speaker", _attribution.select_speaker,
         "speaker selection runs as the GroupChatManager, reason=speaker_selection"),
    Hook(f"{GROUP_CHAT}.a_select_speaker", _attribution.a_select_speaker,
         "async speaker selection, same attribution"),
    Hook(f"{GROUP_CHAT}._create_internal_agents", _attribution.internal_agents,
         "marks the throwaway speaker_selection_agent (its calls run on executor threads)"),
    Hook(f"{AGENT}.execute_function", _tools.execute_function,
         "tool boundary: the registered function's call, sequential tool-call replies"),
    Hook(f"{AGENT}.a_execute_function", _tools.a_execute_function,
         "tool boundary: async tool-call replies (asyncio.gather), lane per call index"),
    Hook(f"{AGENT}.get_human_input", _human_input.get_human_input,
         "what a human types (human_input_mode ALWAYS/TERMINATE) is a boundary"),
    Hook(f"{AGENT}.a_get_human_input", _human_input.a_get_human_input,
         "async twin: the human's reply is recorded and served"),
    Hook(f"{GROUP_CHAT}.manual_select_speaker", _human_input.manual_select_speaker,
         "a manual speaker choice typed by the human is a boundary"),
    Hook("autogen.cache.cache:Cache.__enter__", _cache.cache_enter,
         "legacy cache_seed caches built inside create: lookups and stores are boundaries"),
    Hook(f"{GROUP_CHAT}.random_select_speaker", _nondeterminism.random_speaker,
         "the random speaker draw is served from the bundle"),
    Hook("autogen.events.base_event:uuid4", _nondeterminism.chat_uuid4,
         "event uuids (printed on termination) seeded from s0, per chat"),
    Hook(f"{AGENT}.initiate_chat", _chat.initiate_chat,
         "declares the outermost chat's summary as the final result"),
    Hook(f"{AGENT}.a_initiate_chat", _chat.a_initiate_chat,
         "async twin: declares the outermost chat's summary"),
    Hook("autogen.agentchat.conversable_agent:initiate_chats", _causes.sequence,
         "each chat of a sequence (and of nested chats) is caused by the chats it carries over"),
    Hook("autogen.agentchat.conversable_agent:a_initiate_chats",
         _chat.refusing_shared_recipients,
         "refuse concurrent chats with one recipient (UnsupportedConstruct) before any runs; "
         "each chat is caused by its prerequisites"),
)


class AG2Adapter(PatchingAdapter):
    name = "ag2"
    module = "autogen"
    distribution = "ag2"
    requires = "ag2>=0.13.3,<1"
    extra = "ag2-classic"

    @staticmethod
    def supported(version: str) -> bool:
        major, minor = (int(x) for x in version.split(".")[:2])
        return (0, 13) <= (major, minor) < (1, 0)

    def hooks(self) -> Sequence[Hook]:
        return HOOKS


__all__ = ["HOOKS", "AG2Adapter", "UnsupportedConstruct"]
