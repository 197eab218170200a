"""Shared by the local-model programs: the weather tool, the task and the summary line.

Each program runs one framework against OPENAI_BASE_URL (a ``symtrace local-llm`` /
``LocalLLM`` endpoint) at temperature 0 with one obvious tool, and prints one
``SUMMARY {json}`` line: which tool calls the model made, how many tool results went back to
it, and its final text. Structure, never quality: a 135M model answers badly.
"""

from __future__ import annotations

import json
import os
from typing import Any

TASK = "What is the weather in Paris? Use the get_weather tool."
SYSTEM = "You report the weather. Call get_weather with the city, then answer in one sentence."
MODEL = "smollm2-135m"
TOOL_RUNS: list[str] = []


def weather(city: str) -> str:
    TOOL_RUNS.append(city)
    return f"{city}: sunny, 21 C"


def base_url() -> str:
    return os.environ["OPENAI_BASE_URL"]


def api_key() -> str:
    return os.environ.get("OPENAI_API_KEY", "local-llm")


def summary(framework: str, calls: list[tuple[str, str]], tool_results: int, final: Any) -> None:
    print("SUMMARY " + json.dumps({
        "framework": framework,
        "tool_calls": [list(c) for c in calls],
        "tool_results": tool_results,
        "tool_runs": len(TOOL_RUNS),
        "final": None if final is None else str(final),
    }, sort_keys=True), flush=True)
