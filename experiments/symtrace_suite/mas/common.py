"""What the three MAS programs share: arguments, environment, and declaring the answer.

The answer is the JSON after the last `FINAL ANSWER:` marker of the final message (up to a
`TERMINATE` line); when that is not JSON the payload text itself is the answer, so a prose
answer reaches the evaluator (and the diagnosis) as what it is.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson

import symtrace
from symtrace_suite.mas.tools import SuiteConfigError, service_urls
from symtrace_suite.tasks import UnknownTaskError, get_task

DEFAULT_MODEL = "gpt-4o-mini"
ANSWER_INSTRUCTION = (
    "Use the tools to get the data; never guess. When you have the answer, reply with one "
    "line `FINAL ANSWER: <the JSON answer>` and then TERMINATE."
)
EXIT_USAGE = 2
_FINAL = re.compile(r"FINAL ANSWER:\s*")


@dataclass(frozen=True)
class Run:
    task_id: str
    prompt: str
    model: str


def model_name() -> str:
    return os.environ.get("SYMTRACE_LLM_MODEL") or DEFAULT_MODEL


def parse_args(prog: str, argv: list[str] | None = None) -> Run:
    parser = argparse.ArgumentParser(prog=prog)
    parser.add_argument("--task", required=True, help="task id, e.g. shop-007")
    parser.add_argument("--prompt", help="replaces the task prompt (task-level repair arms)")
    args = parser.parse_args(argv)
    try:
        task = get_task(args.task)
        service_urls()
    except (UnknownTaskError, SuiteConfigError) as exc:
        parser.exit(EXIT_USAGE, f"{prog}: error: {exc}\n")
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY"):
        if not os.environ.get(name):
            parser.exit(EXIT_USAGE, f"{prog}: error: {name} is not set\n")
    return Run(task.id, args.prompt or task.prompt, model_name())


def final_value(text: str) -> Any:
    """The structured answer in a final message (see the module docstring)."""
    matches = list(_FINAL.finditer(text))
    payload = text[matches[-1].end() :] if matches else text
    payload = payload.split("TERMINATE", 1)[0].strip()
    try:
        return json.loads(payload)
    except ValueError:
        return payload


def declare(answer: Any) -> None:
    """Hand the answer to symtrace (inert outside a session) and print it."""
    symtrace.final_result(answer)
    print("FINAL ANSWER: " + orjson.dumps(answer, option=orjson.OPT_SORT_KEYS).decode())


def main(prog: str, solve: Callable[[Run], str], argv: list[str] | None = None) -> int:
    run = parse_args(prog, argv)
    declare(final_value(solve(run)))
    sys.stdout.flush()
    return 0
