"""Shared by the AgentChat example programs: the model client and how a run is printed.

The programs know nothing about symtrace. Point them at any OpenAI-compatible endpoint:

    OPENAI_BASE_URL=http://127.0.0.1:PORT/v1 OPENAI_API_KEY=x \
        python examples/autogen_agentchat/assistant_tools.py

`scripts/<scenario>.json` holds a deterministic script for the stub endpoint
(`symtrace stub-llm --script examples/autogen_agentchat/scripts/<scenario>.json`).
"""

from __future__ import annotations

import hashlib
import os
import warnings
from collections.abc import Sequence
from typing import Any

from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.base import TaskResult
from autogen_agentchat.messages import (
    BaseChatMessage,
    StopMessage,
    ToolCallExecutionEvent,
    ToolCallRequestEvent,
)
from autogen_ext.models.openai import OpenAIChatCompletionClient

# openai's parse() result trips a pydantic serializer warning inside autogen-ext: noise here.
warnings.filterwarnings("ignore", message="Pydantic serializer warnings")

MODEL = os.environ.get("AUTOGEN_EXAMPLE_MODEL", "gpt-4o-mini-2024-07-18")


def model_client(**kwargs: Any) -> OpenAIChatCompletionClient:
    """A client for MODEL at OPENAI_BASE_URL (no retries: a failure shows at once)."""
    return OpenAIChatCompletionClient(model=MODEL, max_retries=0, **kwargs)


PERTURB_ENV = "AGENTCHAT_EXAMPLE_PERTURB"


def system_message(agent: str, text: str) -> str:
    """An agent's system message; AGENTCHAT_EXAMPLE_PERTURB=<agent> changes that one agent's
    (the tests' perturbation: strict replay must then fail at that agent's first call)."""
    if os.environ.get(PERTURB_ENV) == agent:
        return text + " Be brief."
    return text


def assistants(client: OpenAIChatCompletionClient, prompts: dict[str, str]
               ) -> list[AssistantAgent]:
    """One AssistantAgent per (name, system message), in order."""
    return [
        AssistantAgent(name, model_client=client, system_message=system_message(name, text))
        for name, text in prompts.items()
    ]


def stable_number(text: str, low: int, high: int) -> int:
    """A fake but deterministic data source for the example tools."""
    digest = hashlib.sha256(text.encode()).digest()
    return low + int.from_bytes(digest[:4], "big") % (high - low + 1)


def render(message: Any) -> str:
    """One transcript line; message ids and timestamps (uuid4, wall clock) are left out."""
    source = getattr(message, "source", "?")
    if isinstance(message, ToolCallRequestEvent):
        calls = ", ".join(f"{c.name}({c.arguments})" for c in message.content)
        return f"{source} -> {calls}"
    if isinstance(message, ToolCallExecutionEvent):
        results = "; ".join(
            f"{r.name}{' ERROR' if r.is_error else ''}: {r.content}" for r in message.content
        )
        return f"{source} <- {results}"
    return f"{source}: {message.to_text()}"


def final_text(result: TaskResult) -> str:
    for message in reversed(result.messages):
        if isinstance(message, BaseChatMessage) and not isinstance(message, StopMessage):
            return message.to_text()
    return ""


def transcript(results: Sequence[TaskResult]) -> list[str]:
    """Every message of every run, then the final output."""
    lines = [render(m) for result in results for m in result.messages]
    lines.append(f"STOP: {results[-1].stop_reason}")
    lines.append(f"FINAL: {final_text(results[-1])}")
    return lines


def show(lines: Sequence[str]) -> None:
    for line in lines:
        print(line)
