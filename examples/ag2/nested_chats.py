"""Nested chats (`register_nested_chats`): every draft the writer sends the critic is first
reviewed in a chat of its own, and that chat's summary is the critic's reply.

The critic starts a chat with the writer. When the writer's draft reaches the critic, AG2 runs
the registered nested chat (critic → reviewer, one turn, summarised by `reflection_with_llm`)
and sends its summary back to the writer as the critic's answer; the writer revises.

    export OPENAI_BASE_URL=http://127.0.0.1:PORT/v1 OPENAI_API_KEY=x
    python examples/ag2/nested_chats.py
"""

from __future__ import annotations

import sys

from ag2_common import llm_config, print_outcome
from autogen import AssistantAgent

TASK = "Write a two-line note about a rainy day in Porto."
WRITER_PROMPT = "You are the writer. Write and revise short notes."
REVIEWER_PROMPT = "You are the reviewer. Point out one concrete improvement."
SUMMARY_PROMPT = "Summarise the review as one instruction for the writer."


def review_message(recipient: object, messages: list[dict], sender: object, config: object
                   ) -> str:
    """The nested chat opens with the writer's latest draft."""
    return f"Review this draft:\n\n{messages[-1]['content']}"


def build() -> tuple[AssistantAgent, AssistantAgent]:
    writer = AssistantAgent("writer", system_message=WRITER_PROMPT, llm_config=llm_config())
    critic = AssistantAgent("critic", system_message="You forward reviews.",
                            llm_config=llm_config())
    reviewer = AssistantAgent("reviewer", system_message=REVIEWER_PROMPT,
                              llm_config=llm_config())
    critic.register_nested_chats(
        [{"recipient": reviewer, "message": review_message, "max_turns": 1,
          "summary_method": "reflection_with_llm",
          "summary_args": {"summary_prompt": SUMMARY_PROMPT}}],
        trigger=writer,
    )
    return critic, writer


def main() -> int:
    critic, writer = build()
    result = critic.initiate_chat(writer, message=TASK, max_turns=2, summary_method="last_msg")
    print_outcome(result.summary, result.chat_history)
    return 0


if __name__ == "__main__":
    sys.exit(main())
