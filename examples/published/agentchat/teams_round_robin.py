"""AgentChat user guide "Teams": a primary agent and a critic in a RoundRobinGroupChat.

Source: repository microsoft/autogen, path
python/packages/autogen-core/docs/src/user-guide/agentchat-user-guide/tutorial/teams.ipynb.
Re-typed from memory of that example; commit: unknown.

Changes from the published example:
- the model client points at OPENAI_BASE_URL (the embedded stub; `_client.py`);
- the termination is `TextMentionTermination("APPROVE") | MaxMessageTermination(6)` (a cap);
- CORPUS_EDIT=1 asks for a poem about winter (edited prompt).
"""

import asyncio

from _client import edited, model_client
from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.conditions import MaxMessageTermination, TextMentionTermination
from autogen_agentchat.teams import RoundRobinGroupChat
from autogen_agentchat.ui import Console


async def main() -> None:
    client = model_client()
    # Create the primary agent.
    primary_agent = AssistantAgent(
        "primary",
        model_client=client,
        system_message="You are a helpful AI assistant.",
    )

    # Create the critic agent.
    critic_agent = AssistantAgent(
        "critic",
        model_client=client,
        system_message="Provide constructive feedback. Respond with 'APPROVE' to when your feedbacks are addressed.",
    )

    # Define a termination condition that stops the task if the critic approves.
    text_termination = TextMentionTermination("APPROVE") | MaxMessageTermination(6)

    # Create a team with the primary and critic agents.
    team = RoundRobinGroupChat([primary_agent, critic_agent], termination_condition=text_termination)

    await Console(team.run_stream(task=edited("Write a short poem about the fall season.",
                                              "Write a short poem about the winter season.")))
    await client.close()


asyncio.run(main())
