"""Shared by the AG2 1.x examples: the model config (endpoint from OPENAI_BASE_URL, as the
openai SDK reads it) and the transcript they print."""

from __future__ import annotations

import os
from typing import Any

from ag2.config import OpenAIConfig

MODEL = os.environ.get("AG2V1_EXAMPLE_MODEL", "gpt-4o-mini")


def config(*, streaming: bool = False) -> OpenAIConfig:
    # max_retries=0: a failed request is the program's failure, not a hidden second request
    return OpenAIConfig(model=MODEL, streaming=streaming, max_retries=0)


def print_chunk(chunk: Any) -> None:
    """Stream subscriber: a streamed reply is printed as it arrives."""
    print(chunk.content, end="", flush=True)


def describe(event: Any) -> str | None:
    """One transcript line for the events worth showing; None for the rest.

    AG2 gives events, tasks and streams random ids (uuid4): a line that printed them would
    differ from run to run, so they are left out. So are the TaskStarted/TaskCompleted events
    of sub-tasks: concurrent sub-tasks enter the shared history in the order they finish,
    which is timing (the model sees their results joined in task order)."""
    kind = type(event).__name__
    if kind == "ModelResponse":
        message = getattr(event, "message", None)
        tool_calls = getattr(event, "tool_calls", None)
        calls = [f"{c.name}({c.arguments})" for c in getattr(tool_calls, "calls", None) or ()]
        text = getattr(message, "content", None) or ", ".join(calls)
        return f"{kind}: {text}"
    if kind in ("ToolResultEvent", "ToolErrorEvent"):
        parts = event.result.parts
        text = " ".join(getattr(part, "content", "") for part in parts)
        return f"{kind} {event.name}: {text.splitlines()[-1] if text else ''}"
    return None


def print_outcome(final: str, lines: list[str]) -> None:
    print()
    print("TRANSCRIPT:")
    for line in lines:
        print(line)
    print(f"FINAL: {final}")
