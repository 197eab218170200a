"""The one change every AgentChat corpus program shares: its model client talks to the
endpoint the corpus runs against (OPENAI_BASE_URL, the embedded stub), without retries."""

from __future__ import annotations

import os

from autogen_ext.models.openai import OpenAIChatCompletionClient


def model_client() -> OpenAIChatCompletionClient:
    return OpenAIChatCompletionClient(model="gpt-4o-2024-08-06", max_retries=0)


def edited(text: str, edit: str) -> str:
    """*text*, or *edit* when the corpus runs its "edited prompt" step (CORPUS_EDIT=1)."""
    return edit if os.environ.get("CORPUS_EDIT") == "1" else text
