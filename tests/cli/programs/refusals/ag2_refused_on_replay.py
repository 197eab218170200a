"""AG2 classic: one chat, recorded; replayed with CONCURRENT set, the program instead runs two
concurrent chats of `a_initiate_chats` with one recipient object, which the adapter refuses
(UnsupportedConstruct) during the replay. CONCURRENT=catch swallows the refusal and ends 0."""

import asyncio
import os
import sys

from autogen import AssistantAgent, UserProxyAgent

from symtrace.errors import UnsupportedConstruct

CONFIG = {"config_list": [{"model": "stub-model", "base_url": os.environ["OPENAI_BASE_URL"],
                           "api_key": os.environ["OPENAI_API_KEY"], "price": [0.0, 0.0]}],
          "cache_seed": None}


async def main() -> int:
    user = UserProxyAgent("user_proxy", human_input_mode="NEVER", code_execution_config=False)
    shared = AssistantAgent("researcher", llm_config=CONFIG)
    chats = [{"chat_id": 1, "recipient": shared, "message": "Weather in Lisbon?", "max_turns": 1}]
    if os.environ.get("CONCURRENT"):
        chats.append({"chat_id": 2, "recipient": shared, "message": "Weather in Porto?",
                      "max_turns": 1})
    try:
        await user.a_initiate_chats(chats)
    except UnsupportedConstruct:
        if os.environ["CONCURRENT"] != "catch":
            raise
    print("done")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
