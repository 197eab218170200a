"""AG2 1.x: one `Agent` serving two customers at once (two concurrent `ask()`), then a summary."""

import asyncio

from ag2 import Agent
from ag2.config import OpenAIConfig

CUSTOMERS = ("Customer A: where is my order 1234?", "Customer B: my order 5557 is late.")


async def main() -> None:
    triage = Agent("triage", "You are the support triage agent.",
                   config=OpenAIConfig(model="gpt-4o-mini", max_retries=0))
    replies = await asyncio.gather(*(triage.ask(q) for q in CUSTOMERS))
    summary = await triage.ask("Summarise: " + " | ".join(str(r.body) for r in replies))
    print(summary.body)


if __name__ == "__main__":
    asyncio.run(main())
