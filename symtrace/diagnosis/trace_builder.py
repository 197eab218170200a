"""Building an imported trace: events with per-type ordinals, DATA edges as the log shows
them and CONTROL edges by lane (the same node types and graph a recording has).

`TraceBuilder` turns one decision (an assistant message), one tool result or one code
executor's reply into events; log_readers.py walks a whole log through it.
"""

from __future__ import annotations

import re
from typing import Any

from symtrace.diagnosis.dialects import DECISION_REASONS, Turn, crewai_tool_error
from symtrace.diagnosis.errors import TraceImportError
from symtrace.diagnosis.message_text import content_text, parse_json
from symtrace.model.canonical import JSONValue
from symtrace.model.events import Edge, EdgeKind, Event, EventType, event_id

# A tool message that is a raised exception: `SomeError: message` (last line of a traceback).
# Names ending in Error/Exception/Timeout/Expired count, plus requests' schema/URL exceptions.
_EXCEPTION_NAME = (
    r"[A-Za-z_][\w.]*(?:Error|Exception|Timeout|Expired)"
    r"|(?:[\w]+\.)*(?:MissingSchema|InvalidSchema|InvalidURL|InvalidHeader|TooManyRedirects)"
)
_EXCEPTION = re.compile(rf"(?:^|\n)(?P<type>{_EXCEPTION_NAME})\s*:\s*(?P<message>[^\n]*)\s*$")
_RAISED = re.compile(rf"^(?:Traceback \(most recent call last\)|(?:{_EXCEPTION_NAME})\s*:)")
_CODE_BLOCK = re.compile(r"```[ \t]*(?P<lang>[\w+-]*)[^\n]*\n(?P<code>.*?)```", re.S)
EXEC_TOOL = "execute_code"


class TraceBuilder:
    """Appends events with per-type ordinals, DATA edges as given and CONTROL edges by lane."""

    def __init__(self, where: str) -> None:
        self.where = where
        self.events: list[Event] = []
        self.counts: dict[EventType, int] = {}
        self.lane_last: dict[str, str] = {}
        self.last_action: tuple[str, ...] = ()
        self.calls: dict[str, str] = {}  # provider call id -> tool_call event id
        self.open_calls: list[tuple[str, str]] = []  # (tool name, event id) not yet answered
        self.last_text = ""  # the text of the last decision (code blocks an executor runs)

    def add(
        self,
        type_: EventType,
        lane: str,
        agent: str | None,
        request: JSONValue,
        response: JSONValue,
        *,
        data: tuple[str, ...] | list[str] = (),
        meta: dict[str, Any] | None = None,
        reason: str | None = None,
    ) -> str:
        ordinal = self.counts.get(type_, 0)
        self.counts[type_] = ordinal + 1
        eid = event_id(type_, ordinal)
        parents = [Edge(p, EdgeKind.DATA) for p in dict.fromkeys(data)]
        previous = self.lane_last.get(lane)
        if previous is not None and previous not in data:
            parents.append(Edge(previous, EdgeKind.CONTROL))
        self.lane_last[lane] = eid
        self.events.append(
            Event(
                eid,
                len(self.events),
                type_,
                lane,
                agent,
                reason,
                tuple(parents),
                request,
                None,
                response,
                None,
                meta or {},
            ).with_hashes()
        )
        return eid

    def action(
        self,
        lane: str,
        agent: str | None,
        body: dict[str, Any],
        status: int,
        rbody: JSONValue,
        data: list[str],
        where: str,
        *,
        reason: str | None = None,
        meta: dict[str, Any] | None = None,
    ) -> str:
        request = {"method": "POST", "path": "/v1/chat/completions", "query": "", "body": body}
        aid = self.add(
            EventType.AGENT_ACTION,
            lane,
            agent,
            request,
            {"status": status, "headers": {}, "body": rbody},
            data=data,
            meta=meta,
            reason=reason,
        )
        if reason is None or reason in DECISION_REASONS:
            self.last_action = (aid,)
            self.last_text = content_text(response_message(rbody).get("content"))
        message = response_message(rbody)
        calls = message.get("tool_calls") or []
        if not isinstance(calls, list):
            raise TraceImportError(f"{where}: tool_calls is not a list")
        if isinstance(message.get("function_call"), dict):
            calls = [*calls, {"function": message["function_call"]}]
        for j, call in enumerate(calls):
            function = call.get("function") if isinstance(call, dict) else None
            if not isinstance(function, dict) or not isinstance(function.get("name"), str):
                raise TraceImportError(f"{where}: tool_calls[{j}] has no function name")
            call_id = call.get("id")
            tid = self.add(
                EventType.TOOL_CALL,
                lane,
                agent,
                {"tool": function["name"], "arguments": _arguments(function)},
                None,
                data=[aid],
                meta={"call_id": call_id} if call_id else {},
            )
            if isinstance(call_id, str):
                self.calls[call_id] = tid
            self.open_calls.append((function["name"], tid))
        return aid

    def result(self, lane: str, message: dict[str, Any], meta: dict[str, Any] | None = None) -> str:
        call_id = message.get("tool_call_id")
        tid = self.calls.pop(call_id, None) if isinstance(call_id, str) else None
        if tid is None:
            name = message.get("name")
            tid = next((t for n, t in self.open_calls if n == name or name is None), None)
        if tid is None:
            # No call in view: inventing one (with `{}` arguments) would make every later
            # orphan result look like a repeat of the same action. The result hangs off the
            # decision it follows and says which tool, if the log named one.
            tool = message.get("name")
            orphan = {**(meta or {}), "call": "not_in_view"}
            if isinstance(tool, str) and tool:
                orphan["tool"] = tool
            return self.add(
                EventType.TOOL_RESULT,
                lane,
                None,
                None,
                _result(message),
                data=list(self.last_action),
                meta=orphan,
            )
        self.open_calls = [(n, t) for n, t in self.open_calls if t != tid]
        return self.add(
            EventType.TOOL_RESULT, lane, None, None, _result(message), data=[tid], meta=meta
        )

    def exec_result(self, lane: str, agent: str | None, turn: Turn, meta: dict[str, Any]) -> str:
        """A code executor's reply: the result of running the code blocks of the decision it
        answers (the call is in view as that decision's text), else a result with no call."""
        blocks = _CODE_BLOCK.findall(self.last_text) if self.last_action else []
        if turn.failed:
            response: dict[str, Any] = {
                "ok": False,
                "error": {
                    "type": turn.error_type or "ExecutionFailed",
                    "module": None,
                    "message": _tail(turn.output)
                    + (f" (exit code {turn.exit_code})" if turn.exit_code is not None else ""),
                },
            }
        else:
            response = {"ok": True, "value": turn.output}
        if not blocks:
            return self.add(
                EventType.TOOL_RESULT,
                lane,
                agent,
                None,
                response,
                data=list(self.last_action),
                meta={**meta, "call": "not_in_view", "tool": EXEC_TOOL},
            )
        code = "\n".join(body.strip() for _, body in blocks)
        languages = sorted({lang or "text" for lang, _ in blocks})
        tid = self.add(
            EventType.TOOL_CALL,
            lane,
            agent,
            {"tool": EXEC_TOOL, "arguments": {"code": code, "language": ",".join(languages)}},
            None,
            data=list(self.last_action),
            meta={"from_text": True},
        )
        return self.add(EventType.TOOL_RESULT, lane, agent, None, response, data=[tid], meta=meta)


def response_message(rbody: JSONValue) -> dict[str, Any]:
    """The assistant message of a chat.completion body ({} when there is none)."""
    if isinstance(rbody, dict) and isinstance(rbody.get("choices"), list) and rbody["choices"]:
        choice = rbody["choices"][0]
        if isinstance(choice, dict) and isinstance(choice.get("message"), dict):
            return choice["message"]
    return {}


def _arguments(function: dict[str, Any]) -> JSONValue:
    args = function.get("arguments")
    parsed = parse_json(args) if isinstance(args, str) else args
    return {} if parsed is None or parsed == "" else parsed


def _result(message: dict[str, Any]) -> dict[str, Any]:
    error = message.get("error")
    text = content_text(message.get("content"))
    if isinstance(error, dict | str) and error:
        err = error if isinstance(error, dict) else {"message": error}
        return {
            "ok": False,
            "error": {
                "type": str(err.get("type") or "Error"),
                "module": None,
                "message": str(err.get("message") or text),
            },
        }
    crew = crewai_tool_error(text)
    if crew is not None:  # CrewAI's stock "I encountered an error while trying to use the tool"
        return {"ok": False, "error": {"type": "ToolError", "module": None, "message": crew}}
    match = (
        _EXCEPTION.search(text.strip()) if message.get("is_error") or _looks_raised(text) else None
    )
    if match or message.get("is_error"):
        module, _, kind = (match.group("type") if match else "Error").rpartition(".")
        detail = match.group("message") if match else text
        error_ = {"type": kind, "module": module or None, "message": detail}
        return {"ok": False, "error": error_}
    content = message.get("content")
    return {"ok": True, "value": parse_json(content) if isinstance(content, str) else content}


def _tail(text: str, limit: int = 400) -> str:
    text = text.strip()
    return text if len(text) <= limit else "…" + text[-limit:]


def _looks_raised(text: str) -> bool:
    """A tool message that is a Python exception: `Traceback …` or `SomeError: message`."""
    return bool(_RAISED.match(text.strip()))
