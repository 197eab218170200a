"""A user's program for the CLI output tests (openai SDK, no framework).

A long system prompt whose last sentence comes from PROMPT_GOAL (not a captured variable, so a
replay sees the edited prompt), a tool that fails for any currency but USD, and two chat calls
with the SDK's default retries, so a refused call prints the SDK's retry traceback.

usage: prompted.py [CURRENCY]
"""

import os
import sys

from openai import OpenAI

import symtrace

SYSTEM = (
    "You are the travel researcher of a small agency. You help customers plan trips in "
    "southern Europe: you look up prices, convert currencies and check opening hours. Be "
    "brief, precise and polite; never invent numbers; say so when a tool fails. "
)
GOAL = "Always answer in euros and cite the exchange rate you used."


@symtrace.tool
def convert(amount: float, currency: str) -> str:
    if currency != "USD":
        raise ValueError(f"no exchange rate for {currency!r}")
    return f"{amount * 1.08:.2f} USD"


def main() -> int:
    currency = sys.argv[1] if len(sys.argv) > 1 else "GBP"
    client = OpenAI()  # default max_retries: a refused call is retried, as users' SDKs do
    messages = [
        {"role": "system", "content": SYSTEM + os.environ.get("PROMPT_GOAL", GOAL)},
        {"role": "user", "content": f"What do 300 EUR make in {currency}?"},
    ]
    first = client.chat.completions.create(model="stub-model", messages=messages)
    text = first.choices[0].message.content
    print("FIRST:", text, flush=True)
    try:
        rate = convert(300, currency)
    except ValueError as exc:
        rate = f"Error: {exc}"
    messages += [
        {"role": "assistant", "content": text},
        {"role": "user", "content": f"The converter said: {rate}. Answer the customer."},
    ]
    second = client.chat.completions.create(model="stub-model", messages=messages)
    answer = second.choices[0].message.content
    print("ANSWER:", answer, flush=True)
    symtrace.final_result(answer)
    return 0


if __name__ == "__main__":
    sys.exit(main())
