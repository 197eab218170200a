"""AG2 GroupChat: a planner, an assistant that calls tools, and an executor that runs them.

The paper's AG2 shape (conversation-centric): the executor opens the chat with the task, the
planner outlines the steps, the assistant proposes tool calls (`register_for_llm`) that the
executor runs (`register_for_execution`), and the chat ends at the assistant's FINAL ANSWER.
Turn order is a deterministic function (planner first, tool calls go to the executor, results
back to the assistant), so every LLM call is an agent decision.

    python -m symtrace_suite.mas.ag2_groupchat --task shop-007
"""

from __future__ import annotations

import os
import sys
from typing import Any

from autogen import Agent, AssistantAgent, GroupChat, GroupChatManager, UserProxyAgent

from symtrace_suite.mas.common import ANSWER_INSTRUCTION, Run, main
from symtrace_suite.mas.tools import TOOLS

MAX_ROUND = 24


def llm_config(model: str) -> dict[str, Any]:
    entry = {
        "model": model,
        "base_url": os.environ["OPENAI_BASE_URL"],
        "api_key": os.environ["OPENAI_API_KEY"],
        "price": [0.0, 0.0],  # a model name AG2 does not price would log a warning
    }
    return {"config_list": [entry], "cache_seed": None, "temperature": 0, "seed": 0}


def is_final(message: dict[str, Any]) -> bool:
    content = str(message.get("content") or "")
    return "FINAL ANSWER" in content or content.rstrip().endswith("TERMINATE")


def build(run: Run) -> tuple[UserProxyAgent, GroupChatManager, GroupChat]:
    config = llm_config(run.model)
    planner = AssistantAgent(
        "planner",
        system_message="You are the planner. Outline which tools to call, in order. Do not "
        "call tools yourself.",
        description="Plans the steps.",
        llm_config=config,
    )
    assistant = AssistantAgent(
        "assistant",
        system_message="You are the assistant. You solve the task with the tools. "
        + ANSWER_INSTRUCTION,
        description="Calls the tools and gives the final answer.",
        llm_config=config,
    )
    executor = UserProxyAgent(
        "executor",
        human_input_mode="NEVER",
        code_execution_config=False,
        default_auto_reply="",
        description="Runs the tools.",
    )
    for fn in TOOLS:
        assistant.register_for_llm(name=fn.__name__, description=fn.__doc__)(fn)
        executor.register_for_execution(name=fn.__name__)(fn)

    def next_speaker(last: Agent, group: GroupChat) -> Agent | None:
        message = group.messages[-1] if group.messages else {}
        if last is executor:
            return planner if len(group.messages) <= 1 else assistant
        if last is planner:
            return assistant
        return executor if message.get("tool_calls") else assistant

    group = GroupChat(
        agents=[executor, planner, assistant],
        messages=[],
        max_round=MAX_ROUND,
        speaker_selection_method=next_speaker,
    )
    manager = GroupChatManager(group, llm_config=False, is_termination_msg=is_final)
    return executor, manager, group


def solve(run: Run) -> str:
    executor, manager, group = build(run)
    executor.initiate_chat(manager, message=run.prompt)
    for message in reversed(group.messages):
        if message.get("name") == "assistant" and message.get("content"):
            return str(message["content"])
    return ""


if __name__ == "__main__":
    sys.exit(main("symtrace_suite.mas.ag2_groupchat", solve))
