"""A tool that raises, and an agent reply that ends the chat.

The assistant asks for a conversion into a currency the tool does not support; the tool
raises ValueError, AG2 hands the model the observation "Error: ...", and the assistant's next
reply contains TERMINATE, which the user proxy's termination check turns into the end of the
chat.

    export OPENAI_BASE_URL=http://127.0.0.1:PORT/v1 OPENAI_API_KEY=x
    python examples/ag2/tool_error.py
"""

from __future__ import annotations

import sys
from typing import Annotated

from ag2_common import is_termination, llm_config, print_outcome
from autogen import AssistantAgent, UserProxyAgent, register_function

TASK = "How much is 250 EUR in Bitcoin?"
RATES = {"USD": 1.08, "GBP": 0.85, "JPY": 162.0}


class UnsupportedCurrency(ValueError):
    """The currency has no rate."""


def _rate(currency: str) -> float:
    if currency not in RATES:
        raise UnsupportedCurrency(f"no exchange rate for {currency!r}")
    return RATES[currency]


def convert_currency(amount: Annotated[float, "EUR amount"],
                     currency: Annotated[str, "target currency code"]) -> str:
    return f"{amount} EUR = {round(float(amount) * _rate(currency), 2)} {currency}"


def main() -> int:
    assistant = AssistantAgent(
        "assistant",
        system_message="You are the currency assistant. Use the tool; if it fails, explain "
        "why and say TERMINATE.",
        llm_config=llm_config(),
    )
    user = UserProxyAgent(
        "user_proxy", human_input_mode="NEVER", code_execution_config=False,
        max_consecutive_auto_reply=4, is_termination_msg=is_termination,
    )
    register_function(convert_currency, caller=assistant, executor=user,
                      description="Convert EUR into USD, GBP or JPY")
    result = user.initiate_chat(assistant, message=TASK)
    print_outcome(result.summary, result.chat_history)
    return 0


if __name__ == "__main__":
    sys.exit(main())
