"""AgentChat user guide "Quickstart": a weather agent with a tool, streamed to the Console.

Source: repository microsoft/autogen, path
python/packages/autogen-core/docs/src/user-guide/agentchat-user-guide/quickstart.ipynb.
Re-typed from memory of that example; commit: unknown.

Changes from the published example:
- the model client points at OPENAI_BASE_URL (the embedded stub; `_client.py`);
- the tool prints the city it looks up (a tool that writes to the console);
- CORPUS_EDIT=1 asks about another city (edited prompt).
"""

import asyncio

from _client import edited, model_client
from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.ui import Console


# Define a tool that searches the web for information.
async def get_weather(city: str) -> str:
    """Get the weather for a given city."""
    print(f"Looking up the weather in {city}...")
    return f"The weather in {city} is 73 degrees and Sunny."


async def main() -> None:
    client = model_client()
    # Define an AssistantAgent with the model, tool, system message, and reflection enabled.
    # The system message instructs the agent via natural language.
    agent = AssistantAgent(
        name="weather_agent",
        model_client=client,
        tools=[get_weather],
        system_message="You are a helpful assistant.",
        reflect_on_tool_use=True,
        model_client_stream=True,  # Enable streaming tokens from the model client.
    )
    # Run the agent and stream the messages to the console.
    await Console(agent.run_stream(task=edited("What is the weather in New York?",
                                               "What is the weather in Boston?")))
    # Close the connection to the model client.
    await client.close()


asyncio.run(main())
