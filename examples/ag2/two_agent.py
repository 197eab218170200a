"""Two-agent chat with registered tools, sync API: an assistant proposes tool calls and a user
proxy executes them, until the assistant says TERMINATE.

    export OPENAI_BASE_URL=http://127.0.0.1:PORT/v1 OPENAI_API_KEY=x
    python examples/ag2/two_agent.py
"""

from __future__ import annotations

import hashlib
import sys
from typing import Annotated

from ag2_common import is_termination, llm_config, print_outcome
from autogen import AssistantAgent, UserProxyAgent, register_function

TASK = "Plan a day in Lisbon: check the weather and convert a 120 EUR budget to USD."
ASSISTANT_PROMPT = "You are the travel assistant. Use the tools, then answer and say TERMINATE."


def _stable(text: str, low: int, high: int) -> int:
    return low + int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "big") % (high - low)


def lookup_weather(city: Annotated[str, "city name"]) -> str:
    return f"{city}: {_stable(city, 8, 31)}°C, {_stable(city + 'r', 0, 90)}% rain"


def convert_currency(amount: Annotated[float, "EUR amount"],
                     currency: Annotated[str, "target currency"]) -> str:
    rate = _stable(currency, 50, 200) / 100
    return f"{amount} EUR = {round(float(amount) * rate, 2)} {currency}"


def build() -> tuple[UserProxyAgent, AssistantAgent]:
    """The user proxy (executes tools) and the assistant (proposes them)."""
    assistant = AssistantAgent(
        "assistant",
        system_message=ASSISTANT_PROMPT,
        llm_config=llm_config(),
    )
    user = UserProxyAgent(
        "user_proxy", human_input_mode="NEVER", code_execution_config=False,
        max_consecutive_auto_reply=5, is_termination_msg=is_termination,
    )
    register_function(lookup_weather, caller=assistant, executor=user,
                      description="Typical weather for a city")
    register_function(convert_currency, caller=assistant, executor=user,
                      description="Convert EUR to another currency")
    return user, assistant


def main() -> int:
    user, assistant = build()
    result = user.initiate_chat(assistant, message=TASK)
    print_outcome(result.summary, result.chat_history)
    return 0


if __name__ == "__main__":
    sys.exit(main())
