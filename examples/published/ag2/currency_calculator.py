"""AG2 notebook "Currency Calculator: Task Solving with Provided Tools as Functions".

Source: repository ag2ai/ag2, path notebook/agentchat_function_call_currency_calculator.ipynb.
Re-typed from memory of that example; commit: unknown.

Changes from the published example:
- `llm_config` points at OPENAI_BASE_URL (the embedded stub; `_config.py`), cache off;
- the chat is capped at `max_turns=4` (the notebook relies on the model's TERMINATE);
- the final summary is printed; CORPUS_EDIT=1 asks for another amount (edited prompt).
"""

from typing import Annotated, Literal

import autogen
from _config import config_list, edited

llm_config = {"config_list": config_list(), "timeout": 120, "cache_seed": None}

chatbot = autogen.AssistantAgent(
    name="chatbot",
    system_message="For currency exchange tasks, only use the functions you have been provided "
    "with. Reply TERMINATE when the task is done.",
    llm_config=llm_config,
)

user_proxy = autogen.UserProxyAgent(
    name="user_proxy",
    is_termination_msg=lambda x: x.get("content", "")
    and x.get("content", "").rstrip().endswith("TERMINATE"),
    human_input_mode="NEVER",
    max_consecutive_auto_reply=10,
    code_execution_config=False,
)

CurrencySymbol = Literal["USD", "EUR"]


def exchange_rate(base_currency: CurrencySymbol, quote_currency: CurrencySymbol) -> float:
    if base_currency == quote_currency:
        return 1.0
    elif base_currency == "USD" and quote_currency == "EUR":
        return 1 / 1.1
    elif base_currency == "EUR" and quote_currency == "USD":
        return 1.1
    else:
        raise ValueError(f"Unknown currencies {base_currency}, {quote_currency}")


@user_proxy.register_for_execution()
@chatbot.register_for_llm(description="Currency exchange calculator.")
def currency_calculator(
    base_amount: Annotated[float, "Amount of currency in base_currency"],
    base_currency: Annotated[CurrencySymbol, "Base currency"] = "USD",
    quote_currency: Annotated[CurrencySymbol, "Quote currency"] = "EUR",
) -> str:
    quote_amount = exchange_rate(base_currency, quote_currency) * base_amount
    return f"{quote_amount} {quote_currency}"


res = user_proxy.initiate_chat(
    chatbot, message=edited("How much is 123.45 USD in EUR?", "How much is 99 USD in EUR?"),
    summary_method="reflection_with_llm", max_turns=4,
)
print(f"FINAL: {res.summary}")
