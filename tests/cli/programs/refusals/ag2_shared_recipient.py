"""AG2 classic: two concurrent chats of `a_initiate_chats` with one recipient object, which
symtrace refuses (UnsupportedConstruct) before anything of them runs."""

import asyncio
import os
import sys

from autogen import AssistantAgent, UserProxyAgent

CONFIG = {"config_list": [{"model": "stub-model", "base_url": os.environ["OPENAI_BASE_URL"],
                           "api_key": os.environ["OPENAI_API_KEY"], "price": [0.0, 0.0]}],
          "cache_seed": None}


async def main() -> int:
    user = UserProxyAgent("user_proxy", human_input_mode="NEVER", code_execution_config=False)
    shared = AssistantAgent("researcher", llm_config=CONFIG)
    await user.a_initiate_chats([
        {"chat_id": 1, "recipient": shared, "message": "Weather in Lisbon?", "max_turns": 1},
        {"chat_id": 2, "recipient": shared, "message": "Weather in Porto?", "max_turns": 1},
    ])
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
