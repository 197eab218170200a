"""A GraphFlow fan-out: the drafter's text goes to two reviewers at once, the editor merges.

    drafter -> (legal_reviewer, style_reviewer) -> editor

The reviewers run concurrently; whichever finishes first is first in the editor's context, so
the editor's request depends on their completion order. When recorded against a stub whose
legal reviewer is slower (scripts/graph_fanout.latency.json), the style review comes first.

    OPENAI_BASE_URL=... OPENAI_API_KEY=x python examples/autogen_agentchat/graph_fanout.py
"""

from __future__ import annotations

import asyncio

from agentchat_common import assistants, model_client, show, transcript
from autogen_agentchat.teams import DiGraphBuilder, GraphFlow

PROMPTS = {
    "drafter": "You are the drafter. Draft a one-paragraph city guide.",
    "legal_reviewer": "You are the legal reviewer. Flag claims that need a source.",
    "style_reviewer": "You are the style reviewer. Comment on tone and length.",
    "editor": "You are the editor. Merge the reviews into the final guide.",
}


async def run() -> list[str]:
    client = model_client()
    agents = {agent.name: agent for agent in assistants(client, PROMPTS)}
    builder = DiGraphBuilder()
    for agent in agents.values():
        builder.add_node(agent)
    builder.add_edge(agents["drafter"], agents["legal_reviewer"])
    builder.add_edge(agents["drafter"], agents["style_reviewer"])
    builder.add_edge(agents["legal_reviewer"], agents["editor"])
    builder.add_edge(agents["style_reviewer"], agents["editor"])
    team = GraphFlow(builder.get_participants(), graph=builder.build())
    result = await team.run(task="Write a short city guide to Porto.")
    await client.close()
    return transcript([result])


if __name__ == "__main__":
    show(asyncio.run(run()))
