"""AG2 (classic ``autogen``) two-agent chat with one tool, at temperature 0."""

from __future__ import annotations

import sys
from typing import Annotated

from autogen import AssistantAgent, UserProxyAgent, register_function
from local_common import MODEL, SYSTEM, TASK, api_key, base_url, summary, weather


def get_weather(city: Annotated[str, "city name"]) -> str:
    return weather(city)


def main() -> int:
    config = {"config_list": [{"model": MODEL, "base_url": base_url(), "api_key": api_key(),
                               "price": [0.0, 0.0]}],
              "temperature": 0, "cache_seed": None}
    assistant = AssistantAgent("assistant", system_message=SYSTEM, llm_config=config)
    user = UserProxyAgent("user", human_input_mode="NEVER", code_execution_config=False,
                          max_consecutive_auto_reply=2,
                          is_termination_msg=lambda m: "TERMINATE" in str(m.get("content")))
    register_function(get_weather, caller=assistant, executor=user,
                      description="Current weather of a city")
    result = user.initiate_chat(assistant, message=TASK, max_turns=2, silent=True)
    calls = [(c["function"]["name"], c["function"]["arguments"])
             for m in result.chat_history for c in m.get("tool_calls") or []]
    results = sum(len(m.get("tool_responses") or []) for m in result.chat_history)
    last = result.chat_history[-1] if result.chat_history else {}
    summary("ag2", calls, results, last.get("content"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
