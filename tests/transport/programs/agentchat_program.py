"""An AgentChat AssistantAgent on the openai SDK the environment resolved (2.x or 3.x).

usage: agentchat_program.py [TOPIC]   (the endpoint comes from OPENAI_BASE_URL)
"""

import asyncio
import os
import sys

from autogen_agentchat.agents import AssistantAgent
from autogen_ext.models.openai import OpenAIChatCompletionClient

TOPIC = sys.argv[1] if len(sys.argv) > 1 else "Lisbon"


def lookup(city: str) -> str:
    """Facts about a city."""
    return f"{city} has {len(city) * 7} bridges"


async def main() -> None:
    client = OpenAIChatCompletionClient(
        model="gpt-4o-mini", base_url=os.environ["OPENAI_BASE_URL"], api_key="sk-test",
        max_retries=0)
    agent = AssistantAgent("guide", model_client=client, tools=[lookup],
                           reflect_on_tool_use=True)
    result = await agent.run(task=f"Tell me about {TOPIC}")
    for message in result.messages:
        print(f"{message.source}: {message.to_text()}", flush=True)
    await client.close()


if __name__ == "__main__":
    asyncio.run(main())
