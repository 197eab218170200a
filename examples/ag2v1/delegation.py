"""Two AG2 1.x agents: a writer that streams its answer asks a researcher (`as_tool`), whose
weather tool raises for one of the two cities it is asked about.

The writer's model asks the researcher; the researcher's model calls `lookup_weather` twice in
one message (run concurrently); the Porto call raises `StationClosed`, which AG2 shows the
model as a traceback; the researcher answers with what it has, and the writer streams the
final sentence.

    export OPENAI_BASE_URL=http://127.0.0.1:PORT/v1 OPENAI_API_KEY=x
    python examples/ag2v1/delegation.py
"""

from __future__ import annotations

import asyncio
import sys

from ag2 import Agent, MemoryStream, tool
from ag2.events import ModelMessageChunk
from ag2v1_common import config, describe, print_chunk, print_outcome

QUESTION = "Is it warmer in Lisbon or in Porto today?"
WRITER_PROMPT = "You are the writer. Ask the researcher for the facts, then answer in one sentence."
RESEARCHER_PROMPT = "You are the researcher. Look up the weather of every city you are asked about."
READINGS = {"Lisbon": 19, "Faro": 22}


class StationClosed(RuntimeError):
    """The city's weather station did not answer."""


def _reading(city: str) -> int:
    if city not in READINGS:
        raise StationClosed(f"the {city} station is closed")
    return READINGS[city]


@tool
def lookup_weather(city: str) -> str:
    """Current temperature of a city."""
    return f"{city}: {_reading(city)}°C"


async def main() -> int:
    researcher = Agent("researcher", RESEARCHER_PROMPT, config=config(), tools=[lookup_weather])
    writer = Agent(
        "writer", WRITER_PROMPT, config=config(streaming=True),
        tools=[researcher.as_tool(description="Ask the researcher for facts.")],
    )
    stream = MemoryStream()
    stream.where(ModelMessageChunk).subscribe(print_chunk)
    reply = await writer.ask(QUESTION, stream=stream)
    events = await reply.history.get_events()
    lines = [line for line in map(describe, events) if line is not None]
    print_outcome(reply.body or "", lines)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
