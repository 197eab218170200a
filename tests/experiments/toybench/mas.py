"""The toy MAS: one openai-SDK agent with the toy tools. `--prompt` replaces the task text.

    python -m tests.experiments.toybench.mas --task add-3 [--prompt TEXT]
"""

from __future__ import annotations

import argparse
import json
import os
import re

import symtrace


def main() -> int:
    from openai import OpenAI

    from tests.experiments.toybench import TASKS
    from tests.experiments.toybench.tools import SCHEMAS, TOOLS

    parser = argparse.ArgumentParser()
    parser.add_argument("--task", required=True)
    parser.add_argument("--prompt")
    args = parser.parse_args()
    task = next(t for t in TASKS if t.id == args.task)
    client = OpenAI(max_retries=0)
    messages = [{"role": "user", "content": args.prompt or task.prompt}]
    model = os.environ.get("SYMTRACE_LLM_MODEL", "toy-model")
    with symtrace.agent("solver"):
        for _ in range(4):
            reply = client.chat.completions.create(model=model, messages=messages,
                                                   tools=SCHEMAS).choices[0].message
            if not reply.tool_calls:
                break
            messages.append(reply.model_dump(exclude_none=True))
            for call in reply.tool_calls:
                result = TOOLS[call.function.name](**json.loads(call.function.arguments or "{}"))
                messages.append({"role": "tool", "tool_call_id": call.id,
                                 "content": json.dumps(result, sort_keys=True)})
    text = reply.content or ""
    payload = re.split(r"FINAL ANSWER:\s*", text)[-1]
    try:
        answer = json.loads(payload)
    except ValueError:
        answer = payload
    symtrace.final_result(answer)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
