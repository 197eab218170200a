"""A streaming model client and a tool that raises.

The agent streams its model output (server-sent events). The model asks for two orders in
one response; one lookup raises OrderNotFound, which AgentChat hands back to the model as an
error result, and the agent explains.

    OPENAI_BASE_URL=... OPENAI_API_KEY=x python examples/autogen_agentchat/streaming_tool_error.py
"""

from __future__ import annotations

import asyncio

from agentchat_common import model_client, show, transcript
from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.base import TaskResult
from autogen_agentchat.messages import ModelClientStreamingChunkEvent

TOOL_RUNS: list[str] = []
ORDERS = {"A-100": "shipped, arrives tomorrow", "B-200": "being packed"}


class OrderNotFound(LookupError):
    """No order with this id."""


def lookup_order(order_id: str) -> str:
    """The status of an order."""
    TOOL_RUNS.append(f"lookup_order({order_id})")
    if order_id not in ORDERS:
        raise OrderNotFound(f"no order {order_id}")
    return f"{order_id}: {ORDERS[order_id]}"


async def run() -> list[str]:
    client = model_client()
    agent = AssistantAgent(
        "support",
        model_client=client,
        tools=[lookup_order],
        reflect_on_tool_use=True,
        model_client_stream=True,
        system_message="You are a support agent. Look orders up, then answer.",
    )
    chunks: list[str] = []
    result: TaskResult | None = None
    async for item in agent.run_stream(task="Where are my orders A-100 and Z-999?"):
        if isinstance(item, ModelClientStreamingChunkEvent):
            chunks.append(item.content)
        elif isinstance(item, TaskResult):
            result = item
    assert result is not None
    await client.close()
    return [f"STREAMED: {''.join(chunks)}", *transcript([result])]


if __name__ == "__main__":
    show(asyncio.run(run()))
