"""AG2 notebook "Group Chat" (a user proxy, a coder and a product manager).

Source: repository ag2ai/ag2, path notebook/agentchat_groupchat.ipynb. Re-typed from memory
of that example; commit: unknown.

Changes from the published example:
- `llm_config` points at OPENAI_BASE_URL (the embedded stub; `_config.py`), cache off;
- the task asks about a fixed local text instead of "the latest paper about gpt-4 on arxiv"
  (no web access), and code execution is off (`code_execution_config=False`);
- `max_round=6` (the notebook uses 12), and the user proxy never asks for human input
  (`human_input_mode="NEVER"`; the notebook's "TERMINATE" would prompt on stdin);
- CORPUS_EDIT=1 changes the task (edited prompt); the final message is printed.
"""

import autogen
from _config import config_list, edited

llm_config = {"config_list": config_list(), "cache_seed": None}
user_proxy = autogen.UserProxyAgent(
    name="User_proxy",
    system_message="A human admin.",
    code_execution_config=False,
    human_input_mode="NEVER",
    is_termination_msg=lambda x: "TERMINATE" in (x.get("content") or ""),
)
coder = autogen.AssistantAgent(
    name="Coder",
    llm_config=llm_config,
)
pm = autogen.AssistantAgent(
    name="Product_manager",
    system_message="Creative in software product ideas.",
    llm_config=llm_config,
)
groupchat = autogen.GroupChat(agents=[user_proxy, coder, pm], messages=[], max_round=6)
manager = autogen.GroupChatManager(groupchat=groupchat, llm_config=llm_config)

result = user_proxy.initiate_chat(
    manager, message=edited(
        "Find a latest paper about gpt-4 (here: 'GPT-4 passes the bar exam') and find its "
        "potential applications in software.",
        "Find a latest paper about gpt-4 (here: 'GPT-4 writes unit tests') and find its "
        "potential applications in software."))
print(f"FINAL: {result.chat_history[-1]['content']}")
