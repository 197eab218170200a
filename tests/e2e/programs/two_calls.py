"""A minimal program for CLI tests: two chat calls, a tool, configurable ending.

usage: two_calls.py QUESTION [--exit N] [--die-after-first] [--extra-call]
"""

import json
import os
import signal
import sys

from openai import OpenAI

import symtrace


@symtrace.tool
def lookup(topic: str) -> str:
    return f"facts about {topic}: it is a lovely place"


def main() -> int:
    args = sys.argv[1:]
    question = args[0] if args else "Tell me about Lisbon"
    client = OpenAI(max_retries=0)
    first = client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": question}]
    ).choices[0].message.content
    print("FIRST:", first, flush=True)
    if "--die-after-first" in args:
        os.kill(os.getpid(), signal.SIGKILL)
    facts = lookup(question.split()[-1])
    second = client.chat.completions.create(model="m", messages=[
        {"role": "user", "content": question},
        {"role": "assistant", "content": first},
        {"role": "user", "content": f"Now summarise these notes: {facts}"},
    ]).choices[0].message.content
    print("SECOND:", second, flush=True)
    if "--extra-call" in args:
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "extra"}])
    symtrace.final_result(second)
    print(json.dumps({"answer": second}))
    if "--exit" in args:
        return int(args[args.index("--exit") + 1])
    return 0


if __name__ == "__main__":
    sys.exit(main())
