"""Classic AG2: one assistant in two concurrent `a_initiate_chat`s (two customers at once)."""

import asyncio
import os

from autogen import AssistantAgent, UserProxyAgent

QUESTIONS = ("Customer A: where is my order 1234?", "Customer B: my order 5557 is late.")


async def main() -> None:
    config = {"config_list": [{"model": "gpt-4o-mini", "api_key": "sk-stress",
                               "base_url": os.environ["OPENAI_BASE_URL"]}], "cache_seed": None}
    assistant = AssistantAgent("support", llm_config=config)
    customers = [UserProxyAgent(f"customer{i}", human_input_mode="NEVER",
                                code_execution_config=False) for i in (1, 2)]
    results = await asyncio.gather(*(c.a_initiate_chat(assistant, message=q, max_turns=1,
                                                       silent=True, clear_history=True)
                                     for c, q in zip(customers, QUESTIONS, strict=True)))
    for result in results:
        print(result.chat_history[-1]["content"])


if __name__ == "__main__":
    asyncio.run(main())
