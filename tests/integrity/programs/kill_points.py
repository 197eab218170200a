"""A program for the kill suite: six boundary crossings, killable at any of them.

KILL_AT=N      SIGKILL itself right after the N-th crossing (0: before the first)
KILL_AT=stream SIGKILL itself in the middle of the streamed answer (after its first chunk)
KILL_GATE=P    instead of killing itself at KILL_AT, write P and wait to be signalled
"""

import os
import signal
import sys
import time
from pathlib import Path

from openai import OpenAI

import symtrace

CROSSED = 0


def crossed() -> None:
    global CROSSED
    CROSSED += 1
    checkpoint(str(CROSSED))


def checkpoint(label: str) -> None:
    if os.environ.get("KILL_AT") != label:
        return
    gate = os.environ.get("KILL_GATE")
    if gate:
        Path(gate).write_text(label)
        time.sleep(60)  # the test signals us (or symtrace) now
        sys.exit(3)
    os.kill(os.getpid(), signal.SIGKILL)


@symtrace.tool
def lookup(topic: str) -> str:
    return f"facts about {topic}: it is a lovely place"


def ask(client: OpenAI, text: str) -> str:
    answer = client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": text}]
    ).choices[0].message.content
    crossed()
    return answer or ""


def main() -> int:
    client = OpenAI(max_retries=0)
    checkpoint("0")
    first = ask(client, "Tell me about Lisbon")
    facts = lookup("Lisbon")  # tool_call + tool_result
    crossed()
    second = ask(client, f"Summarise: {facts}")
    parts = []
    stream = client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "Stream a poem"}], stream=True
    )
    for chunk in stream:
        parts.append(chunk.choices[0].delta.content or "" if chunk.choices else "")
        if len(parts) == 1:
            checkpoint("stream")
    crossed()
    more = lookup("Porto")
    crossed()
    last = ask(client, f"Compare: {first[:20]} {second[:20]} {''.join(parts)[:20]} {more[:10]}")
    print("ANSWER:", last, flush=True)
    symtrace.final_result(last)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:  # a program that handles Ctrl-C quietly: any traceback is ours
        sys.exit(130)
