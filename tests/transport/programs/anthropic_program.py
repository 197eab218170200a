"""A plain anthropic program: messages (sync, async) and a streamed message.

usage: anthropic_program.py [TOPIC]   (the endpoint comes from ANTHROPIC_BASE_URL)
"""

import asyncio
import sys

import anthropic

TOPIC = sys.argv[1] if len(sys.argv) > 1 else "Lisbon"
MODEL = "claude-stub"


def text_of(message: anthropic.types.Message) -> str:
    return "".join(block.text for block in message.content if block.type == "text")


def main() -> int:
    client = anthropic.Anthropic(max_retries=0)
    first = client.messages.create(
        model=MODEL, max_tokens=200, system="You are terse.",
        messages=[{"role": "user", "content": f"Tell me about {TOPIC}"}])
    print("MESSAGE:", text_of(first), flush=True)
    with client.messages.stream(
        model=MODEL, max_tokens=200,
        messages=[{"role": "user", "content": f"Tell me about {TOPIC}"},
                  {"role": "assistant", "content": text_of(first)},
                  {"role": "user", "content": "And in one line?"}],
    ) as stream:
        print("STREAM:", "".join(stream.text_stream), flush=True)

    async def later() -> str:
        aclient = anthropic.AsyncAnthropic(max_retries=0)
        reply = await aclient.messages.create(
            model=MODEL, max_tokens=100,
            messages=[{"role": "user", "content": f"Async: {TOPIC}"}])
        return text_of(reply)

    print("ASYNC:", asyncio.run(later()), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
