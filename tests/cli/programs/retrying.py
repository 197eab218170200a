"""A user's program that retries a failed LLM call the way CrewAI does: each failure logged
with its traceback ("Failed to connect to OpenAI API: Connection error."), three attempts,
then a ConnectionError. Recorded, it makes one call; replayed with PROMPT_GOAL changed, the
call is refused and the retries are the noise issue 38 is about."""

import logging
import os

from openai import APIConnectionError, OpenAI


def ask(client: OpenAI) -> str:
    messages = [{"role": "system", "content": os.environ.get("PROMPT_GOAL", "Be brief.")},
                {"role": "user", "content": "Plan a day in Lisbon."}]
    for _attempt in range(3):
        try:
            reply = client.chat.completions.create(model="stub-model", messages=messages)
            return reply.choices[0].message.content or ""
        except APIConnectionError:
            logging.exception("Failed to connect to OpenAI API: Connection error.")
    raise ConnectionError("Failed to connect to OpenAI API: Connection error.")


if __name__ == "__main__":
    print("ANSWER:", ask(OpenAI(max_retries=0)), flush=True)
