"""An AssistantAgent with two tools, run with `run` and then with `run_stream`.

The first task needs both tools: the model asks for them in one response (parallel tool
calls), AgentChat runs them concurrently, and the agent reflects on the results. The second
task continues the same conversation through `run_stream`.

    OPENAI_BASE_URL=... OPENAI_API_KEY=x python examples/autogen_agentchat/assistant_tools.py
"""

from __future__ import annotations

import asyncio

from agentchat_common import model_client, show, stable_number, transcript
from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.base import TaskResult

TOOL_RUNS: list[str] = []  # tool bodies that ran (tests check replay runs none)


def get_weather(city: str) -> str:
    """Typical weather for a city."""
    TOOL_RUNS.append(f"get_weather({city})")
    return f"{city}: {stable_number(city, 8, 31)} C, {stable_number(city + 'r', 0, 90)}% rain"


def get_exchange_rate(currency: str) -> str:
    """How much one EUR buys in another currency."""
    TOOL_RUNS.append(f"get_exchange_rate({currency})")
    return f"1 EUR = {stable_number(currency, 50, 200) / 100} {currency}"


async def run() -> list[str]:
    client = model_client()
    agent = AssistantAgent(
        "travel_agent",
        model_client=client,
        tools=[get_weather, get_exchange_rate],
        reflect_on_tool_use=True,
        system_message="You are a travel assistant. Use the tools, then answer briefly.",
    )
    first = await agent.run(task="What is the weather in Lisbon, and how many USD is 1 EUR?")
    second: TaskResult | None = None
    async for item in agent.run_stream(task="And the weather in Porto?"):
        if isinstance(item, TaskResult):
            second = item
    assert second is not None
    await client.close()
    return transcript([first, second])


if __name__ == "__main__":
    show(asyncio.run(run()))
