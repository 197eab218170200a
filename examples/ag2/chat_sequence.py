"""A sequence of chats (`initiate_chats`): each chat's summary is carried over into the next.

The user proxy first asks the researcher (summary by `reflection_with_llm`: one extra LLM call
condenses the chat), then the writer, whose opening message carries the researcher's summary
and a fixed carryover note.

    export OPENAI_BASE_URL=http://127.0.0.1:PORT/v1 OPENAI_API_KEY=x
    python examples/ag2/chat_sequence.py
"""

from __future__ import annotations

import sys

from ag2_common import llm_config, print_outcome
from autogen import AssistantAgent, UserProxyAgent

CARRYOVER = "The reader travels with hand luggage only."
SUMMARY_PROMPT = "Summarise the facts above in one sentence."


def build() -> tuple[UserProxyAgent, AssistantAgent, AssistantAgent]:
    researcher = AssistantAgent("researcher", system_message="You are the researcher. "
                                "State weather facts.", llm_config=llm_config())
    writer = AssistantAgent("writer", system_message="You are the writer. Write packing "
                            "notes.", llm_config=llm_config())
    user = UserProxyAgent("user_proxy", human_input_mode="NEVER", code_execution_config=False)
    return user, researcher, writer


def main() -> int:
    user, researcher, writer = build()
    results = user.initiate_chats([
        {"recipient": researcher, "message": "What is the weather in Madeira in May?",
         "max_turns": 1, "summary_method": "reflection_with_llm",
         "summary_args": {"summary_prompt": SUMMARY_PROMPT}},
        {"recipient": writer, "message": "Write a packing note.", "max_turns": 1,
         "carryover": CARRYOVER, "summary_method": "last_msg"},
    ])
    print_outcome(results[-1].summary,
                  [m for result in results for m in result.chat_history])
    return 0


if __name__ == "__main__":
    sys.exit(main())
