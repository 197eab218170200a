"""AG2 1.x README "Multi-turn conversation": a reviewer agent asked twice, the follow-up in the
same conversation (`reply.ask`).

Source: PyPI distribution ag2 1.2.1, its README (the package's long description, installed
as ag2-1.2.1.dist-info/METADATA, the example after "Continue the same conversation");
repository ag2ai/ag2, README.md; commit: unknown (the installed 1.2.1 release).

Changes from the published example:
- `OpenAIConfig(..., max_retries=0)`: the endpoint is OPENAI_BASE_URL (the embedded stub),
  a failed request is the program's failure, not a hidden retry;
- CORPUS_EDIT=1 changes the follow-up question (edited prompt).
"""

import asyncio
import os

from ag2 import Agent
from ag2.config import OpenAIConfig

reviewer = Agent(
    "reviewer",
    prompt=(
        "You are a code reviewer. Analyze the provided code and suggest improvements. "
        "Do not generate code, only suggest improvements."
    ),
    config=OpenAIConfig(model="gpt-4o-mini", max_retries=0),
)


async def main() -> None:
    reply = await reviewer.ask("def fib(n): return n if n < 2 else fib(n-1) + fib(n-2)")
    print(reply.body)

    # Continue the same conversation — prior turns stay in scope.
    follow_up = await reply.ask("Which of those matters most for large n?"
                                if os.environ.get("CORPUS_EDIT") != "1"
                                else "Which of those matters least for small n?")
    print(follow_up.body)


asyncio.run(main())
