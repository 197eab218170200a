"""GroupChat with speaker_selection_method="random": AG2 draws the next speaker with Python's
`random.choice`. Replay must make the same draws; symtrace serves them from the bundle.

    export OPENAI_BASE_URL=http://127.0.0.1:PORT/v1 OPENAI_API_KEY=x
    python examples/ag2/groupchat_random.py
"""

from __future__ import annotations

import sys

from ag2_common import llm_config, print_outcome
from autogen import AssistantAgent, GroupChat, GroupChatManager, UserProxyAgent

TASK = "Brainstorm a name for a small Lisbon bakery."


def main() -> int:
    agents = [
        AssistantAgent(name, system_message=f"You are the {name}. {role} Keep it to one line.",
                       llm_config=llm_config())
        for name, role in (
            ("poet", "Suggest a lyrical name."),
            ("critic", "Point out one weakness of the last idea."),
            ("marketer", "Suggest a catchy slogan."),
        )
    ]
    user = UserProxyAgent("user_proxy", human_input_mode="NEVER", code_execution_config=False,
                          default_auto_reply="Go on.")
    group = GroupChat(agents=[user, *agents], messages=[], max_round=6,
                      speaker_selection_method="random")
    manager = GroupChatManager(group, llm_config=llm_config())
    result = user.initiate_chat(manager, message=TASK)
    print_outcome(result.summary, group.messages)
    return 0


if __name__ == "__main__":
    sys.exit(main())
