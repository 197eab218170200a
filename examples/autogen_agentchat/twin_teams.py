"""Two teams run concurrently, each with an agent named "writer" and one named "critic".

Same-named agents are different actors: symtrace gives the second instance of each name its
own lane (`writer@2`, `critic@2`, in creation order), so their calls never share a lane.

    OPENAI_BASE_URL=... OPENAI_API_KEY=x python examples/autogen_agentchat/twin_teams.py
"""

from __future__ import annotations

import asyncio

from agentchat_common import model_client, show, system_message, transcript
from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.conditions import MaxMessageTermination, TextMentionTermination
from autogen_agentchat.teams import RoundRobinGroupChat
from autogen_ext.models.openai import OpenAIChatCompletionClient


def make_team(client: OpenAIChatCompletionClient, city: str) -> RoundRobinGroupChat:
    writer = AssistantAgent("writer", model_client=client, system_message=system_message(
        "writer", f"You are the writer for {city}. Write one sentence."))
    critic = AssistantAgent("critic", model_client=client, system_message=system_message(
        "critic", "You are the critic. Reply APPROVE when the sentence names a sight."))
    return RoundRobinGroupChat(
        [writer, critic],
        termination_condition=TextMentionTermination("APPROVE") | MaxMessageTermination(5),
    )


async def run() -> list[str]:
    client = model_client()
    lisbon, porto = make_team(client, "Lisbon"), make_team(client, "Porto")
    results = await asyncio.gather(
        lisbon.run(task="A sentence about Lisbon."), porto.run(task="A sentence about Porto.")
    )
    await client.close()
    return transcript(results)


if __name__ == "__main__":
    show(asyncio.run(run()))
