"""Two-agent chat, async API: `a_initiate_chat`, and async tools. When one LLM message asks
for several tool calls AG2 runs them concurrently (`asyncio.gather`); each tool awaits, so
their completion order varies from run to run while their results keep the call order.

    export OPENAI_BASE_URL=http://127.0.0.1:PORT/v1 OPENAI_API_KEY=x
    python examples/ag2/two_agent_async.py
"""

from __future__ import annotations

import asyncio
import hashlib
import sys
from typing import Annotated

from ag2_common import is_termination, llm_config, print_outcome
from autogen import AssistantAgent, UserProxyAgent, register_function

TASK = "Compare the weather in Lisbon and Porto for a weekend trip."


def _stable(text: str, low: int, high: int) -> int:
    return low + int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "big") % (high - low)


async def lookup_weather(city: Annotated[str, "city name"]) -> str:
    await asyncio.sleep(_stable(city + "delay", 1, 20) / 1000)  # a network-like wait
    return f"{city}: {_stable(city, 8, 31)}°C, {_stable(city + 'r', 0, 90)}% rain"


async def local_time(city: Annotated[str, "city name"]) -> str:
    await asyncio.sleep(_stable(city + "tz", 1, 20) / 1000)
    return f"{city}: UTC+{_stable(city + 'utc', 0, 2)}"


async def main() -> int:
    assistant = AssistantAgent(
        "assistant",
        system_message="You are the weather assistant. Call the tools, then answer and say "
        "TERMINATE.",
        llm_config=llm_config(),
    )
    user = UserProxyAgent(
        "user_proxy", human_input_mode="NEVER", code_execution_config=False,
        max_consecutive_auto_reply=5, is_termination_msg=is_termination,
    )
    register_function(lookup_weather, caller=assistant, executor=user,
                      description="Typical weather for a city")
    register_function(local_time, caller=assistant, executor=user,
                      description="Time zone of a city")
    result = await user.a_initiate_chat(assistant, message=TASK)
    print_outcome(result.summary, result.chat_history)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
