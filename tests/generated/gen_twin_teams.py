"""Two instances of one AgentChat program part whose planners get the same text back.

`run()`: two round-robin teams of the same shape.

The shape the generated `round_robin` programs with `concurrent` draw (two instances of one
team at once), made deterministic: both planners ask `lookup("Porto")` and get the identical
"lookup found 7 facts about Porto", so one value has two producers, one in each team. The
teams run interleaved in a fixed order instead of concurrently (team A's planner, then all of
team B, then team A's researcher), so the producer that completed last before team A's
researcher reads the value is always team B's: the case that, drawn concurrently, depends on
which team's tool finished last.

`run_standalone()`: two same-named standalone assistants (the generated `single` programs
drawn `concurrent`, reflecting on tool use), one after the other: the second one's reflection
reads its own lookup, whose text the first one's produced too.

`SameLookup` is the stub's policy: a planner without a tool result asks `lookup("Porto")`
unless its request carries guidance; everything else answers a short text.

    OPENAI_BASE_URL=... OPENAI_API_KEY=x python tests/generated/gen_twin_teams.py \
        [--perturb] [--concurrent]

`--perturb` changes team B's researcher prompt (TWIN_TEAMS_PERTURB=1 does too, in-process);
`--concurrent` runs both teams at once (`asyncio.gather`, two turns each), as drawn.
"""

from __future__ import annotations

import asyncio
import os
import sys
import warnings
from typing import Any

import orjson

from symtrace.stub import Reply, ToolCall

warnings.filterwarnings("ignore", message="Pydantic serializer warnings")
MODEL = "gpt-4o-mini-2024-07-18"
TASK = "Plan a day in Porto."
GUIDANCE = "GUIDANCE: plan without looking anything up."
PERTURB_ENV = "TWIN_TEAMS_PERTURB"


class SameLookup:
    """Deterministic replies: planners look Porto up (same text in both teams)."""

    mode = "policy"

    def respond(self, body: dict[str, Any], call_index: int) -> Reply:
        text = orjson.dumps(body.get("messages", [])).decode()
        if body.get("tools") and "GUIDANCE" not in text and '"role":"tool"' not in text:
            return Reply(tool_calls=(ToolCall("lookup", '{"topic": "Porto"}'),))
        return Reply(content=f"Answer {call_index}: the plan holds.")


def lookup(topic: str) -> str:
    """Look up facts about a topic."""
    return f"lookup found 7 facts about {topic}"


async def _run(perturb: bool, concurrent: bool = False) -> list[str]:
    from autogen_agentchat.agents import AssistantAgent
    from autogen_agentchat.teams import RoundRobinGroupChat
    from autogen_core.tools import FunctionTool
    from autogen_ext.models.openai import OpenAIChatCompletionClient

    client = OpenAIChatCompletionClient(model=MODEL, max_retries=0,
                                        base_url=os.environ["OPENAI_BASE_URL"])

    def team(name: str, changed: bool = False) -> RoundRobinGroupChat:
        planner = AssistantAgent(
            "planner", model_client=client, system_message=f"You plan for team {name}.",
            tools=[FunctionTool(lookup, description="Look up facts.")])
        researcher = AssistantAgent(
            "researcher", model_client=client,
            system_message="You research." + (" Be brief." if changed else ""))
        return RoundRobinGroupChat([planner, researcher], max_turns=2 if concurrent else 1)

    first, second = team("A"), team("B", changed=perturb)
    lines = []
    if concurrent:  # the generated programs' shape: both teams at once, two turns each
        results = await asyncio.gather(first.run(task=TASK), second.run(task=TASK))
        return [f"{m.source}: {m.to_text()}" for r in results for m in r.messages]
    # team A's planner looks up; team B runs (its planner looks up the same); team A goes on:
    # its researcher reads team A's lookup, whose text team B's lookup produced last
    for step in (first.run(task=TASK), second.run(task=TASK), second.run(), first.run()):
        result = await step
        lines += [f"{m.source} {type(m).__name__}: {m.to_text()}" for m in result.messages]
    await client.close()
    return lines


def run() -> list[str]:
    return asyncio.run(_run(perturb=os.environ.get(PERTURB_ENV) == "1"))


async def _run_standalone() -> list[str]:
    from autogen_agentchat.agents import AssistantAgent
    from autogen_core.tools import FunctionTool
    from autogen_ext.models.openai import OpenAIChatCompletionClient

    client = OpenAIChatCompletionClient(model=MODEL, max_retries=0,
                                        base_url=os.environ["OPENAI_BASE_URL"])
    lines = []
    for _ in range(2):
        planner = AssistantAgent(
            "planner", model_client=client, reflect_on_tool_use=True,
            tools=[FunctionTool(lookup, description="Look up facts.")])
        result = await planner.run(task=TASK)
        lines += [f"{m.source} {type(m).__name__}: {m.to_text()}" for m in result.messages]
    await client.close()
    return lines


def run_standalone() -> list[str]:
    return asyncio.run(_run_standalone())


if __name__ == "__main__":
    print("\n".join(asyncio.run(_run(perturb="--perturb" in sys.argv[1:],
                                      concurrent="--concurrent" in sys.argv[1:]))))
