"""A framework-free MAS for the suite: one tool-calling agent over the openai SDK.

It is the smallest program the study can drive (and the template for "your own MAS": read
the task, talk to OPENAI_BASE_URL, call tools, hand the answer to `symtrace.final_result`).
The study's tests use it because it starts in about a second; the paper's three shapes are
`symtrace_suite.mas.{ag2_groupchat,crewai_crew,magentic_one}`.

    python -m symtrace_study.plain_mas --task shop-007 [--prompt TEXT]
"""

from __future__ import annotations

import inspect
import json
import types
import typing
from collections.abc import Callable
from typing import Any

from symtrace_suite.mas.common import ANSWER_INSTRUCTION, Run, main
from symtrace_suite.mas.tools import TOOLS

import symtrace
from symtrace.model.canonical import to_json_value

MAX_TURNS = 12
_JSON_TYPES = {str: "string", float: "number", int: "integer", bool: "boolean"}


def tool_schema(fn: Callable[..., Any]) -> dict[str, Any]:
    """The OpenAI function schema of a suite tool, from its signature and docstring."""
    hints = typing.get_type_hints(fn)
    properties: dict[str, Any] = {}
    required = []
    for name, param in inspect.signature(fn).parameters.items():
        hint = hints.get(name, str)
        if isinstance(hint, types.UnionType):  # `x: str | None = None`
            hint = next(a for a in typing.get_args(hint) if a is not type(None))
        properties[name] = {"type": _JSON_TYPES.get(hint, "string")}
        if param.default is inspect.Parameter.empty:
            required.append(name)
    return {
        "type": "function",
        "function": {
            "name": fn.__name__,
            "description": inspect.getdoc(fn) or fn.__name__,
            "parameters": {"type": "object", "properties": properties, "required": required},
        },
    }


def canonical_json(value: Any) -> Any:
    """The tool result as symtrace hands it back on replay (canonical JSON stores 0.0 as 0),
    so the text the model sees is the same live and replayed."""
    return to_json_value(value)


def solve(run: Run) -> str:
    from openai import OpenAI  # after argument checks: a usage error stays fast

    tools = {fn.__name__: symtrace.tool(fn) for fn in TOOLS}
    schemas = [tool_schema(fn) for fn in TOOLS]
    client = OpenAI()  # the SDK's own retries of 429/5xx/timeouts stay on, as users' do
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are the assistant. " + ANSWER_INSTRUCTION},
        {"role": "user", "content": run.prompt},
    ]
    with symtrace.agent("assistant"):
        for _ in range(MAX_TURNS):
            reply = client.chat.completions.create(
                model=run.model, messages=messages, tools=schemas, temperature=0
            ).choices[0].message
            if not reply.tool_calls:
                return reply.content or ""
            messages.append(reply.model_dump(exclude_none=True))
            for call in reply.tool_calls:
                try:
                    arguments = json.loads(call.function.arguments or "{}")
                    fn = tools[call.function.name]
                    result: Any = fn(**arguments)
                except (KeyError, TypeError, ValueError) as exc:
                    result = {"status": "error", "error": {"message": str(exc)}}
                content = json.dumps(canonical_json(result), sort_keys=True)
                messages.append({"role": "tool", "tool_call_id": call.id, "content": content})
    return messages[-1].get("content") or ""


if __name__ == "__main__":
    raise SystemExit(main("symtrace_study.plain_mas", solve))
