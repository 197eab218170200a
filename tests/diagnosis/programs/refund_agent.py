"""A tiny tool-using agent that fails like GOLD-C3: it browses an unresolved placeholder URL,
the tool raises, and the agent still gives a final answer.

usage: refund_agent.py   (OPENAI_BASE_URL points at a scripted stub)
"""

import sys

from openai import OpenAI

import symtrace

TASK = (
    "How much refund should I expect from my orders canceled in February 2023? "
    "Return the value as a number only."
)


@symtrace.tool
def browse(url: str) -> str:
    if "://" not in url or "__" in url:
        raise ConnectionError(f"Failed to resolve {url!r}: no such host")
    return f"orders page at {url}: refund total 406.53"


def main() -> int:
    client = OpenAI(max_retries=0)
    messages = [{"role": "user", "content": TASK}]
    url = client.chat.completions.create(model="m", messages=messages).choices[0].message.content
    try:
        page = browse(url=url.strip())
    except ConnectionError as exc:
        page = f"browse failed: {exc}"
    messages += [
        {"role": "assistant", "content": url},
        {"role": "user", "content": f"Observation: {page}\nGive the final answer."},
    ]
    answer = client.chat.completions.create(model="m", messages=messages)
    text = answer.choices[0].message.content
    symtrace.final_result(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
