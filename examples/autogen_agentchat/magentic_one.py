"""A MagenticOneGroupChat: an orchestrator plans, keeps a progress ledger, and replans.

Two agents (a researcher with tools, a writer). The orchestrator's own model calls are the
facts and plan of its task ledger (planning), one progress ledger per step, and, after a
stall (max_stalls=1 here), updated facts and a new plan (replanning), then the final answer.

    OPENAI_BASE_URL=... OPENAI_API_KEY=x python examples/autogen_agentchat/magentic_one.py
"""

from __future__ import annotations

import asyncio

from agentchat_common import model_client, show, stable_number, transcript
from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.teams import MagenticOneGroupChat

TOOL_RUNS: list[str] = []


def get_population(city: str) -> str:
    """The population of a city."""
    TOOL_RUNS.append(f"get_population({city})")
    return f"{city}: {stable_number(city, 100, 900) * 1000} people"


def get_area(city: str) -> str:
    """The area of a city in square kilometres."""
    TOOL_RUNS.append(f"get_area({city})")
    return f"{city}: {stable_number(city + 'area', 50, 150)} km2"


async def run() -> list[str]:
    client = model_client()
    researcher = AssistantAgent(
        "researcher", model_client=client, description="Looks facts up with tools.",
        tools=[get_population, get_area], reflect_on_tool_use=True,
        system_message="You are the researcher. Use the tools, then report the numbers.",
    )
    writer = AssistantAgent(
        "writer", model_client=client, description="Computes and writes the answer.",
        system_message="You are the writer. Compute what is asked from the facts you are given.",
    )
    team = MagenticOneGroupChat(
        [researcher, writer], model_client=client, max_turns=10, max_stalls=1
    )
    result = await team.run(task="What is the population density of Lisbon?")
    await client.close()
    return transcript([result])


if __name__ == "__main__":
    show(asyncio.run(run()))
