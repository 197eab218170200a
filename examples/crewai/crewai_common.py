"""Shared by the CrewAI examples: the model, a tool-run counter, and printing a transcript.

The examples are plain CrewAI programs: nothing in them knows about symtrace. They talk to
whatever OpenAI-compatible endpoint OPENAI_BASE_URL / OPENAI_API_KEY name, and switch off
CrewAI's telemetry and version check (network side channels) unless the caller set them.
"""

from __future__ import annotations

import os
from collections import Counter
from typing import Any

for _name, _value in (
    ("CREWAI_DISABLE_TELEMETRY", "true"),
    ("OTEL_SDK_DISABLED", "true"),
    ("CREWAI_DISABLE_VERSION_CHECK", "true"),
    ("CREWAI_TRACING_ENABLED", "false"),
):
    os.environ.setdefault(_name, _value)

from crewai import LLM  # noqa: E402  (after the environment defaults above)

MODEL = os.environ.get("CREWAI_EXAMPLE_MODEL", "gpt-4o-mini")
TOOL_RUNS: Counter[str] = Counter()  # how often each tool body really ran


def llm() -> LLM:
    """The crew's model; base URL and key come from OPENAI_BASE_URL / OPENAI_API_KEY."""
    return LLM(model=MODEL, max_retries=0)


def transcript(output: Any) -> list[str]:
    """Every task's conversation, one line per message, then its output."""
    lines = []
    for task in output.tasks_output:
        lines.append(f"== task {task.name!r} by {task.agent}")
        for message in task.messages or []:
            lines.append(f"  {message.get('role')}: {_one_line(message.get('content'))}")
            for call in message.get("tool_calls") or []:
                function = call.get("function") or {}
                lines.append(f"    -> {function.get('name')}({function.get('arguments')})")
        lines.append(f"  output: {_one_line(task.raw)}")
    return lines


def report(output: Any) -> None:
    for line in transcript(output):
        print(line)
    print(f"FINAL: {output.raw}")


def _one_line(text: Any, limit: int = 240) -> str:
    flat = " ".join(str(text).split()) if text is not None else ""
    return flat if len(flat) <= limit else flat[:limit] + "…"
