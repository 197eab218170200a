"""Import existing logs as analysis-only traces (same node types and graph, not replayable).

Three shapes are accepted (docs/diagnosis.md has examples):

- `messages`: a JSON list of chat messages (`role`, `name`, `content`, optional `tool_calls`,
  `role: "tool"` results with `tool_call_id`), or `{"task": ..., "messages": [...]}`.
- `openai-log`: a JSON list (or JSONL file) of `{"request": <chat-completions request body>,
  "response": <chat.completion>}` entries, or `{"task": ..., "calls": [...]}`. `request` may
  also be `{"body": ...}` and `response` `{"status": 200, "body": ...}`.
- `steps`: a multi-agent transcript `{"question": ..., "trajectory": [{"step": 0, "agent_name":
  ..., "content": ...}, ...]}` (the Who&When layout; labels in the file are never read here).

Each assistant turn becomes an agent_action, each tool call a tool_call, each tool message a
tool_result (DATA edge from its call, none when the call is not in view), and the run ends in
a final_result holding the last assistant text. Framework dialects (dialects.py) turn stock
control turns into agent_actions with a `reason` and code-executor replies into tool results
of the code the previous turn asked to run; a WebSurfer/FileSurfer turn becomes its decision, the
tool call it reports and the page it saw; console output a benchmark harness printed into a
message (warnings, runtime tracebacks, agbench's end-of-run lines) is taken out of the agent's
text. The bundle is in memory only, marked `replayable: false`.
"""

from __future__ import annotations

import json
import os
import re
from enum import StrEnum
from pathlib import Path
from typing import Any

from symtrace.bundle import FORMAT_VERSION
from symtrace.bundle.format import KIND_RECORDING, MANIFEST, check_manifest
from symtrace.bundle.reader import Bundle, load_bundle
from symtrace.diagnosis.dialects import (
    DECISION_REASONS,
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
from symtrace.diagnosis.view import content_text, parse_json
from symtrace.errors import SymtraceError
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
HUMAN_NAMES = frozenset({"human", "user"})
EXEC_TOOL = "execute_code"


class ImportFormat(StrEnum):
    AUTO = "auto"
    MESSAGES = "messages"
    OPENAI_LOG = "openai-log"
    STEPS = "steps"


def load_source(
    path: str | os.PathLike[str],
    *,
    fmt: ImportFormat | str = ImportFormat.AUTO,
    task: JSONValue = None,
) -> Bundle:
    """A recorded bundle directory, or a log file imported as an analysis-only trace."""
    root = Path(path)
    if root.is_dir() and (root / MANIFEST).is_file():
        return load_bundle(root)
    if root.is_dir():
        return load_bundle(root)  # raises BundleNotFound with the usual message
    return import_trace(root, fmt=fmt, task=task)


def import_trace(
    path: str | os.PathLike[str],
    *,
    fmt: ImportFormat | str = ImportFormat.AUTO,
    task: JSONValue = None,
) -> Bundle:
    """Read the log file at *path* and convert it (see the module docstring)."""
    where = str(path)
    try:
        raw = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise TraceImportError(f"{where}: no such file or bundle directory") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise TraceImportError(f"{where}: cannot read ({exc})") from exc
    return trace_from_data(_parse(raw, where), fmt=fmt, task=task, name=where)


def _parse(raw: str, where: str) -> JSONValue:
    try:
        return json.loads(raw)
    except ValueError as first:
        lines = [line for line in raw.splitlines() if line.strip()]
        if len(lines) < 2:
            raise TraceImportError(f"{where}: not valid JSON ({first})") from first
        out = []
        for number, line in enumerate(raw.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                out.append(json.loads(line))
            except ValueError as exc:
                raise TraceImportError(f"{where}:{number}: not valid JSON ({exc})") from exc
        return out


def detect_format(data: JSONValue, where: str = "<data>") -> ImportFormat:
    if isinstance(data, dict):
        if isinstance(data.get("trajectory"), list):
            return ImportFormat.STEPS
        if isinstance(data.get("messages"), list):
            return ImportFormat.MESSAGES
        if any(isinstance(data.get(k), list) for k in ("calls", "entries", "log")):
            return ImportFormat.OPENAI_LOG
    if isinstance(data, list) and data and all(isinstance(item, dict) for item in data):
        if all("role" in item for item in data):
            return ImportFormat.MESSAGES
        if all("request" in item and "response" in item for item in data):
            return ImportFormat.OPENAI_LOG
    raise TraceImportError(
        f"{where}: cannot tell the format: expected a list of chat messages (objects with "
        "'role'), a list of {'request', 'response'} entries, or an object with 'messages', "
        "'calls' or 'trajectory'"
    )


def trace_from_data(
    data: JSONValue,
    *,
    fmt: ImportFormat | str = ImportFormat.AUTO,
    task: JSONValue = None,
    name: str = "<import>",
) -> Bundle:
    """Convert parsed log data into an analysis-only Bundle."""
    fmt = ImportFormat(fmt)
    if fmt is ImportFormat.AUTO:
        fmt = detect_format(data, name)
    wrapper = data if isinstance(data, dict) else {}
    if task is None:
        task = wrapper.get("task")
    builder = _Builder(name)
    if fmt is ImportFormat.MESSAGES:
        items = wrapper.get("messages") if wrapper else data
        found_task, final = builder.messages(_list(items, name, "messages"))
    elif fmt is ImportFormat.STEPS:
        if not wrapper:
            raise TraceImportError(f"{name}: the steps format is an object with 'trajectory'")
        found_task, final = builder.messages(_steps(wrapper, name))
        if task is None:
            task = wrapper.get("question")
    else:
        items = next((wrapper[k] for k in ("calls", "entries", "log") if k in wrapper), data)
        found_task, final = builder.openai_log(_list(items, name, "entries"))
    if "final_output" in wrapper or "final_answer" in wrapper:
        final = wrapper.get("final_output", wrapper.get("final_answer"))
    builder.add(
        EventType.FINAL_RESULT,
        "main",
        None,
        None,
        {"exit_code": None, "value": final, "stdout_tail": None},
        data=builder.last_action,
    )
    manifest = {
        "format_version": FORMAT_VERSION,
        "kind": KIND_RECORDING,
        "replayable": False,
        "complete": True,
        "task": task if task is not None else found_task,
        "initial_state": {},
        "config": {"imported_from": name, "import_format": fmt.value},
    }
    try:
        check_manifest(manifest, name)
    except SymtraceError as exc:  # pragma: no cover - the manifest is ours
        raise TraceImportError(str(exc)) from exc
    return Bundle(path=Path("<import>"), manifest=manifest, events=tuple(builder.events))


def _list(items: object, where: str, what: str) -> list[dict[str, Any]]:
    if not isinstance(items, list) or not items:
        raise TraceImportError(f"{where}: expected a non-empty list of {what}")
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise TraceImportError(f"{where}: {what}[{i}] is not a JSON object")
    return items


class _Builder:
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
            self.last_text = content_text(_message(rbody).get("content"))
        message = _message(rbody)
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
            meta = {"step": message["step"]} if _is_int(message.get("step")) else {}
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
            message = _message(rbody)
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


def _message(rbody: JSONValue) -> dict[str, Any]:
    if isinstance(rbody, dict) and isinstance(rbody.get("choices"), list) and rbody["choices"]:
        choice = rbody["choices"][0]
        if isinstance(choice, dict) and isinstance(choice.get("message"), dict):
            return choice["message"]
    return {}


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


def _steps(wrapper: dict[str, Any], where: str) -> list[dict[str, Any]]:
    """A Who&When-style trajectory as chat messages: the first human/user step is the user
    turn, every other step an assistant turn of its agent (`step` kept for evaluation). Any
    label the file carries (`mistake_step`, `mistake_agent`, …) is not read."""
    steps = _list(wrapper.get("trajectory"), where, "trajectory steps")
    out: list[dict[str, Any]] = []
    for i, step in enumerate(steps):
        name = step.get("agent_name", step.get("name", step.get("role")))
        content = step.get("content")
        if not isinstance(name, str) or not isinstance(content, str | list | None):
            raise TraceImportError(f"{where}: trajectory[{i}] needs agent_name and content")
        number = step.get("step", i)
        if not _is_int(number):
            raise TraceImportError(f"{where}: trajectory[{i}].step is not an integer")
        human = name.strip().lower() in HUMAN_NAMES
        out.append(
            {"role": "user" if human else "assistant", "name": name, "content": content,
             "step": number}
        )  # fmt: skip
    return out


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


def _tail(text: str, limit: int = 400) -> str:
    text = text.strip()
    return text if len(text) <= limit else "…" + text[-limit:]


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _looks_raised(text: str) -> bool:
    """A tool message that is a Python exception: `Traceback …` or `SomeError: message`."""
    return bool(_RAISED.match(text.strip()))
