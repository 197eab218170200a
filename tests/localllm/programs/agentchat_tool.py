"""AutoGen AgentChat AssistantAgent with one tool (reflecting on its result), temperature 0."""

from __future__ import annotations

import asyncio
import sys

from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.messages import ToolCallExecutionEvent, ToolCallRequestEvent
from autogen_ext.models.openai import OpenAIChatCompletionClient
from local_common import MODEL, SYSTEM, TASK, api_key, base_url, summary, weather

MODEL_INFO = {"vision": False, "function_calling": True, "json_output": False,
              "family": "unknown", "structured_output": False}


async def get_weather(city: str) -> str:
    """Current weather of a city."""
    return weather(city)


async def run() -> None:
    client = OpenAIChatCompletionClient(model=MODEL, base_url=base_url(), api_key=api_key(),
                                        model_info=MODEL_INFO, temperature=0, max_retries=0)
    agent = AssistantAgent("assistant", model_client=client, tools=[get_weather],
                           system_message=SYSTEM, reflect_on_tool_use=True)
    result = await agent.run(task=TASK)
    await client.close()
    calls = [(c.name, c.arguments) for m in result.messages
             if isinstance(m, ToolCallRequestEvent) for c in m.content]
    results = sum(len(m.content) for m in result.messages
                  if isinstance(m, ToolCallExecutionEvent))
    last = result.messages[-1]
    summary("agentchat", calls, results, last.to_text() if last else None)


def main() -> int:
    asyncio.run(run())
    return 0


if __name__ == "__main__":
    sys.exit(main())
