"""What the policy reads from a chat-completions request: task, tool history, guidance.

The task is found by its prompt text anywhere in the conversation (a rerun/reflection/critic
prompt quotes it after "Task:"). The tool history pairs each assistant tool call with its
`tool` message; results are parsed as JSON, or as a Python literal (CrewAI and AG2 stringify
dicts), and count as failed when they carry an error status/object or start with "Error".
Guidance is recognised by the text of symtrace's default templates (diagnosis Δ, generic Δ,
and the three App. E.1 task-level prompts).
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass
from typing import Any

from symtrace.stub import request as rq
from symtrace_suite.tasks import Task

_CATEGORIES = re.compile(r"\bC[1-4]\b")


@dataclass(frozen=True, slots=True)
class ToolUse:
    name: str
    args: dict[str, Any]
    result: Any
    ok: bool


@dataclass(frozen=True, slots=True)
class Guidance:
    """Which repair text the request carries; `categories` are the Δ's confirmed symptoms."""

    kind: str  # "none" | "rerun" | "self_reflection" | "critic" | "generic" | "suspicious"
    categories: frozenset[str] = frozenset()


def squash(text: str) -> str:
    return " ".join(text.split())


def find_task(body: dict[str, Any], tasks: list[Task]) -> Task | None:
    """The task whose prompt occurs in the request (the longest, if several do)."""
    text = squash(rq.all_text(body))
    hits = [t for t in tasks if squash(t.prompt) in text]
    return max(hits, key=lambda t: len(t.prompt)) if hits else None


def parse_result(content: str) -> Any:
    text = content.strip()
    for parse in (json.loads, ast.literal_eval):
        try:
            return parse(text)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
    return text


def failed(result: Any) -> bool:
    if isinstance(result, dict):
        status = result.get("status")
        return bool(result.get("error")) or (isinstance(status, str) and status == "error")
    return isinstance(result, str) and result.lstrip().lower().startswith("error")


def tool_history(body: dict[str, Any]) -> list[ToolUse]:
    """Every completed tool call in the conversation, in call order."""
    msgs = rq.messages(body)
    results = {
        m.get("tool_call_id"): rq.content_text(m.get("content"))
        for m in msgs
        if m.get("role") == "tool"
    }
    out = []
    for m in msgs:
        for call in m.get("tool_calls") or []:
            if not isinstance(call, dict) or call.get("id") not in results:
                continue
            fn = call.get("function") or {}
            try:
                args = json.loads(fn.get("arguments") or "{}")
            except ValueError:
                args = {}
            result = parse_result(results[call["id"]])
            out.append(
                ToolUse(
                    str(fn.get("name")),
                    args if isinstance(args, dict) else {},
                    result,
                    not failed(result),
                )
            )
    return out


def guidance(body: dict[str, Any]) -> Guidance:
    text = rq.all_text(body)
    if "Runtime symptoms confirmed at this point of the run" in text:
        tail = text.split("Runtime symptoms confirmed at this point of the run", 1)[1]
        return Guidance("suspicious", frozenset(_CATEGORIES.findall(tail[:2000])))
    if "Check the task requirements again and review this step" in text:
        return Guidance("generic")
    if "Mode: critic-agent" in text:
        return Guidance("critic")
    if "Mode: self-reflection" in text:
        return Guidance("self_reflection")
    if "Mode: fail-then-rerun" in text:
        return Guidance("rerun")
    return Guidance("none")


_FINAL = re.compile(r"FINAL ANSWER:\s*")


def final_answers(text: str) -> list[str]:
    """The payloads of the `FINAL ANSWER:` markers in *text*, in order (each up to TERMINATE
    or the next marker)."""
    matches = list(_FINAL.finditer(text))
    out = []
    for i, match in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(text)
        payload = text[match.end() : end].split("TERMINATE", 1)[0].strip()
        if payload:
            out.append(payload)
    return out
