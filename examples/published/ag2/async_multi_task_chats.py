"""AG2 notebook "Solving Multiple Tasks in a Sequence of Async Chats".

Source: repository ag2ai/ag2, path notebook/agentchat_multi_task_async_chats.ipynb (the
financial tasks / writing tasks example with `a_initiate_chats`, `chat_id` and
`prerequisites`). Re-typed from memory of that example; commit: unknown.

Changes from the published example:
- `llm_config` points at OPENAI_BASE_URL (the embedded stub; `_config.py`), cache off;
- the assistants get the stock figures from a local tool `get_stock_prices` (the notebook
  lets them write and run yfinance code); code execution is off;
- two financial tasks instead of three, `max_turns` capped at 2 for each chat;
- CORPUS_EDIT=1 changes the writing task (edited prompt); the summaries are printed.
"""

import asyncio
from typing import Annotated

import autogen
from _config import config_list, edited

llm_config = {"config_list": config_list(), "cache_seed": None}

financial_tasks = [
    """What are the current stock prices of NVDA and TESLA, and how is the performance over the past month in terms of percentage change?""",
    """Investigate possible reasons of the stock performance.""",
]

writing_tasks = [edited(
    """Develop an engaging blog post using any information provided.""",
    """Develop a short newsletter using any information provided.""")]

financial_assistant = autogen.AssistantAgent(
    name="Financial_assistant",
    llm_config=llm_config,
)
research_assistant = autogen.AssistantAgent(
    name="Researcher",
    llm_config=llm_config,
)
writer = autogen.AssistantAgent(
    name="writer",
    llm_config=llm_config,
    system_message="""
        You are a professional writer, known for
        your insightful and engaging articles.
        You transform complex concepts into compelling narratives.
        Reply "TERMINATE" in the end when everything is done.
        """,
)

user = autogen.UserProxyAgent(
    name="User",
    human_input_mode="NEVER",
    is_termination_msg=lambda x: x.get("content", "") and x.get("content", "").find("TERMINATE") >= 0,
    code_execution_config=False,
)


def get_stock_prices(symbols: Annotated[str, "comma-separated tickers"]) -> str:
    prices = {"NVDA": (875.28, 12.4), "TSLA": (175.79, -8.1)}
    return "; ".join(f"{s}: {prices[s][0]} USD, {prices[s][1]:+}% over the month"
                     for s in symbols.replace(" ", "").split(",") if s in prices)


autogen.register_function(get_stock_prices, caller=financial_assistant, executor=user,
                          description="Current stock prices and one-month change.")


async def main() -> None:
    chat_results = await user.a_initiate_chats(
        [
            {"chat_id": 1, "recipient": financial_assistant, "message": financial_tasks[0],
             "silent": False, "summary_method": "reflection_with_llm", "max_turns": 2},
            {"chat_id": 2, "prerequisites": [1], "recipient": research_assistant,
             "message": financial_tasks[1], "silent": False,
             "summary_method": "reflection_with_llm", "max_turns": 1},
            {"chat_id": 3, "prerequisites": [1, 2], "recipient": writer, "silent": False,
             "message": writing_tasks[0], "max_turns": 1},
        ]
    )
    for chat_id in sorted(chat_results):
        print(f"*****{chat_id}th chat*******:")
        print(chat_results[chat_id].summary)


asyncio.run(main())
