"""AgentChat user guide "Agents": an AssistantAgent with a web_search tool, `on_messages`.

Source: repository microsoft/autogen, path
python/packages/autogen-core/docs/src/user-guide/agentchat-user-guide/tutorial/agents.ipynb.
Re-typed from memory of that example; commit: unknown.

Changes from the published example:
- the model client points at OPENAI_BASE_URL (the embedded stub; `_client.py`);
- `web_search` returns its results as a list of dicts whose keys are not in sorted order
  (title, url, snippet) instead of one string: AgentChat shows the model `str()` of it, so a
  replay must serve the dicts in their own key order;
- the run prints each inner message's type and content and the final message's content
  instead of their reprs (which carry random message ids and timestamps);
- CORPUS_EDIT=1 changes the task (edited prompt).
"""

import asyncio

from _client import edited, model_client
from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.messages import TextMessage
from autogen_core import CancellationToken


# Define a tool that searches the web for information.
async def web_search(query: str) -> list[dict[str, str]]:
    """Find information on the web"""
    return [
        {"title": "AutoGen", "url": "https://microsoft.github.io/autogen/",
         "snippet": "AutoGen is a programming framework for building multi-agent applications."},
        {"title": "AgentChat", "url": "https://microsoft.github.io/autogen/stable/",
         "snippet": f"High-level API for {query}."},
    ]


async def assistant_run() -> None:
    client = model_client()
    agent = AssistantAgent(
        name="assistant",
        model_client=client,
        tools=[web_search],
        system_message="Use tools to solve tasks.",
    )
    response = await agent.on_messages(
        [TextMessage(content=edited("Find information on AutoGen", "Find information on AG2"),
                     source="user")],
        cancellation_token=CancellationToken(),
    )
    for message in response.inner_messages or []:
        print(type(message).__name__, message.content)
    print(response.chat_message.content)
    await client.close()


# Use asyncio.run(assistant_run()) when running in a script.
asyncio.run(assistant_run())
