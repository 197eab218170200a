"""Drive the policy through a task without a framework: a minimal tool-calling loop.

For calibrating `skill` and for tests: it sends the same kind of chat-completions bodies a
framework sends (system + user prompt, assistant tool calls, `tool` messages), runs the
suite's real tool functions against the services, and stops at the first text reply.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import orjson

from symtrace_suite.mas import tools as suite_tools
from symtrace_suite.mas.common import ANSWER_INSTRUCTION, final_value
from symtrace_suite.policy import SuitePolicy
from symtrace_suite.tasks import Task

_SCHEMAS: list[dict[str, Any]] | None = None


def tool_schemas() -> list[dict[str, Any]]:
    """OpenAI tool definitions of the suite's tools (names and parameters; types loosely)."""
    global _SCHEMAS
    if _SCHEMAS is None:
        import inspect

        out = []
        for fn in suite_tools.TOOLS:
            params = inspect.signature(fn).parameters
            props = {
                n: {"type": "number" if p.annotation in ("float", float) else "string"}
                for n, p in params.items()
            }
            required = [n for n, p in params.items() if p.default is inspect.Parameter.empty]
            out.append(
                {
                    "type": "function",
                    "function": {
                        "name": fn.__name__,
                        "description": fn.__doc__ or "",
                        "parameters": {"type": "object", "properties": props, "required": required},
                    },
                }
            )
        _SCHEMAS = out
    return _SCHEMAS


def run_task(
    policy: SuitePolicy,
    task: Task,
    urls: Mapping[str, str],
    *,
    prompt: str | None = None,
    max_steps: int = 16,
) -> tuple[Any, list[dict[str, Any]]]:
    """(answer, messages) of one run; tools hit the services at *urls*."""
    fns = {fn.__name__: fn for fn in suite_tools.TOOLS}
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": f"You are the assistant. {ANSWER_INSTRUCTION}"},
        {"role": "user", "content": prompt or task.prompt},
    ]
    with suite_tools.using_urls(urls):
        for step in range(max_steps):
            body = {
                "model": "gpt-4o-mini",
                "messages": messages,
                "tools": tool_schemas(),
                "temperature": 0,
            }
            reply = policy.respond(body, step)
            if not reply.tool_calls:
                messages.append({"role": "assistant", "content": reply.content})
                return final_value(reply.content or ""), messages
            calls = [
                {
                    "id": f"call_{step}_{i}",
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments},
                }
                for i, c in enumerate(reply.tool_calls)
            ]
            messages.append({"role": "assistant", "content": None, "tool_calls": calls})
            for call, tc in zip(calls, reply.tool_calls, strict=True):
                result = fns[tc.name](**json.loads(tc.arguments))
                messages.append(
                    {
                        "role": "tool",
                        "tool_call_id": call["id"],
                        "content": orjson.dumps(result).decode(),
                    }
                )
    return None, messages


def main(argv: list[str] | None = None) -> int:
    """`python -m symtrace_suite.policy.dryrun --skill 0.7 --seeds 5`: pass rates, no framework."""
    import argparse
    from collections import Counter

    from symtrace_suite.services import start_services
    from symtrace_suite.tasks import load_tasks

    parser = argparse.ArgumentParser(prog="python -m symtrace_suite.policy.dryrun")
    parser.add_argument("--skill", type=float, action="append", help="repeatable; default 0.7")
    parser.add_argument("--seeds", type=int, default=5, help="seeds 0..N-1 per task")
    args = parser.parse_args(argv)
    tasks = load_tasks()
    with start_services() as services:
        for skill in args.skill or [0.7]:
            passed: Counter[str] = Counter()
            for seed in range(args.seeds):
                policy = SuitePolicy(seed, skill)
                for task in tasks:
                    services.reset()
                    answer, _ = run_task(policy, task, services.urls)
                    passed[task.category] += task.evaluate(answer, services.state()).passed
            total = {c: sum(t.category == c for t in tasks) * args.seeds for c in passed}
            cells = "  ".join(f"{c} {passed[c] / total[c]:.2f}" for c in sorted(total))
            overall = sum(passed.values()) / (len(tasks) * args.seeds)
            print(f"skill {skill:.2f}: pass rate {overall:.3f}  ({cells})")
    return 0


if __name__ == "__main__":
    import sys

    sys.exit(main())
