"""AG2 notebook "Solving Complex Tasks with Nested Chats" (writer + critic reflection).

Source: repository ag2ai/ag2, path notebook/agentchat_nestedchat.ipynb (the writer/critic
example: `reflection_message`, `user_proxy.register_nested_chats(..., trigger=writer)`).
Re-typed from memory of that example; commit: unknown.

Changes from the published example:
- `llm_config` points at OPENAI_BASE_URL (the embedded stub; `_config.py`), cache off;
- the critic checks the draft with a local tool `check_harmful_content` before reviewing
  (the tool prints "Checking for harmful content...", as OptiGuide's safeguard step does in
  the AG2 notebooks); the user proxy executes it; the nested chat has `max_turns=2` for it;
- the user proxy's `is_termination_msg` reads `(x.get("content") or "")`: the published
  `x.get("content", "")` fails on the critic's tool-call message, whose content is None;
- CORPUS_EDIT=1 changes the task (edited prompt); the final summary is printed.
"""

from typing import Annotated

import autogen
from _config import config_list, edited

llm_config = {"config_list": config_list(), "cache_seed": None}

task = edited("Write a concise but engaging blogpost about Navida.",
              "Write a concise but engaging blogpost about Porto.")

writer = autogen.AssistantAgent(
    name="Writer",
    llm_config=llm_config,
    system_message="""
    You are a professional writer, known for your insightful and engaging articles.
    You transform complex concepts into compelling narratives.
    You should imporve the quality of the content based on the feedback from the user.
    """,
)

user_proxy = autogen.UserProxyAgent(
    name="User",
    human_input_mode="NEVER",
    is_termination_msg=lambda x: (x.get("content") or "").find("TERMINATE") >= 0,
    code_execution_config={"last_n_messages": 1, "work_dir": "tasks", "use_docker": False},
)

critic = autogen.AssistantAgent(
    name="Critic",
    llm_config=llm_config,
    system_message="""
    You are a critic, known for your thoroughness and commitment to standards.
    Your task is to scrutinize content for any harmful elements or regulatory violations, ensuring
    all materials align with required guidelines.
    For code
    """,
)


def check_harmful_content(text: Annotated[str, "the draft to check"]) -> str:
    print("Checking for harmful content...")
    flagged = [word for word in ("violence", "hate") if word in text.lower()]
    print(f"Flagged words: {flagged or 'none'}")
    return "No harmful content found." if not flagged else f"Flagged: {', '.join(flagged)}"


autogen.register_function(check_harmful_content, caller=critic, executor=user_proxy,
                          description="Check a draft for harmful content.")


def reflection_message(recipient, messages, sender, config):
    print("Reflecting...", "yellow")
    return f"Reflect and provide critique on the following writing. \n\n {recipient.chat_messages_for_summary(sender)[-1]['content']}"


user_proxy.register_nested_chats(
    [{"recipient": critic, "message": reflection_message, "summary_method": "last_msg",
      "max_turns": 2}],
    trigger=writer,  # condition=my_condition,
)

res = user_proxy.initiate_chat(recipient=writer, message=task, max_turns=2,
                               summary_method="last_msg")
print(f"FINAL: {res.summary}")
