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


def print_outcome(final: str, lines: list[str]) -> None:
    print()
    print("TRANSCRIPT:")
    for line in lines:
        print(line)
    print(f"FINAL: {final}")
