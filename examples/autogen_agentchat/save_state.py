"""save_state / load_state: a team stops after one round, its state is saved as JSON, and a
rebuilt team (new agent instances with the same names) loads it and carries on.

The rebuilt agents are new instances: symtrace gives them lanes `writer@2`, `critic@2`.

    OPENAI_BASE_URL=... OPENAI_API_KEY=x python examples/autogen_agentchat/save_state.py
"""

from __future__ import annotations

import asyncio
import json

from agentchat_common import assistants, model_client, show, transcript
from autogen_agentchat.conditions import MaxMessageTermination, TextMentionTermination
from autogen_agentchat.teams import RoundRobinGroupChat
from autogen_ext.models.openai import OpenAIChatCompletionClient

PROMPTS = {
    "writer": "You are the writer. Write one sentence; revise it when the critic asks.",
    "critic": "You are the critic. Say REVISE with a reason, or APPROVE.",
}


def make_team(client: OpenAIChatCompletionClient) -> RoundRobinGroupChat:
    return RoundRobinGroupChat(
        assistants(client, PROMPTS),
        termination_condition=TextMentionTermination("APPROVE") | MaxMessageTermination(3),
    )


async def run() -> list[str]:
    client = model_client()
    team = make_team(client)
    first = await team.run(task="One sentence about Sintra.")
    saved = json.dumps(await team.save_state())  # what a program would persist
    rebuilt = make_team(client)
    await rebuilt.load_state(json.loads(saved))
    second = await rebuilt.run()  # no new task: continue where the saved team stopped
    await client.close()
    return transcript([first, second])


if __name__ == "__main__":
    show(asyncio.run(run()))
