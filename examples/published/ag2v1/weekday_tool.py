"""AG2 1.x README "Tools": an agent with an async `@tool` that finds a date's weekday.

Source: PyPI distribution ag2 1.2.1, its README (the package's long description, installed
as ag2-1.2.1.dist-info/METADATA, the `get_weekday` example); repository ag2ai/ag2,
README.md; commit: unknown (the installed 1.2.1 release).

Changes from the published example:
- `OpenAIConfig(..., max_retries=0)`: the endpoint is OPENAI_BASE_URL (the embedded stub);
- the tool prints what it does (a tool that prints: replay serves its result without
  running it and writes its output back);
- CORPUS_EDIT=1 changes the question (edited prompt).
"""

import asyncio
import os
from datetime import datetime

from ag2 import Agent, tool
from ag2.config import OpenAIConfig


@tool
async def get_weekday(date_string: str) -> str:
    """Get the day of the week for a given date, formatted as YYYY-MM-DD."""
    print(f"get_weekday: parsing {date_string}")
    return datetime.strptime(date_string, "%Y-%m-%d").strftime("%A")


date_agent = Agent(
    "date_agent",
    prompt="You find the day of the week for a given date.",
    config=OpenAIConfig(model="gpt-4o-mini", max_retries=0),
    tools=[get_weekday],
)


async def main() -> None:
    reply = await date_agent.ask("I was born on 1995-03-25, what day was it?"
                                 if os.environ.get("CORPUS_EDIT") != "1"
                                 else "I was born on 1995-03-26, what day was it?")
    print(reply.body)


asyncio.run(main())
