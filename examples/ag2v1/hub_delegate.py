"""AG2 1.x Network: an agent asks another one itself. Both are registered on a hub; the
program asks the planner, whose model calls the Network plugin's `delegate` tool to consult the
reviewer over a one-shot channel; the reviewer's turn (started by the hub) answers, and the
planner writes the final reply from it.

    export OPENAI_BASE_URL=http://127.0.0.1:PORT/v1 OPENAI_API_KEY=x
    python examples/ag2v1/hub_delegate.py
"""

from __future__ import annotations

import asyncio
import sys

from ag2 import Agent
from ag2.knowledge import MemoryKnowledgeStore
from ag2.network import Hub
from ag2v1_common import config, describe, print_outcome

QUESTION = "Draft a one-line opener for a lesson on the solar system, checked by the reviewer."
PLANNER_PROMPT = "You plan school lessons. Ask the reviewer before you answer."
REVIEWER_PROMPT = "You review lesson plans. Reply in one short sentence."


async def main() -> int:
    hub = await Hub.open(MemoryKnowledgeStore(), ttl_sweep_interval=0)
    try:
        planner = await hub.register(Agent("planner", PLANNER_PROMPT, config=config()))
        await hub.register(Agent("reviewer", REVIEWER_PROMPT, config=config()))
        reply = await planner.agent.ask(QUESTION)
        events = await reply.history.get_events()
        print_outcome(reply.body or "", [line for line in map(describe, events) if line])
    finally:
        await hub.close()
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
