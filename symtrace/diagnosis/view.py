"""The diagnostic view of a node (Algorithm 3, line 3): what the rules look at.

A `NodeView` flattens one event into the few things the C1–C4 rules need: its own text, the
tool invocations it makes or completes, the URLs it acts on, its error, and whether it claims
a final answer. `TraceContext` holds T, the views in observed order O and the graph helpers
the rules use to look at τ<v. Building views is pure: same bundle, same views.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import re
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from symtrace.bundle.reader import Bundle
from symtrace.diagnosis.dialects import bare_terminate, is_control
from symtrace.diagnosis.message_text import (
    ACTION_KEYS,
    content_text,
    find_action,
    is_action,
    is_int,
    normalize_value,
    parse_json,
    render,
    urls_in,
)
from symtrace.diagnosis.task import TaskSpec, parse_task
from symtrace.model.canonical import JSONValue, canonical_bytes
from symtrace.model.events import EdgeKind, Event, EventType

# Tool-result statuses that mean failure (paper eq. 39, ℰ_f).
FAILED_STATUSES = frozenset({"failed", "failure", "error", "timeout", "timed_out"})
# The reason given to an LLM exchange the provider refused (429/5xx) and the SDK retried with
# success in the same lane: infrastructure, never an agent decision or a symptom.
PROVIDER_RETRY = "provider_retry"
_FINAL = re.compile(r"(?i)\bfinal[ _]answer\b\s*[:：]?")
_TERMINATE = re.compile(r"(?m)^\s*TERMINATE\s*$")
# How frameworks hand a raising tool's failure to the model as the tool's result: AG2 and
# AgentChat `Error: <exception>`, CrewAI's tool_usage_exception sentence.
_FRAMEWORK_TOOL_ERROR = re.compile(
    r"^\s*(?:Error:|I encountered an error while trying to use the tool\. This was the "
    r"error:)\s*(?P<detail>.*)", re.S)
_REACT = re.compile(r"(?m)^Action:\s*(?P<name>[\w.\-]+)\s*\nAction Input:\s*(?P<input>.+)$")


@dataclass(frozen=True, slots=True)
class ToolInvocation:
    """A tool name and its arguments, as made by a tool_call or asked for by an agent."""

    name: str
    arguments: JSONValue

    @property
    def fingerprint(self) -> str:
        """Normalized action fingerprint: name and arguments, case/whitespace/URL-slash folded."""
        args = canonical_bytes(normalize_value(self.arguments)).decode()
        return f"{self.name.strip().lower()}:{args}"


@dataclass(frozen=True, slots=True)
class ErrorInfo:
    type: str
    message: str

    def render(self) -> str:
        return f"{self.type}: {self.message}" if self.message else self.type


@dataclass(frozen=True)
class NodeView:
    """One completed node as the rules see it."""

    id: str
    index: int  # position in O, 0-based
    type: EventType
    lane: str
    agent: str | None
    reason: str | None
    parents: tuple[str, ...]
    data_parents: tuple[str, ...]
    text: str  # the node's own content as text
    calls: tuple[ToolInvocation, ...] = ()  # invocations made (tool_call/result) or requested
    action: dict[str, Any] | None = None  # an action object in the output ({"action": ...})
    urls: tuple[str, ...] = ()  # URLs the node acts on (arguments, action objects, results)
    error: ErrorInfo | None = None
    http_status: int | None = None
    final_style: bool = False  # claims a final answer (final_result, "Final answer: …")
    output: JSONValue = None  # the claimed final output, parsed when it is JSON
    result: JSONValue = None  # a tool_result's value
    call_id: str | None = None  # a tool_result's tool_call
    offered_tools: tuple[str, ...] = ()  # tool names an agent_action's request offered
    fingerprints: tuple[str, ...] = field(default=())
    step: int | None = None  # the log's own step number (imported logs), for evaluation

    @property
    def control(self) -> bool:
        """Framework bookkeeping (speaker selection, a ledger, a bare TERMINATE): never an
        agent decision (dialects.py)."""
        return is_control(self.reason)

    @property
    def offers_tools(self) -> bool:
        return bool(self.offered_tools)

    @property
    def failed(self) -> bool:
        return self.error is not None

    @property
    def is_llm(self) -> bool:
        return self.type is EventType.AGENT_ACTION


@dataclass(frozen=True)
class TraceContext:
    """T, the views in O, and helpers for looking at τ<v."""

    task: TaskSpec
    views: tuple[NodeView, ...]
    replayable: bool = True

    @cached_property
    def by_id(self) -> dict[str, NodeView]:
        return {view.id: view for view in self.views}

    @cached_property
    def parents(self) -> dict[str, tuple[str, ...]]:
        """Edges of G upwards: node id → its parents' ids."""
        return {view.id: view.parents for view in self.views}

    @cached_property
    def children(self) -> dict[str, tuple[str, ...]]:
        """Edges of G downwards: node id → the ids of the nodes that name it as a parent."""
        below: dict[str, list[str]] = {}
        for view in self.views:
            for parent in view.parents:
                below.setdefault(parent, []).append(view.id)
        return {node: tuple(ids) for node, ids in below.items()}

    def before(self, view: NodeView) -> tuple[NodeView, ...]:
        """τ<v: the nodes observed before *view*."""
        return self.views[: view.index]

    @cached_property
    def tool_dependent(self) -> bool:
        """The task needs tools: T names tools/URLs or asks to look things up, or tools exist."""
        return self.task.mentions_tools or any(
            v.offers_tools or v.type is EventType.TOOL_CALL for v in self.views
        )

    def unresolved_errors(self, view: NodeView) -> list[NodeView]:
        """Failed nodes in τ<v not followed (before v) by a success of the same tool or lane."""
        prefix = self.before(view)
        unresolved = []
        for i, failed in enumerate(prefix):
            if failed.error is None or failed.reason == PROVIDER_RETRY or failed.type not in (
                EventType.TOOL_RESULT,
                EventType.AGENT_ACTION,
            ):
                continue
            if not any(_resolves(later, failed) for later in prefix[i + 1 :]):
                unresolved.append(failed)
        return unresolved


def _resolves(later: NodeView, failed: NodeView) -> bool:
    if later.error is not None or later.type is not failed.type:
        return False
    if failed.type is EventType.AGENT_ACTION:
        return later.lane == failed.lane
    return _tool_name(later) == _tool_name(failed)


def _tool_name(view: NodeView) -> str | None:
    return view.calls[0].name if view.calls else None


def build_context(bundle: Bundle) -> TraceContext:
    """Views of every completed node of *bundle*, in observed order."""
    views: list[NodeView] = []
    for index, event in enumerate(bundle.events):
        views.append(node_view(event, index, bundle))
    replayable = bool(bundle.manifest.get("replayable", True))
    return TraceContext(parse_task(bundle.task), tuple(_retried_provider_errors(views)),
                        replayable)


def _retried_provider_errors(views: list[NodeView]) -> list[NodeView]:
    """An LLM exchange the provider failed (HTTP >= 400: a 429, a 5xx) that a later exchange
    of the same lane answered is an SDK retry, not an agent turn: it becomes control."""
    out = list(views)
    for i, view in enumerate(views):
        if (view.type is EventType.AGENT_ACTION and view.http_status is not None
                and view.http_status >= 400 and view.reason is None
                and any(_resolves(later, view) for later in views[i + 1:])):
            out[i] = dataclasses.replace(view, reason=PROVIDER_RETRY)
    return out


def node_view(event: Event, index: int, bundle: Bundle) -> NodeView:
    base: dict[str, Any] = {
        "id": event.id,
        "index": index,
        "type": event.type,
        "lane": event.lane,
        "agent": event.agent,
        "reason": event.reason,
        "parents": event.parent_ids,
        "data_parents": tuple(e.source for e in event.parents if e.kind is EdgeKind.DATA),
        "step": event.meta.get("step") if isinstance(event.meta.get("step"), int) else None,
    }
    if event.type is EventType.AGENT_ACTION:
        fields = _agent_action(event)
    elif event.type is EventType.TOOL_CALL:
        fields = _tool_call(event)
    elif event.type is EventType.TOOL_RESULT:
        fields = _tool_result(event, bundle)
        if event.meta.get("call") == "not_in_view" and not fields.get("calls"):
            fields["text"] = f"[{event.meta.get('tool') or 'tool'}] {fields['text']}"
    else:
        fields = _final_result(event)
    calls: tuple[ToolInvocation, ...] = fields.get("calls", ())
    action = fields.get("action")
    if action is not None:
        calls = (*calls, _action_invocation(action))
        fields["calls"] = calls
    urls = list(fields.pop("extra_urls", ()))
    for call in calls:
        urls.extend(urls_in(call.arguments))
    fields["urls"] = tuple(dict.fromkeys(urls))
    fields["fingerprints"] = tuple(dict.fromkeys(call.fingerprint for call in calls))
    handshake = event.type is EventType.AGENT_ACTION and base["reason"] is None and not calls
    if handshake and bare_terminate(fields.get("text", "")):
        # A recorded bare TERMINATE is the same handshake the importers mark as control.
        base["reason"] = "termination"
        fields["final_style"], fields["output"] = False, None
    return NodeView(**base, **fields)


def _agent_action(event: Event) -> dict[str, Any]:
    request = event.request if isinstance(event.request, dict) else {}
    body = request.get("body") if isinstance(request.get("body"), dict) else {}
    response = event.response if isinstance(event.response, dict) else {}
    status = response.get("status")
    rbody = response.get("body")
    out: dict[str, Any] = {"offered_tools": _offered(body)}
    if isinstance(status, int) and status >= 400:
        err = rbody.get("error") if isinstance(rbody, dict) else None
        err = err if isinstance(err, dict) else {}
        message = str(err.get("message") or (rbody if isinstance(rbody, str) else ""))
        out["error"] = ErrorInfo(str(err.get("type") or f"HTTP {status}"), message)
        out["http_status"] = status
        out["text"] = out["error"].render()
        return out
    message = _first_message(rbody)
    text = content_text(message.get("content"))
    calls = []
    for call in message.get("tool_calls") or []:
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict) and function.get("name"):
            calls.append(
                ToolInvocation(str(function["name"]), parse_json(function.get("arguments")))
            )
    react = _REACT.search(text) if not calls else None
    if react:  # text-protocol agents (CrewAI's ReAct): "Action: x" / "Action Input: {…}"
        calls.append(ToolInvocation(react.group("name"), parse_json(react.group("input"))))
    out["text"] = text
    out["calls"] = tuple(calls)
    out["action"] = None if react else find_action(text)
    final = _last_final(text) or _TERMINATE.search(text)
    if final and not is_control(event.reason):  # a bare TERMINATE turn claims nothing
        out["final_style"] = True
        out["output"] = _final_payload(text, final)
    return out


def _last_final(text: str) -> re.Match[str] | None:
    """The marker the answer follows: the last `FINAL ANSWER:` with a colon (CrewAI's ReAct
    turn says "I now know the final answer" before its `Final Answer:` line), else the last
    bare mention."""
    marks = list(_FINAL.finditer(text))
    with_colon = [m for m in marks if m.group(0).rstrip().endswith((":", "："))]
    return (with_colon or marks or [None])[-1]


def _offered(body: dict[str, Any]) -> tuple[str, ...]:
    names = []
    for tool in (body.get("tools") or []) + (body.get("functions") or []):
        if isinstance(tool, dict):
            function = tool.get("function") if isinstance(tool.get("function"), dict) else tool
            if isinstance(function.get("name"), str):
                names.append(function["name"])
    return tuple(names)


def _tool_call(event: Event) -> dict[str, Any]:
    request = event.request if isinstance(event.request, dict) else {}
    call = ToolInvocation(str(request.get("tool") or "?"), request.get("arguments"))
    return {"text": f"{call.name}({render(call.arguments)})", "calls": (call,)}


def _tool_result(event: Event, bundle: Bundle) -> dict[str, Any]:
    response = event.response if isinstance(event.response, dict) else {}
    call_event = _call_of(event, bundle)
    out: dict[str, Any] = {"call_id": call_event.id if call_event else None}
    if call_event is not None:
        out["calls"] = _tool_call(call_event)["calls"]
    if not response.get("ok", True):
        err = response.get("error") if isinstance(response.get("error"), dict) else {}
        out["error"] = ErrorInfo(str(err.get("type") or "Error"), str(err.get("message") or ""))
        out["text"] = out["error"].render()
        return out
    value = response.get("value")
    out["result"] = value
    out["text"] = render(value)
    value = structured_text(value)  # AG2 hands tool returns to the model as str(dict)
    wrapped = _FRAMEWORK_TOOL_ERROR.match(value) if isinstance(value, str) else None
    if wrapped:  # the framework's own report of a tool that raised (AG2, AgentChat, CrewAI)
        out["error"] = ErrorInfo("error", wrapped.group("detail").strip())
    if isinstance(value, dict):
        code = next(
            (value[k] for k in ("http_status", "status_code", "status") if is_int(value.get(k))),
            None,
        )
        out["http_status"] = code
        status = value.get("status")
        if isinstance(status, str) and status.strip().lower() in FAILED_STATUSES:
            detail = value.get("error") or value.get("message") or ""
            out["error"] = ErrorInfo(status, render(detail))
        elif value.get("error"):
            out["error"] = ErrorInfo("error", render(value["error"]))
        elif isinstance(code, int) and code >= 400:
            out["error"] = ErrorInfo(f"HTTP {code}", render(value.get("reason") or ""))
        if isinstance(value.get("url"), str):
            out["extra_urls"] = (value["url"],)
    return out


def _final_result(event: Event) -> dict[str, Any]:
    response = event.response if isinstance(event.response, dict) else {}
    value = response.get("value")
    tail = response.get("stdout_tail")
    exit_code = response.get("exit_code")
    out: dict[str, Any] = {"text": render(value) if value is not None else str(tail or "")}
    if isinstance(exit_code, int) and exit_code != 0:
        last = [line for line in str(tail or "").splitlines() if line.strip()]
        out["error"] = ErrorInfo("exit_code", f"{exit_code}" + (f" ({last[-1]})" if last else ""))
    if value is not None:
        parsed = parse_json(value) if isinstance(value, str) else value
        marker = _FINAL.search(value) if isinstance(value, str) else None
        if marker is not None:  # "Final answer: …" as the declared output: keep the payload
            parsed = _final_payload(value, marker)
        out["final_style"] = True
        out["output"] = parsed
        out["action"] = parsed if is_action(parsed) else find_action(out["text"])
    return out


def _call_of(event: Event, bundle: Bundle) -> Event | None:
    for edge in sorted(event.parents, key=lambda e: e.kind is not EdgeKind.DATA):
        parent = bundle.by_id.get(edge.source)
        if parent is not None and parent.type is EventType.TOOL_CALL:
            return parent
    return None


def _first_message(body: object) -> dict[str, Any]:
    if isinstance(body, dict):
        choices = body.get("choices")
        if isinstance(choices, list) and choices and isinstance(choices[0], dict):
            message = choices[0].get("message") or choices[0].get("delta")
            if isinstance(message, dict):
                return message
    return {}


def _final_payload(text: str, match: re.Match[str]) -> JSONValue:
    """The answer after a FINAL ANSWER marker: a JSON value that starts there is read whole
    (whatever follows it: `\nTERMINATE`, a blank line, prose, a code fence's end), else the
    text up to a blank line or a TERMINATE line; a bare TERMINATE turn's text without it."""
    if match.re is _TERMINATE:
        payload = _TERMINATE.sub("", text).strip()
    else:
        rest = _unfence(text[match.end() :].strip())
        if rest[:1] in ("[", "{"):
            try:
                return json.JSONDecoder().raw_decode(rest)[0]  # type: ignore[no-any-return]
            except ValueError:
                pass
        payload = re.split(r"\n\s*\n|\n\s*TERMINATE\b", rest, maxsplit=1)[0].strip() if rest else ""
        payload = re.sub(r"\s*\bTERMINATE\s*$", "", payload)
    return parse_json(payload) if payload[:1] in ("[", "{") else payload


def _unfence(text: str) -> str:
    """A payload in a Markdown code fence (```json … ```): its content."""
    fenced = re.match(r"```[\w-]*\s*\n?(?P<body>.*?)```", text, re.S)
    return fenced.group("body").strip() if fenced else text


def structured_text(value: JSONValue) -> JSONValue:
    """A tool result that arrives as text holding a dict: JSON, or a Python literal (AG2's
    `str(dict)`: `{'status': 'error', ...}`); anything else as it is."""
    if not isinstance(value, str):
        return value
    text = value.strip()
    if not (text.startswith("{") and text.endswith("}")):
        return value
    parsed = parse_json(text)
    if isinstance(parsed, dict):
        return parsed
    try:
        literal = ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return value
    return literal if isinstance(literal, dict) else value


def _action_invocation(action: dict[str, Any]) -> ToolInvocation:
    key = next(k for k in ACTION_KEYS if isinstance(action.get(k), str))
    args = action.get("arguments") or action.get("args") or action.get("parameters")
    if not isinstance(args, dict):
        skip = {key, "reason", "thought", "rationale", "arguments", "args", "parameters"}
        args = {k: v for k, v in action.items() if k not in skip}
    return ToolInvocation(str(action[key]), args)


