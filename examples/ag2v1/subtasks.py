"""AG2 1.x sub-tasks: a planner with `tasks=TaskConfig()` fans out two sub-tasks at once
(`run_subtasks`, parallel); AG2 builds one short-lived agent per sub-task, each calls the
weather tool it inherits, and the planner writes the answer from both results.

    export OPENAI_BASE_URL=http://127.0.0.1:PORT/v1 OPENAI_API_KEY=x
    python examples/ag2v1/subtasks.py
"""

from __future__ import annotations

import asyncio
import sys

from ag2 import Agent, TaskConfig, tool
from ag2v1_common import config, describe, print_outcome

QUESTION = "Compare today's weather in Lisbon and Faro."
PLANNER_PROMPT = "You are the planner. Split the question into sub-tasks, then answer briefly."
TASK_PROMPT = "You are a task agent. Use the weather tool and report the reading."
READINGS = {"Lisbon": 19, "Faro": 22}


def _reading(city: str) -> int:
    return READINGS[city]


@tool
def lookup_weather(city: str) -> str:
    """Current temperature of a city."""
    return f"{city}: {_reading(city)}°C"


async def main() -> int:
    planner = Agent(
        "planner", PLANNER_PROMPT, config=config(), tools=[lookup_weather],
        tasks=TaskConfig(prompt=TASK_PROMPT),
    )
    reply = await planner.ask(QUESTION)
    events = await reply.history.get_events()
    lines = [line for line in map(describe, events) if line is not None]
    print_outcome(reply.body or "", lines)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
