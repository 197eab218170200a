"""Shared bits of the AG2 examples: the model config from the environment, and the printout.

Every example reads OPENAI_BASE_URL and OPENAI_API_KEY (any OpenAI-compatible endpoint; the
tests use symtrace's embedded stub) and ends by printing its final output and its transcript,
one JSON object per message, so two runs can be compared line by line.
"""

from __future__ import annotations

import json
import os
from typing import Any

MODEL = os.environ.get("AG2_EXAMPLE_MODEL", "stub-model")


def llm_config(**extra: Any) -> dict[str, Any]:
    entry = {
        "model": MODEL,
        "base_url": os.environ["OPENAI_BASE_URL"],
        "api_key": os.environ["OPENAI_API_KEY"],
        "price": [0.0, 0.0],  # an unknown model name would log a cost warning
    }
    return {"config_list": [entry], "cache_seed": None, **extra}


def is_termination(message: dict[str, Any]) -> bool:
    return "TERMINATE" in str(message.get("content") or "")


def transcript_line(message: dict[str, Any]) -> str:
    keep = {k: message[k] for k in ("name", "role", "content") if message.get(k) is not None}
    calls = message.get("tool_calls") or []
    if calls:
        keep["tool_calls"] = [[c["function"]["name"], c["function"]["arguments"]] for c in calls]
    return json.dumps(keep, sort_keys=True)


def print_outcome(final: Any, messages: list[dict[str, Any]]) -> None:
    print(f"FINAL: {final}")
    print("TRANSCRIPT:")
    for message in messages:
        print(transcript_line(message))
