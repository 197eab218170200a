"""A sequential GraphFlow: writer -> editor -> publisher, each seeing the previous output.

    OPENAI_BASE_URL=... OPENAI_API_KEY=x python examples/autogen_agentchat/graph_sequential.py
"""

from __future__ import annotations

import asyncio
import itertools

from agentchat_common import assistants, model_client, show, transcript
from autogen_agentchat.teams import DiGraphBuilder, GraphFlow

PROMPTS = {
    "writer": "You are the writer. Write two sentences about the topic.",
    "editor": "You are the editor. Tighten the writer's text.",
    "publisher": "You are the publisher. Add a headline to the edited text.",
}


async def run() -> list[str]:
    client = model_client()
    agents = assistants(client, PROMPTS)
    builder = DiGraphBuilder()
    for agent in agents:
        builder.add_node(agent)
    for source, target in itertools.pairwise(agents):
        builder.add_edge(source, target)
    team = GraphFlow(builder.get_participants(), graph=builder.build())
    result = await team.run(task="Topic: the trams of Lisbon.")
    await client.close()
    return transcript([result])


if __name__ == "__main__":
    show(asyncio.run(run()))
