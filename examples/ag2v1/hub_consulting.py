"""AG2 1.x Network: two agents registered on an in-process hub; the planner opens a
`consulting` channel to the reviewer (one question, one reply, then the channel closes), as
AG2's own README shows. The reviewer's turn is started by the hub, not by the program.

    export OPENAI_BASE_URL=http://127.0.0.1:PORT/v1 OPENAI_API_KEY=x
    python examples/ag2v1/hub_consulting.py
"""

from __future__ import annotations

import asyncio
import sys

from ag2 import Agent
from ag2.knowledge import MemoryKnowledgeStore
from ag2.network import EV_TEXT, Hub
from ag2v1_common import config, print_outcome

QUESTION = "What should a fourth-grade solar system lesson lead with?"
PLANNER_PROMPT = "You plan school lessons. Reply in one short sentence."
REVIEWER_PROMPT = "You critique lesson plans. Reply in one short sentence."


async def wait_for_texts(hub: Hub, channel_id: str, expected: int) -> list:
    """Poll the hub's write-ahead log until `expected` text messages are in it."""
    for _ in range(400):
        wal = await hub.read_wal(channel_id)
        texts = [e for e in wal if e.event_type == EV_TEXT]
        if len(texts) >= expected:
            return texts
        await asyncio.sleep(0.025)
    raise TimeoutError(f"fewer than {expected} messages on the channel")


async def main() -> int:
    hub = await Hub.open(MemoryKnowledgeStore(), ttl_sweep_interval=0)
    try:
        planner = await hub.register(Agent("planner", PLANNER_PROMPT, config=config()))
        reviewer = await hub.register(Agent("reviewer", REVIEWER_PROMPT, config=config()))
        channel = await planner.open(type="consulting", target="reviewer")
        await channel.send(QUESTION, audience=[reviewer.agent_id])
        texts = await wait_for_texts(hub, channel.channel_id, 2)
        names = {planner.agent_id: "planner", reviewer.agent_id: "reviewer"}
        lines = [f"{names[e.sender_id]}: {e.event_data['text']}" for e in texts]
        print_outcome(texts[-1].event_data["text"], lines)
    finally:
        await hub.close()
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
