"""The README's `symtrace.agent` under `asyncio.gather`: one researcher lane, two concurrent
turns (two product questions, a tool that sometimes raises), then a critic reads both."""

import asyncio
import os

import openai

import symtrace

QUESTIONS = ("How durable is the Falcon?", "Is the Orca backpack waterproof?")


@symtrace.tool
def stock(product: str) -> str:
    if product.startswith("Orca"):
        raise LookupError(f"no stock data for {product}")
    return f"{product}: 12 in stock"


async def research(client: openai.AsyncOpenAI, question: str) -> str:
    with symtrace.agent("researcher"):
        first = await client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": question}])
        try:
            fact = stock(question.split()[-1].rstrip("?"))
        except LookupError as exc:
            fact = f"error: {exc}"
        second = await client.chat.completions.create(model="m", messages=[
            {"role": "user", "content": question},
            {"role": "assistant", "content": first.choices[0].message.content or ""},
            {"role": "user", "content": fact}])
        return second.choices[0].message.content or ""


async def main() -> None:
    client = openai.AsyncOpenAI(base_url=os.environ["OPENAI_BASE_URL"], max_retries=0)
    answers = await asyncio.gather(*(research(client, q) for q in QUESTIONS))
    with symtrace.agent("critic"):
        verdict = await client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": " | ".join(answers)}])
    await client.close()
    print(verdict.choices[0].message.content)


if __name__ == "__main__":
    asyncio.run(main())
