"""A RoundRobinGroupChat: a writer drafts, a critic reviews, until the critic approves.

    OPENAI_BASE_URL=... OPENAI_API_KEY=x python examples/autogen_agentchat/round_robin.py

ROUND_ROBIN_CRITIC_PROMPT replaces the critic's system message (the divergent reference
bundle is recorded with it set, to show what replay says when a prompt changed).
"""

from __future__ import annotations

import asyncio
import os

from agentchat_common import model_client, show, transcript
from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.conditions import MaxMessageTermination, TextMentionTermination
from autogen_agentchat.teams import RoundRobinGroupChat

CRITIC_PROMPT = (
    "You are the critic. Review the writer's draft in one or two sentences. "
    "Reply APPROVE when it is ready."
)


async def run() -> list[str]:
    client = model_client()
    writer = AssistantAgent(
        "writer",
        model_client=client,
        system_message="You are the writer. Write a three-sentence travel blurb; revise it "
        "when the critic asks.",
    )
    critic = AssistantAgent(
        "critic",
        model_client=client,
        system_message=os.environ.get("ROUND_ROBIN_CRITIC_PROMPT", CRITIC_PROMPT),
    )
    team = RoundRobinGroupChat(
        [writer, critic],
        termination_condition=TextMentionTermination("APPROVE") | MaxMessageTermination(7),
    )
    result = await team.run(task="Write a short blurb about Lisbon for a travel site.")
    await client.close()
    return transcript([result])


if __name__ == "__main__":
    show(asyncio.run(run()))
