"""A SelectorGroupChat: the team's model picks each next speaker among three agents.

The selector's own model calls ("who speaks next?") are framework-internal calls; symtrace
attributes them to SelectorGroupChatManager with reason speaker_selection.

    OPENAI_BASE_URL=... OPENAI_API_KEY=x python examples/autogen_agentchat/selector.py
"""

from __future__ import annotations

import asyncio

from agentchat_common import model_client, show, stable_number, system_message, transcript
from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.conditions import MaxMessageTermination, TextMentionTermination
from autogen_agentchat.teams import SelectorGroupChat

TOOL_RUNS: list[str] = []


def get_weather(city: str) -> str:
    """Typical weather for a city."""
    TOOL_RUNS.append(f"get_weather({city})")
    return f"{city}: {stable_number(city, 8, 31)} C"


def convert_currency(amount: float, currency: str) -> str:
    """Convert an amount of EUR into another currency."""
    TOOL_RUNS.append(f"convert_currency({amount}, {currency})")
    rate = stable_number(currency, 50, 200) / 100
    return f"{amount} EUR = {round(float(amount) * rate, 2)} {currency}"


async def run() -> list[str]:
    client = model_client()
    planner = AssistantAgent(
        "planner", model_client=client, description="Breaks the task into steps.",
        system_message="You are the planner. List the steps, starting with PLAN:",
    )
    researcher = AssistantAgent(
        "researcher", model_client=client, description="Looks facts up with tools.",
        tools=[get_weather, convert_currency], reflect_on_tool_use=True,
        system_message="You are the researcher. Use the tools, then summarise the facts.",
    )
    writer = AssistantAgent(
        "writer", model_client=client, description="Writes the final answer.",
        system_message=system_message(
            "writer", "You are the writer. Answer the user from the facts; end with TERMINATE."),
    )
    team = SelectorGroupChat(
        [planner, researcher, writer],
        model_client=client,
        termination_condition=TextMentionTermination("TERMINATE") | MaxMessageTermination(12),
    )
    result = await team.run(task="Plan a day in Lisbon on a budget of 200 EUR, in USD.")
    await client.close()
    return transcript([result])


if __name__ == "__main__":
    show(asyncio.run(run()))
