"""A program exercising every recording path, for the writer-process differential tests.

Through the real openai SDK: a growing ~8 KB conversation (blob pack, prefix chains, quote
edges), a tool boundary fed by a reply and a provider tool call answered with a tool message,
a failing tool, pooled asyncio calls completing out of issue order, a stream read whole and
one left open when the run ends, a call cancelled before its response (abandoned), and a
call the endpoint fails (HTTP 500).

    python offload_mix.py          (under `symtrace record`: OPENAI_BASE_URL set)
    offload_mix.run(base_url)      (inside `symtrace.record(...)`)
"""

from __future__ import annotations

import asyncio
import os
import sys
from typing import Any

import openai

import symtrace

SYSTEM = "You are a careful travel planner. " * 60  # ~2 KB: split into the blob pack


@symtrace.tool
def lookup(topic: str) -> str:
    return f"facts about {topic[:40]}: mild weather, good trains, about 91 USD a night"


@symtrace.tool
def broken(topic: str) -> str:
    raise ValueError(f"no data for {topic}")


def run(base_url: str) -> str:
    client = openai.OpenAI(base_url=base_url, api_key="sk-test", max_retries=0)
    messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM}]
    for turn in range(4):
        messages.append({"role": "user", "content": f"Plan day {turn} of the Lisbon trip. "
                                                     + "Keep it short. " * 20})
        reply = client.chat.completions.create(model="m", messages=messages)
        messages.append({"role": "assistant", "content": reply.choices[0].message.content})
    facts = lookup(messages[-1]["content"])
    try:
        broken("Porto")
    except ValueError:
        pass
    tools = [{"type": "function", "function": {
        "name": "lookup", "parameters": {"type": "object",
                                         "properties": {"topic": {"type": "string"}}}}}]
    asked = client.chat.completions.create(
        model="m", tools=tools,
        messages=[*messages, {"role": "user", "content": f"USE TOOL. Known: {facts}"}])
    call = asked.choices[0].message.tool_calls[0]
    result = lookup("Porto")
    client.chat.completions.create(model="m", tools=tools, messages=[
        *messages, asked.choices[0].message.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": call.id, "content": result}])
    pooled = asyncio.run(_pooled(base_url))
    streamed = client.chat.completions.create(
        model="m", stream=True, messages=[{"role": "user", "content": "Stream a summary"}])
    text = "".join(c.choices[0].delta.content or "" for c in streamed if c.choices)
    left_open = client.chat.completions.create(
        model="m", stream=True, messages=[{"role": "user", "content": "Stream another"}])
    next(iter(left_open))  # one chunk read; the stream is still open when the run ends
    try:
        client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "FAIL this one"}])
    except openai.InternalServerError:
        pass
    answer = f"{pooled} | {text[:30]}"
    symtrace.final_result(answer)
    return answer


async def _pooled(base_url: str) -> str:
    client = openai.AsyncOpenAI(base_url=base_url, api_key="sk-test", max_retries=0)

    async def one(i: int) -> str:
        reply = await client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": f"SLOW {3 - i} pooled {i}"}])
        return reply.choices[0].message.content or ""

    # named: a lane is named after its task (asyncio's default names count per process)
    tasks = [asyncio.create_task(one(i), name=f"pool-{i}") for i in range(3)]
    answers = await asyncio.gather(*tasks)
    try:  # cancelled before its response comes: recorded as abandoned
        await asyncio.wait_for(asyncio.create_task(one(-2), name="cancelled"), timeout=0.2)
    except TimeoutError:
        pass
    await client.close()
    return " / ".join(a[:12] for a in answers)


if __name__ == "__main__":
    print(run(os.environ["OPENAI_BASE_URL"]))
    sys.exit(0)
