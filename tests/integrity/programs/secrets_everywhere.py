"""A program for the redaction tests: credentials in every place a bundle could catch them.

The key travels as the Authorization header, as an `api_key` query parameter of every
request, and inside the prompt; a declared secret (PROMPT_WORD, not a credential-like name)
is in a prompt, a tool argument, a tool result and stdout. SECRET_IN_RESULT=1 makes a tool
return an undeclared secret-shaped value (which cannot be recorded).
"""

import os
import sys

from openai import OpenAI

import symtrace

WORD = os.environ["PROMPT_WORD"]
TOKEN = os.environ["MY_SERVICE_TOKEN"]


@symtrace.tool
def lookup(code: str) -> str:
    if os.environ.get("SECRET_IN_RESULT"):
        return "sk-" + "Zq9" * 12
    return f"the vault {code} opens with {WORD}"


def main() -> int:
    client = OpenAI(max_retries=0, default_query={"api_key": os.environ["QUERY_KEY"]})
    first = client.chat.completions.create(
        model="m",
        messages=[{"role": "user", "content": f"Use {WORD} and {TOKEN} to plan a trip"}],
    ).choices[0].message.content
    fact = lookup(WORD)
    second = client.chat.completions.create(
        model="m",
        messages=[{"role": "user", "content": f"{first} / {fact}"}],
    ).choices[0].message.content
    print("the word was", WORD, "and the fact:", fact, flush=True)
    symtrace.final_result(second)
    return 0 if fact.endswith(WORD) else 7


if __name__ == "__main__":
    sys.exit(main())
