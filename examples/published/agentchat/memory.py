"""AgentChat user guide "Memory and RAG": ListMemory with user preferences and a weather tool.

Source: repository microsoft/autogen, path
python/packages/autogen-core/docs/src/user-guide/agentchat-user-guide/memory.ipynb.
Re-typed from memory of that example; commit: unknown.

Changes from the published example:
- the model client points at OPENAI_BASE_URL (the embedded stub; `_client.py`);
- `get_weather` returns a dict whose keys are not in sorted order (city, temperature,
  units, condition) instead of an f-string, and prints the units it uses;
- CORPUS_EDIT=1 stores another preference (edited prompt); the memory query print is kept.
"""

import asyncio

from _client import edited, model_client
from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.ui import Console
from autogen_core.memory import ListMemory, MemoryContent, MemoryMimeType


async def get_weather(city: str, units: str = "imperial") -> dict[str, object]:
    print(f"units: {units}")
    if units == "imperial":
        return {"city": city, "temperature": 73.0, "units": "°F", "condition": "Sunny"}
    elif units == "metric":
        return {"city": city, "temperature": 23.0, "units": "°C", "condition": "Sunny"}
    else:
        return {"city": city, "temperature": None, "units": units, "condition": "unknown"}


async def main() -> None:
    # Initialize user memory
    user_memory = ListMemory()

    # Add user preferences to memory
    await user_memory.add(MemoryContent(
        content=edited("The weather should be in metric units", "The weather should be in kelvin"),
        mime_type=MemoryMimeType.TEXT))

    await user_memory.add(MemoryContent(content="Meal recipe must be vegan",
                                        mime_type=MemoryMimeType.TEXT))

    client = model_client()
    assistant_agent = AssistantAgent(
        name="assistant_agent",
        model_client=client,
        tools=[get_weather],
        memory=[user_memory],
    )

    # Run the agent with a task.
    stream = assistant_agent.run_stream(task="What is the weather in New York?")
    await Console(stream)
    await client.close()


asyncio.run(main())
