"""A plain openai program: sync, async and streaming chat completions, and the Responses API.

usage: openai_program.py [TOPIC]   (the endpoint comes from OPENAI_BASE_URL)
Each LLM request carries TOPIC, so changing it changes every prompt.
"""

import asyncio
import sys

from openai import AsyncOpenAI, OpenAI

TOPIC = sys.argv[1] if len(sys.argv) > 1 else "Lisbon"


def ask(text: str) -> list[dict]:
    return [{"role": "user", "content": text}]


def sync_calls(client: OpenAI) -> None:
    plain = client.chat.completions.create(model="m", messages=ask(f"Tell me about {TOPIC}"))
    print("SYNC:", plain.choices[0].message.content, flush=True)
    stream = client.chat.completions.create(
        model="m", messages=ask(f"Stream facts about {TOPIC}"), stream=True,
        stream_options={"include_usage": True})
    print("STREAM:", "".join(c.choices[0].delta.content or "" for c in stream if c.choices))
    answer = client.responses.create(model="m", input=f"One line on {TOPIC}")
    print("RESPONSES:", answer.output_text, flush=True)
    events = client.responses.create(model="m", input=f"Stream a line on {TOPIC}", stream=True)
    deltas = [e.delta for e in events if e.type == "response.output_text.delta"]
    print("RESPONSES-STREAM:", "".join(deltas), flush=True)


async def async_calls() -> None:
    client = AsyncOpenAI(max_retries=0)
    plain = await client.chat.completions.create(model="m", messages=ask(f"Async {TOPIC}"))
    print("ASYNC:", plain.choices[0].message.content, flush=True)
    stream = await client.chat.completions.create(
        model="m", messages=ask(f"Async stream {TOPIC}"), stream=True)
    parts = [c.choices[0].delta.content or "" async for c in stream if c.choices]
    print("ASYNC-STREAM:", "".join(parts), flush=True)
    await client.close()


def main() -> int:
    sync_calls(OpenAI(max_retries=0))
    asyncio.run(async_calls())
    return 0


if __name__ == "__main__":
    sys.exit(main())
