"""A GraphFlow with conditional edges and a loop: the critic sends the draft back to the
writer ("REVISE") until it approves ("APPROVE"), then the publisher finishes.

    writer -> critic -REVISE-> writer
                     -APPROVE-> publisher

    OPENAI_BASE_URL=... OPENAI_API_KEY=x python examples/autogen_agentchat/graph_conditional.py
"""

from __future__ import annotations

import asyncio

from agentchat_common import assistants, model_client, show, transcript
from autogen_agentchat.conditions import MaxMessageTermination
from autogen_agentchat.teams import DiGraphBuilder, GraphFlow

PROMPTS = {
    "writer": "You are the writer. Write a slogan; revise it when asked.",
    "critic": "You are the critic. Say REVISE with a reason, or APPROVE.",
    "publisher": "You are the publisher. Announce the approved slogan.",
}


async def run() -> list[str]:
    client = model_client()
    writer, critic, publisher = assistants(client, PROMPTS)
    builder = DiGraphBuilder()
    builder.add_node(writer).add_node(critic).add_node(publisher)
    builder.add_edge(writer, critic)
    builder.add_edge(critic, writer, condition="REVISE")
    builder.add_edge(critic, publisher, condition="APPROVE")
    builder.set_entry_point(writer)
    team = GraphFlow(builder.get_participants(), graph=builder.build(),
                     termination_condition=MaxMessageTermination(10))
    result = await team.run(task="A slogan for Lisbon's ferries.")
    await client.close()
    return transcript([result])


if __name__ == "__main__":
    show(asyncio.run(run()))
