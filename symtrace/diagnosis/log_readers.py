"""Reading whole logs into an imported trace: chat messages (and the Who&When steps shaped as
messages by importers.py) and chat-completions request/response logs. The dialects of stock
framework turns (dialects.py) decide what each message is; trace_builder.py makes the events.
"""

from __future__ import annotations

import json
from typing import Any

from symtrace.diagnosis.dialects import (
    Console,
    Observed,
    Turn,
    TurnKind,
    classify_turn,
    crewai_tool_error,
    observed_tool,
    split_console,
)
from symtrace.diagnosis.errors import TraceImportError
from symtrace.diagnosis.message_text import content_text, is_int
from symtrace.diagnosis.trace_builder import TraceBuilder, response_message
from symtrace.model.canonical import JSONValue


class LogReader(TraceBuilder):
    """A TraceBuilder that reads a whole log: `messages()` or `openai_log()` return the task
    and the final answer they found."""

    def messages(self, items: list[dict[str, Any]]) -> tuple[JSONValue, JSONValue]:
        history: list[dict[str, Any]] = []
        results: list[str] = []
        task: JSONValue = None
        final: JSONValue = None
        console_final: str | None = None
        for i, message in enumerate(items):
            where = f"{self.where}: messages[{i}]"
            role = message.get("role")
            text = content_text(message.get("content"))
            meta = {"step": message["step"]} if is_int(message.get("step")) else {}
            has_calls = bool(message.get("tool_calls") or message.get("function_call"))
            console = split_console(text) if role == "assistant" else None
            if console is not None and console.text != text:
                text = console.text
                message = {**message, "content": text}
                console_final = console.final_answer or console_final
            turn = classify_turn(message.get("name"), text) if role != "tool" else None
            observed = (
                observed_tool(text)
                if role == "assistant" and turn is not None and turn.kind is TurnKind.DECISION
                and not has_calls
                else None
            )  # fmt: skip
            if observed is not None:
                message = _observed_call(message, observed, len(self.events))
                has_calls = True
            if role == "user" and task is not None and turn is not None:
                turn = _observation(turn, text)  # CrewAI's observations come as user turns
            if (
                turn is not None
                and turn.kind is TurnKind.EXEC_RESULT
                and role in ("assistant", "user")
                and not (role == "user" and task is None)
            ):
                results.append(self.exec_result("main", turn.agent, turn, meta))
                history.append(message)
                self.runtime_failures(console, history, where, meta)
                continue
            if role in ("system", "developer", "user"):
                if role == "user" and task is None:
                    task = text
            elif role == "assistant":
                body = {"model": "imported", "messages": list(history)}
                rbody = _completion(message, len(self.events))
                control = turn is not None and turn.kind is TurnKind.CONTROL and not has_calls
                reason = turn.reason if turn is not None and not has_calls else None
                agent = (turn.agent if turn else None) or message.get("name") or "assistant"
                self.action(
                    "main", agent, body, 200, rbody, results, where, reason=reason, meta=meta
                )
                results = []
                if observed is not None:
                    results.append(self.result("main", _observed_result(message, observed), meta))
                if not control:
                    final = None if has_calls else text
            elif role in ("tool", "function"):
                results.append(self.result("main", message, meta))
            else:
                raise TraceImportError(f"{where}: unknown or missing role {role!r}")
            history.append(message)
            self.runtime_failures(console, history, where, meta)
        if not self.last_action:
            raise TraceImportError(f"{self.where}: no assistant message: nothing to diagnose")
        return task, final if console_final is None else console_final

    def runtime_failures(
        self,
        console: Console | None,
        history: list[dict[str, Any]],
        where: str,
        meta: dict[str, Any],
    ) -> None:
        """Exceptions the agent runtime logged while delivering the last message (in
        Magentic-One: usually the next LLM call failing): each a control agent_action with the
        error response, like a recorded failed framework call."""
        body = {"model": "imported", "messages": list(history)}
        for failure in console.failures if console is not None else ():
            error = {"error": {"type": failure.error_type, "message": failure.message}}
            self.action(
                "main", "runtime", body, failure.status, error, [], where,
                reason="runtime_error", meta=meta,
            )  # fmt: skip

    def openai_log(self, items: list[dict[str, Any]]) -> tuple[JSONValue, JSONValue]:
        task: JSONValue = None
        final: JSONValue = None
        for i, entry in enumerate(items):
            where = f"{self.where}: entries[{i}]"
            body, status, rbody = _entry(entry, where)
            agent = entry.get("agent") or entry.get("name")
            lane = str(agent) if agent else "main"
            results = []
            for message in body["messages"]:
                if not isinstance(message, dict):
                    raise TraceImportError(f"{where}: a request message is not an object")
                if task is None and message.get("role") == "user":
                    task = content_text(message.get("content"))
                if message.get("role") == "tool" and message.get("tool_call_id") in self.calls:
                    results.append(self.result(lane, message))
            self.action(lane, str(agent) if agent else None, body, status, rbody, results, where)
            message = response_message(rbody)
            final = None if message.get("tool_calls") else content_text(message.get("content"))
        return task, final


def _entry(entry: dict[str, Any], where: str) -> tuple[dict[str, Any], int, JSONValue]:
    if "request" not in entry or "response" not in entry:
        raise TraceImportError(f"{where}: an entry needs both 'request' and 'response'")
    request, response = entry["request"], entry["response"]
    body = request.get("body") if isinstance(request, dict) and "body" in request else request
    if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
        raise TraceImportError(f"{where}: request has no 'messages' list")
    if isinstance(response, list):
        raise TraceImportError(
            f"{where}: streamed chunk lists are not supported; log the "
            "assembled chat.completion instead"
        )
    if not isinstance(response, dict):
        raise TraceImportError(f"{where}: response is not a JSON object")
    rbody = response.get("body", response) if "choices" not in response else response
    status = response.get("status", response.get("status_code"))
    if not isinstance(status, int):
        if isinstance(rbody, dict) and "choices" in rbody:
            status = 200
        elif isinstance(rbody, dict) and "error" in rbody:
            status = 500
        else:
            raise TraceImportError(f"{where}: response is neither a chat.completion nor an error")
    return body, status, rbody


def _completion(message: dict[str, Any], n: int) -> dict[str, Any]:
    out = {k: message[k] for k in ("content", "tool_calls", "function_call") if k in message}
    out["role"] = "assistant"
    reason = "tool_calls" if out.get("tool_calls") or out.get("function_call") else "stop"
    return {
        "id": f"imported-{n:04d}",
        "object": "chat.completion",
        "model": "imported",
        "choices": [{"index": 0, "message": out, "finish_reason": reason}],
    }


def _observed_call(message: dict[str, Any], observed: Observed, n: int) -> dict[str, Any]:
    """The agent turn of an observed tool run: its action text and the call it made."""
    function = {"name": observed.tool, "arguments": json.dumps(observed.arguments, sort_keys=True)}
    call = {"id": f"observed-{n:04d}", "type": "function", "function": function}
    return {**message, "content": observed.action, "tool_calls": [call]}


def _observed_result(message: dict[str, Any], observed: Observed) -> dict[str, Any]:
    """The tool message answering `_observed_call`: the page seen, or the error page."""
    result: dict[str, Any] = {
        "role": "tool",
        "tool_call_id": message["tool_calls"][0]["id"],
        "name": observed.tool,
        "content": json.dumps(observed.value, sort_keys=True, ensure_ascii=False),
    }
    if observed.error is not None:
        result["error"] = {"type": "PageError", "message": observed.error}
    return result


def _observation(turn: Turn, text: str) -> Turn:
    """A user-role turn that is CrewAI's stock tool-failure observation, as an exec result."""
    error = crewai_tool_error(text)
    if error is None:
        return turn
    return Turn(TurnKind.EXEC_RESULT, turn.agent, failed=True, output=error, error_type="ToolError")
