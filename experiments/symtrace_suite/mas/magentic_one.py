"""Magentic-One: an orchestrator that plans, keeps a progress ledger and delegates to an
assistant holding the tools (AutoGen AgentChat `MagenticOneGroupChat`).

The paper's Magentic-One shape (orchestrator-centred). The assistant may chain tool calls
within one turn (`max_tool_iterations`) and ends its turn with the FINAL ANSWER line; the
orchestrator's own final answer is the program's answer.

    python -m symtrace_suite.mas.magentic_one --task shop-007
"""

from __future__ import annotations

import asyncio
import functools
import sys
import warnings
from collections.abc import Callable
from typing import Any

from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.messages import BaseChatMessage
from autogen_agentchat.teams import MagenticOneGroupChat
from autogen_ext.models.openai import OpenAIChatCompletionClient

from symtrace_suite.mas.common import ANSWER_INSTRUCTION, Run, main
from symtrace_suite.mas.tools import TOOLS

# openai's parse() result trips a pydantic serializer warning inside autogen-ext: noise here.
warnings.filterwarnings("ignore", message="Pydantic serializer warnings")
# the default model name resolves to a dated one: a cost-estimation warning, noise here.
warnings.filterwarnings("ignore", message="Resolved model mismatch")

MAX_TURNS = 8
MAX_TOOL_ITERATIONS = 12


def threaded(fn: Callable[..., Any]) -> Callable[..., Any]:
    """*fn* as a coroutine run by `asyncio.to_thread`, which copies the context.

    AgentChat runs a sync tool with `loop.run_in_executor`, which does not: the httpx call
    inside the tool would then not be nested under the tool's boundary, and a replay (which
    skips the tool body) would wait for that call forever.
    """

    @functools.wraps(fn)
    async def call(*args: Any, **kwargs: Any) -> Any:
        return await asyncio.to_thread(fn, *args, **kwargs)

    return call


async def _run(run: Run) -> str:
    # the SDK's own retries of 429/5xx/timeouts stay on, as in a user's program
    client = OpenAIChatCompletionClient(model=run.model, temperature=0, seed=0)
    assistant = AssistantAgent(
        "assistant",
        model_client=client,
        tools=[threaded(fn) for fn in TOOLS],
        description="Queries the shop, wiki and routing services with tools.",
        system_message=f"You are the assistant. {ANSWER_INSTRUCTION}",
        max_tool_iterations=MAX_TOOL_ITERATIONS,
    )
    team = MagenticOneGroupChat([assistant], model_client=client, max_turns=MAX_TURNS, max_stalls=2)
    try:
        result = await team.run(task=run.prompt)
    finally:
        await client.close()
    for message in reversed(result.messages):
        if isinstance(message, BaseChatMessage):
            return message.to_text()
    return ""


def solve(run: Run) -> str:
    with warnings.catch_warnings():  # also when a test harness reset the module's filters
        warnings.filterwarnings("ignore", message="Resolved model mismatch")
        warnings.filterwarnings("ignore", message="Pydantic serializer warnings")
        return asyncio.run(_run(run))


if __name__ == "__main__":
    sys.exit(main("symtrace_suite.mas.magentic_one", solve))
