"""Chats run concurrently (`a_initiate_chats`): two independent research chats at once, then a
writer chat that waits for both and gets their summaries as carryover.

Both researchers come from one factory and share the name "researcher". The user proxy
starts all three chats and runs the researchers' weather tool. The Lisbon and Porto
chats have no prerequisites, so AG2 runs them at the same time (the Lisbon tool is slower, so
they finish out of order); each ends with a `reflection_with_llm` summary the user proxy asks
for. The writer chat lists both as prerequisites: its opening message carries their
summaries, in prerequisite order.

    export OPENAI_BASE_URL=http://127.0.0.1:PORT/v1 OPENAI_API_KEY=x
    python examples/ag2/chats_async.py
"""

from __future__ import annotations

import asyncio
import sys
from typing import Annotated

from ag2_common import llm_config, print_outcome
from autogen import AssistantAgent, UserProxyAgent, register_function

SUMMARY_PROMPT = "Summarise the facts above in one sentence."
WRITER_QUESTION = "Which city is warmer?"
DELAYS = {"Lisbon": 0.2}


async def lookup_weather(city: Annotated[str, "city name"]) -> str:
    await asyncio.sleep(DELAYS.get(city, 0.0))  # a slow weather service for Lisbon
    return f"{city}: {19 if city == 'Lisbon' else 16}°C"


def researcher(city: str, user: UserProxyAgent) -> AssistantAgent:
    agent = AssistantAgent("researcher", llm_config=llm_config(),  # one name, two agents
                           system_message=f"You are the {city} researcher. Use the tool.")
    register_function(lookup_weather, caller=agent, executor=user,
                      description="Typical weather for a city")
    return agent


async def main() -> int:
    user = UserProxyAgent("user_proxy", human_input_mode="NEVER", code_execution_config=False)
    writer = AssistantAgent("writer", system_message="You are the writer. Compare cities.",
                            llm_config=llm_config())
    summary = {"summary_method": "reflection_with_llm",
               "summary_args": {"summary_prompt": SUMMARY_PROMPT}}
    results = await user.a_initiate_chats([
        {"chat_id": 1, "recipient": researcher("Lisbon", user), "message": "Weather in Lisbon?",
         "max_turns": 2, **summary},
        {"chat_id": 2, "recipient": researcher("Porto", user), "message": "Weather in Porto?",
         "max_turns": 2, **summary},
        {"chat_id": 3, "recipient": writer, "message": WRITER_QUESTION,
         "max_turns": 1, "prerequisites": [1, 2], "summary_method": "last_msg"},
    ])
    print_outcome(results[3].summary,
                  [m for chat_id in sorted(results) for m in results[chat_id].chat_history])
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
