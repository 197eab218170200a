"""The one change every AG2 corpus program shares: its `llm_config` names the endpoint the
corpus runs against (OPENAI_BASE_URL, the embedded stub) instead of an OAI_CONFIG_LIST file,
with the response cache off (`cache_seed=None`) so each run asks the endpoint."""

from __future__ import annotations

import os


def config_list() -> list[dict[str, object]]:
    return [{"model": "gpt-4o-mini", "base_url": os.environ["OPENAI_BASE_URL"],
             "api_key": os.environ["OPENAI_API_KEY"], "price": [0.0, 0.0]}]


def edited(text: str, edit: str) -> str:
    """*text*, or *edit* when the corpus runs its "edited prompt" step (CORPUS_EDIT=1)."""
    return edit if os.environ.get("CORPUS_EDIT") == "1" else text
