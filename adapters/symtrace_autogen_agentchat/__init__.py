"""symtrace adapter for AutoGen AgentChat and Magentic-One (`autogen-agentchat==0.7.5`).

Armed when `autogen_agentchat` is first imported; it then patches the hook table in
`_hooks.py` (agents' turns, team managers' own model calls, tool boundaries, the tiktoken
side channel, final results). Importing this package imports no framework.

    symtrace record -o bundles/run -- python app.py          # picks the adapter up by itself
    with symtrace.record("bundles/run", adapters=["autogen_agentchat"]): ...

See docs/adapters/autogen_agentchat.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from importlib import metadata

from symtrace.errors import AdapterUnavailable
from symtrace.frameworks.contract import Hook, PatchingAdapter
from symtrace_autogen_agentchat._tokens import (
    TiktokenCacheError,
    encoding_cached,
    estimate_tokens,
    seed_tiktoken_cache,
)

VERSION = "0.7.5"
# The hook table reaches into all three distributions; they are released together.
COMPANIONS = ("autogen-core", "autogen-ext")


class AgentChatAdapter(PatchingAdapter):
    name = "autogen_agentchat"
    module = "autogen_agentchat"
    distribution = "autogen-agentchat"
    requires = f"autogen-agentchat=={VERSION} and autogen-ext[openai]=={VERSION}"
    extra = "autogen"

    @staticmethod
    def supported(version: str) -> bool:
        return version == VERSION

    def check_available(self) -> None:
        super().check_available()
        for distribution in (*COMPANIONS, "openai", "tiktoken"):
            try:
                version = metadata.version(distribution)
            except metadata.PackageNotFoundError as exc:
                raise AdapterUnavailable(
                    f"adapter {self.name!r} needs {self.requires}; {distribution} is not "
                    f"installed (pip install 'symtrace[autogen]')"
                ) from exc
            if distribution in COMPANIONS and version != VERSION:
                raise AdapterUnavailable(
                    f"adapter {self.name!r} supports {self.requires}; installed "
                    f"{distribution} is {version}"
                )

    def hooks(self) -> Sequence[Hook]:
        from symtrace_autogen_agentchat._hooks import hook_table

        return hook_table()


__all__ = [
    "AgentChatAdapter",
    "TiktokenCacheError",
    "encoding_cached",
    "estimate_tokens",
    "seed_tiktoken_cache",
]
