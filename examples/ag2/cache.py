"""AG2's response cache: the same question asked in two chats that share one cache. The
second chat's replies come from AG2's cache, not from the endpoint.

The cache here is AG2's in-memory backend, passed as `cache=`; a disk (`Cache.disk`, the
legacy `cache_seed`) or Redis cache behaves the same but outlives the process, so whether a
lookup hits depends on earlier runs. symtrace records every lookup and serves it on replay.

    export OPENAI_BASE_URL=http://127.0.0.1:PORT/v1 OPENAI_API_KEY=x
    python examples/ag2/cache.py
"""

from __future__ import annotations

import sys

from ag2_common import is_termination, llm_config, print_outcome
from autogen import AssistantAgent, UserProxyAgent
from autogen.cache.in_memory_cache import InMemoryCache

TASK = "Name one sight in Lisbon worth an hour."


def main() -> int:
    assistant = AssistantAgent(
        "assistant", system_message="You are the guide. Answer in one line, then TERMINATE.",
        llm_config=llm_config(),
    )
    user = UserProxyAgent(
        "user_proxy", human_input_mode="NEVER", code_execution_config=False,
        max_consecutive_auto_reply=1, is_termination_msg=is_termination,
    )
    cache = InMemoryCache(seed=7)
    first = user.initiate_chat(assistant, message=TASK, cache=cache)
    second = user.initiate_chat(assistant, message=TASK, cache=cache)  # served by the cache
    print(f"SAME ANSWER: {first.summary == second.summary}")
    print_outcome(second.summary, first.chat_history + second.chat_history)
    return 0


if __name__ == "__main__":
    sys.exit(main())
