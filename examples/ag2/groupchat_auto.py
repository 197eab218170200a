"""GroupChat with speaker_selection_method="auto": the manager asks the LLM who speaks next.

Each selection is a nested two-agent chat AG2 builds itself (checking_agent and a throwaway
speaker_selection_agent with its own client); symtrace attributes those calls to the manager
with reason "speaker_selection". The researcher calls a tool that the user proxy executes.

    export OPENAI_BASE_URL=http://127.0.0.1:PORT/v1 OPENAI_API_KEY=x
    python examples/ag2/groupchat_auto.py
"""

from __future__ import annotations

import hashlib
import sys
from typing import Annotated

from ag2_common import is_termination, llm_config, print_outcome
from autogen import AssistantAgent, GroupChat, GroupChatManager, UserProxyAgent, register_function

TASK = "Write a two-line weather note for a day trip to Sintra."
PLANNER_PROMPT = "You are the planner. Reply with a short plan starting with PLAN:."
RESEARCHER_PROMPT = "You are the researcher. Use the weather tool."
WRITER_PROMPT = "You are the writer. Write the note, then say TERMINATE."


def _stable(text: str, low: int, high: int) -> int:
    return low + int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "big") % (high - low)


def lookup_weather(city: Annotated[str, "city name"]) -> str:
    return f"{city}: {_stable(city, 8, 31)}°C, {_stable(city + 'r', 0, 90)}% rain"


def build() -> tuple[UserProxyAgent, GroupChatManager, GroupChat]:
    """The group: a user proxy that runs tools, a planner, a researcher and a writer."""
    planner = AssistantAgent(
        "planner", description="Breaks the task into steps.",
        system_message=PLANNER_PROMPT,
        llm_config=llm_config(),
    )
    researcher = AssistantAgent(
        "researcher", description="Looks facts up with tools.",
        system_message=RESEARCHER_PROMPT,
        llm_config=llm_config(),
    )
    writer = AssistantAgent(
        "writer", description="Writes the final note.",
        system_message=WRITER_PROMPT,
        llm_config=llm_config(),
    )
    user = UserProxyAgent(
        "user_proxy", description="Runs tools for the others.", human_input_mode="NEVER",
        code_execution_config=False, default_auto_reply="",
    )
    register_function(lookup_weather, caller=researcher, executor=user,
                      description="Typical weather for a city")
    group = GroupChat(
        agents=[user, planner, researcher, writer], messages=[], max_round=8,
        speaker_selection_method="auto", allow_repeat_speaker=False,
    )
    manager = GroupChatManager(group, llm_config=llm_config(), is_termination_msg=is_termination)
    return user, manager, group


def main() -> int:
    user, manager, group = build()
    result = user.initiate_chat(manager, message=TASK)
    print_outcome(result.summary, group.messages)
    return 0


if __name__ == "__main__":
    sys.exit(main())
