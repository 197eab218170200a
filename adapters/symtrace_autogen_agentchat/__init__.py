"""symtrace adapter for AutoGen AgentChat / Magentic-One (`autogen-agentchat==0.7.5`)."""

from __future__ import annotations

from collections.abc import Sequence

from symtrace.adapter import Hook, PatchingAdapter


class AgentChatAdapter(PatchingAdapter):
    name = "autogen_agentchat"
    module = "autogen_agentchat"
    distribution = "autogen-agentchat"
    requires = "autogen-agentchat==0.7.5"

    @staticmethod
    def supported(version: str) -> bool:
        return version == "0.7.5"

    def hooks(self) -> Sequence[Hook]:
        return ()
