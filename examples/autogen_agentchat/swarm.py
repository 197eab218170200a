"""A Swarm: the planner hands off to the booker (a handoff tool call), who books with a tool.

    OPENAI_BASE_URL=... OPENAI_API_KEY=x python examples/autogen_agentchat/swarm.py
"""

from __future__ import annotations

import asyncio

from agentchat_common import model_client, show, stable_number, system_message, transcript
from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.conditions import MaxMessageTermination, TextMentionTermination
from autogen_agentchat.teams import Swarm

TOOL_RUNS: list[str] = []


def book_room(city: str, nights: int) -> str:
    """Book a hotel room."""
    TOOL_RUNS.append(f"book_room({city}, {nights})")
    return f"ROOM-{stable_number(city, 100, 999)} booked in {city} for {nights} nights"


async def run() -> list[str]:
    client = model_client()
    planner = AssistantAgent(
        "planner", model_client=client, handoffs=["booker"],
        system_message=system_message(
            "planner", "You are the planner. Hand off to the booker for bookings."),
    )
    booker = AssistantAgent(
        "booker", model_client=client, tools=[book_room],
        system_message=system_message(
            "booker", "You are the booker. Book with the tool, then say TERMINATE."),
    )
    team = Swarm([planner, booker],
                 termination_condition=TextMentionTermination("TERMINATE")
                 | MaxMessageTermination(10))
    result = await team.run(task="Book me two nights in Lisbon.")
    await client.close()
    return transcript([result])


if __name__ == "__main__":
    show(asyncio.run(run()))
