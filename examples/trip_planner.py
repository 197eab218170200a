"""A small multi-agent program in plain Python over the openai SDK (symtrace's demo MAS).

Three agents share one task: a planner breaks it into steps, a researcher answers them with
tools (several tool calls in one response run in parallel on a thread pool), and a writer
turns the notes into the final answer. Nothing here knows about recording or replay except
the optional `@tool` marker, which is inert when symtrace is not running the program.

    OPENAI_BASE_URL=http://127.0.0.1:PORT/v1 OPENAI_API_KEY=x python examples/trip_planner.py
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from concurrent.futures import ThreadPoolExecutor

from openai import OpenAI

try:
    from symtrace import final_result, tool
except ImportError:  # the program runs without symtrace too

    def tool(fn):  # type: ignore[no-redef]
        return fn

    def final_result(value):  # type: ignore[no-redef]
        return None


MODEL = os.environ.get("TRIP_MODEL", "stub-model")
MAX_RESEARCH_TURNS = 4


def _stable_number(text: str, low: int, high: int) -> int:
    digest = hashlib.sha256(text.encode()).digest()
    return low + int.from_bytes(digest[:4], "big") % (high - low + 1)


@tool
def lookup_weather(city: str) -> str:
    """Typical weather for a city (a deterministic fake data source)."""
    if not city.strip():
        raise ValueError("city must not be empty")
    return f"{city}: {_stable_number(city, 8, 31)}°C, {_stable_number(city + 'r', 0, 90)}% rain"


@tool
def convert_currency(amount: float, currency: str) -> str:
    """Convert an amount of EUR into another currency at a fixed fake rate."""
    rate = _stable_number(currency, 50, 200) / 100
    return f"{amount} EUR = {round(float(amount) * rate, 2)} {currency}"


TOOLS = {"lookup_weather": lookup_weather, "convert_currency": convert_currency}
TOOL_SPECS = [
    {
        "type": "function",
        "function": {
            "name": "lookup_weather",
            "description": "Typical weather for a city",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "convert_currency",
            "description": "Convert EUR into another currency",
            "parameters": {
                "type": "object",
                "properties": {
                    "amount": {"type": "number"},
                    "currency": {"type": "string", "enum": ["USD", "GBP", "JPY"]},
                },
                "required": ["amount", "currency"],
            },
        },
    },
]


def chat(client: OpenAI, messages: list[dict], **kwargs) -> dict:
    response = client.chat.completions.create(model=MODEL, messages=messages, **kwargs)
    return response.choices[0].message.model_dump(exclude_none=True)


def run_tool(call: dict) -> dict:
    name = call["function"]["name"]
    try:
        arguments = json.loads(call["function"]["arguments"] or "{}")
        content = TOOLS[name](**arguments)
    except Exception as exc:  # noqa: BLE001 - a failing tool is an observation for the agent
        content = f"error: {type(exc).__name__}: {exc}"
    return {"role": "tool", "tool_call_id": call["id"], "content": content}


def planner(client: OpenAI, task: str) -> str:
    message = chat(client, [
        {"role": "system", "content": "You are the planner. Break the task into short steps."},
        {"role": "user", "content": task},
    ])
    return message.get("content") or ""


def researcher(client: OpenAI, task: str, plan: str) -> list[str]:
    messages = [
        {"role": "system", "content": "You are the researcher. Use tools to gather facts."},
        {"role": "user", "content": f"Task: {task}\nPlan: {plan}"},
    ]
    notes: list[str] = []
    with ThreadPoolExecutor(max_workers=4) as pool:
        for _ in range(MAX_RESEARCH_TURNS):
            message = chat(client, messages, tools=TOOL_SPECS)
            messages.append(message)
            calls = message.get("tool_calls") or []
            if not calls:
                notes.append(message.get("content") or "")
                break
            results = list(pool.map(run_tool, calls))  # parallel, results in call order
            messages.extend(results)
            notes.extend(result["content"] for result in results)
    return notes


def writer(client: OpenAI, task: str, notes: list[str]) -> str:
    """The writer streams its answer (server-sent events), as chat UIs do."""
    messages = [
        {"role": "system", "content": "You are the writer. Answer the task from the notes."},
        {"role": "user", "content": f"Task: {task}\nNotes:\n" + "\n".join(notes)},
    ]
    text = []
    for chunk in client.chat.completions.create(model=MODEL, messages=messages, stream=True):
        if chunk.choices and chunk.choices[0].delta.content:
            text.append(chunk.choices[0].delta.content)
    return "".join(text)


def main(argv: list[str]) -> int:
    task = " ".join(argv) or "Plan a two-day trip to Lisbon for a traveller paying in USD."
    client = OpenAI(max_retries=0)
    plan = planner(client, task)
    notes = researcher(client, task, plan)
    answer = writer(client, task, notes)
    print(f"PLAN: {plan}")
    for note in notes:
        print(f"NOTE: {note}")
    print(f"ANSWER: {answer}")
    final_result(answer)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
