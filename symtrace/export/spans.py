"""The event graph G as a tree of OpenTelemetry spans, planned without OpenTelemetry.

One trace per bundle: a root `invoke_workflow` span, one `invoke_agent {name}` span per agent,
and one span per event under its agent: `chat {model}` for an LLM call, `execute_tool {name}`
for a tool call, its `tool_result {name}` as a child, `final_result` under the root. Calls made
inside a tool body are children of that tool's span. Every data edge of G whose source is not
the span parent becomes a span link, so the dependency graph survives in any trace viewer.

Attribute names follow the OpenTelemetry GenAI semantic conventions (see
docs/export-otel.md for the version). Ids are derived from the bundle digest and the event
ids, so two exports of one bundle are identical. Bundles carry no wall-clock times (replay
must not depend on them): spans get a sequence clock, one millisecond per position in O,
from *start_ns*.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from symtrace._version import __version__
from symtrace.bundle.reader import Bundle
from symtrace.export.genai_messages import input_messages, output_messages
from symtrace.model.events import EdgeKind, Event, EventType

AttrValue = str | bool | int | float | Sequence[str]
STEP_NS = 1_000_000  # one position in O on the sequence clock
# Default clock start: unix time 1e9 (2001-09-09T01:46:40Z), recognisably synthetic and non-zero
# (OTLP treats a zero timestamp as missing).
DEFAULT_START_NS = 1_000_000_000 * 1_000_000_000
PROVIDER = "openai"  # symtrace records LLM calls at the OpenAI-compatible HTTP boundary
SCOPE = "symtrace.export.otel"


@dataclass(frozen=True, slots=True)
class SpanLink:
    span_id: int
    attributes: dict[str, AttrValue]
    trace_id: int | None = None  # another trace (a child bundle's parent run); None: this one


@dataclass(frozen=True, slots=True)
class SpanPlan:
    span_id: int
    parent_id: int | None
    name: str
    kind: str  # "internal" or "client"
    start_ns: int
    end_ns: int
    attributes: dict[str, AttrValue]
    links: tuple[SpanLink, ...] = ()
    error: str | None = None  # status description of a failed call; None means unset/ok
    event_id: str | None = None


@dataclass(frozen=True)
class TracePlan:
    trace_id: int
    resource: dict[str, AttrValue]
    spans: tuple[SpanPlan, ...] = field(default=())
    scope: str = SCOPE
    scope_version: str = __version__


def plan_trace(
    bundle: Bundle,
    *,
    start_ns: int = DEFAULT_START_NS,
    service_name: str = "symtrace",
    content: bool = True,
) -> TracePlan:
    """The spans of *bundle*; with *content* False no prompt, reply or tool value is included."""
    digest = bundle.digest
    trace_id = trace_id_of(digest)
    name = bundle.path.name
    common: dict[str, AttrValue] = {"symtrace.bundle": name, "symtrace.bundle.digest": digest}
    times = _times(bundle.events, start_ns)
    ids = {event.id: _id(f"{trace_id:032x}\0event\0{event.id}", 8) for event in bundle.events}
    root_id = root_span_id(trace_id)
    lineage = bundle.lineage or {}
    live = set(lineage.get("live_events") or ())
    agents = _agents(bundle.events)
    agent_ids = {agent: _id(f"{trace_id:032x}\0agent\0{agent}", 8) for agent in agents}
    results = _results_by_call(bundle.events)
    call_of = {result.id: call for call, result in results.items()}

    spans: list[SpanPlan] = []
    for event in bundle.events:
        parent = _parent_span(event, ids, agent_ids, root_id, call_of)
        links = tuple(
            SpanLink(ids[edge.source], {"symtrace.edge.kind": "data", "symtrace.event_id":
                                        edge.source})
            for edge in event.parents
            if edge.kind is EdgeKind.DATA and ids[edge.source] != parent
        )
        start, end = times[event.id]
        if event.type is EventType.TOOL_CALL and event.id in results:
            end = max(end, times[results[event.id].id][1])
        attrs = {**common, **_symtrace_attrs(event)}
        if lineage:
            attrs["symtrace.live"] = event.id in live
        span_name, kind, own, error = _describe(event, results.get(event.id), content)
        attrs.update(own)
        spans.append(SpanPlan(ids[event.id], parent, span_name, kind, start, end, attrs, links,
                              error, event.id))

    end_of = {s.span_id: s.end_ns for s in spans}
    for agent, span_id in agent_ids.items():
        mine = [s for s in spans if s.attributes.get("gen_ai.agent.name") == agent]
        lanes = sorted({str(s.attributes["symtrace.lane"]) for s in mine})
        spans.append(SpanPlan(
            span_id, root_id, f"invoke_agent {agent}", "internal",
            min(s.start_ns for s in mine), max(end_of[s.span_id] for s in mine),
            {**common, "gen_ai.operation.name": "invoke_agent", "gen_ai.provider.name": PROVIDER,
             "gen_ai.agent.name": agent, "symtrace.lanes": lanes},
        ))
    outcome = bundle.manifest.get("outcome") or {}
    failed = outcome.get("status") not in (None, "ok") or outcome.get("exit_code") not in (None, 0)
    root = SpanPlan(
        root_id, None, f"invoke_workflow {name}", "internal", start_ns,
        max((s.end_ns for s in spans), default=start_ns + STEP_NS),
        {**common, "gen_ai.operation.name": "invoke_workflow", "gen_ai.provider.name": PROVIDER,
         "gen_ai.workflow.name": name, "symtrace.bundle.kind": str(bundle.manifest.get("kind")),
         "symtrace.outcome": str(outcome.get("status"))},
        links=_parent_run(lineage),
        error=f"run ended {outcome.get('status')} (exit {outcome.get('exit_code')})"
        if failed else None,
    )
    ordered = [root, *sorted((s for s in spans if s.event_id is None), key=lambda s: s.start_ns),
               *(s for s in spans if s.event_id is not None)]
    resource: dict[str, AttrValue] = {
        "service.name": service_name,
        **common,
        "symtrace.bundle.kind": str(bundle.manifest.get("kind")),
    }
    return TracePlan(trace_id, resource, tuple(ordered))


def trace_id_of(digest: str) -> int:
    """The trace id of the bundle whose events digest is *digest*."""
    return _id(f"trace\0{digest}", 16)


def root_span_id(trace_id: int) -> int:
    return _id(f"{trace_id:032x}\0root", 8)


def _parent_run(lineage: dict[str, Any]) -> tuple[SpanLink, ...]:
    """A child bundle's root links to its parent run's root span (that bundle's own trace)."""
    parent = lineage.get("parent_digest")
    if not isinstance(parent, str):
        return ()
    parent_trace = trace_id_of(parent)
    attrs: dict[str, AttrValue] = {"symtrace.link": "parent_run", "symtrace.bundle.digest": parent}
    for key in ("anchor", "parent"):
        if isinstance(lineage.get(key), str):
            attrs[f"symtrace.{key}"] = Path(lineage[key]).name if key == "parent" \
                else lineage[key]
    return (SpanLink(root_span_id(parent_trace), attrs, parent_trace),)


def _id(key: str, size: int) -> int:
    value = int.from_bytes(hashlib.sha256(key.encode()).digest()[:size], "big")
    return value or 1  # all-zero ids are invalid in OpenTelemetry


def _times(events: Sequence[Event], start_ns: int) -> dict[str, tuple[int, int]]:
    """Start/end per event: the sequence clock (no wall-clock time is recorded in a bundle)."""
    return {
        e.id: (start_ns + e.position * STEP_NS, start_ns + e.position * STEP_NS + STEP_NS - 1000)
        for e in events
    }


def _agents(events: Sequence[Event]) -> list[str]:
    return list(dict.fromkeys(e.agent for e in events if e.agent))


def _results_by_call(events: Sequence[Event]) -> dict[str, Event]:
    """tool_call id → its tool_result (the result names the call as a parent)."""
    calls = {e.id for e in events if e.type is EventType.TOOL_CALL}
    out: dict[str, Event] = {}
    for event in events:
        if event.type is EventType.TOOL_RESULT:
            for edge in sorted(event.parents, key=lambda e: e.kind is not EdgeKind.DATA):
                if edge.source in calls and edge.source not in out:
                    out[edge.source] = event
                    break
    return out


def _parent_span(
    event: Event, ids: dict[str, int], agents: dict[str, int], root: int, call_of: dict[str, str]
) -> int:
    if event.id in call_of:  # a tool result is part of its call's execution
        return ids[call_of[event.id]]
    within = event.meta.get("within")
    if isinstance(within, str) and within in ids:
        return ids[within]
    return agents.get(event.agent or "", root)


def _symtrace_attrs(event: Event) -> dict[str, AttrValue]:
    out: dict[str, AttrValue] = {
        "symtrace.event_id": event.id,
        "symtrace.event_type": event.type.value,
        "symtrace.lane": event.lane,
        "symtrace.position": event.position,
    }
    if event.agent:
        out["gen_ai.agent.name"] = event.agent
    if event.reason:
        out["symtrace.reason"] = event.reason
    return out


def _describe(
    event: Event, result: Event | None, content: bool
) -> tuple[str, str, dict[str, AttrValue], str | None]:
    if event.type is EventType.AGENT_ACTION:
        return _chat(event, content)
    if event.type is EventType.TOOL_CALL:
        return _tool_call(event, result, content)
    if event.type is EventType.TOOL_RESULT:
        tool = _tool_name(event)
        attrs: dict[str, AttrValue] = {"gen_ai.tool.name": tool}
        if event.meta.get("call_id"):
            attrs["gen_ai.tool.call.id"] = str(event.meta["call_id"])
        error = _tool_error(event)
        if error:
            attrs["error.type"] = error[0]
        if content and isinstance(event.response, dict) and event.response.get("ok"):
            attrs["gen_ai.tool.call.result"] = _json(event.response.get("value"))
        return f"tool_result {tool}", "internal", attrs, error[1] if error else None
    response = event.response if isinstance(event.response, dict) else {}
    code = response.get("exit_code")
    attrs = {"symtrace.exit_code": code} if isinstance(code, int) else {}
    if content and response.get("value") is not None:
        attrs["symtrace.final_result"] = _json(response["value"])
    error = f"program exited {code}" if isinstance(code, int) and code != 0 else None
    if error:
        attrs["error.type"] = "exit_code"
    return "final_result", "internal", attrs, error


def _chat(event: Event, content: bool) -> tuple[str, str, dict[str, AttrValue], str | None]:
    request = event.request if isinstance(event.request, dict) else {}
    body = request.get("body") if isinstance(request.get("body"), dict) else {}
    path = str(request.get("path") or "")
    operation = (
        "embeddings" if path.endswith("embeddings")
        else "text_completion" if path.endswith("/completions") and "chat" not in path
        else "chat"
    )
    attrs: dict[str, AttrValue] = {
        "gen_ai.operation.name": operation,
        "gen_ai.provider.name": PROVIDER,
        "gen_ai.system": PROVIDER,  # pre-1.37 name, still read by many backends
    }
    model = body.get("model")
    if isinstance(model, str):
        attrs["gen_ai.request.model"] = model
    for key, attr in (("temperature", "gen_ai.request.temperature"),
                      ("top_p", "gen_ai.request.top_p"),
                      ("frequency_penalty", "gen_ai.request.frequency_penalty"),
                      ("presence_penalty", "gen_ai.request.presence_penalty"),
                      ("max_tokens", "gen_ai.request.max_tokens"),
                      ("max_completion_tokens", "gen_ai.request.max_tokens"),
                      ("seed", "gen_ai.request.seed")):
        value = body.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            attrs[attr] = value
    stop = body.get("stop")
    if isinstance(stop, str):
        stop = [stop]
    if isinstance(stop, list) and all(isinstance(s, str) for s in stop):
        attrs["gen_ai.request.stop_sequences"] = stop
    if isinstance(body.get("n"), int) and body["n"] != 1:
        attrs["gen_ai.request.choice.count"] = body["n"]
    if event.meta.get("host"):
        attrs["server.address"] = str(event.meta["host"])
        if isinstance(event.meta.get("port"), int):
            attrs["server.port"] = event.meta["port"]
    response = event.response if isinstance(event.response, dict) else {}
    rbody = response.get("body") if isinstance(response.get("body"), dict) else {}
    error: str | None = None
    status = response.get("status")
    if isinstance(response.get("error"), dict):
        attrs["error.type"] = str(response["error"].get("type") or "_OTHER")
        error = str(response["error"].get("message") or attrs["error.type"])
    elif isinstance(status, int) and status >= 400:
        attrs["error.type"] = str(status)
        detail = rbody.get("error") if isinstance(rbody.get("error"), dict) else {}
        error = str(detail.get("message") or f"HTTP {status}")
    if isinstance(rbody.get("id"), str):
        attrs["gen_ai.response.id"] = rbody["id"]
    if isinstance(rbody.get("model"), str):
        attrs["gen_ai.response.model"] = rbody["model"]
    choices = [c for c in rbody.get("choices") or [] if isinstance(c, dict)]
    reasons = [str(c["finish_reason"]) for c in choices if c.get("finish_reason")]
    if reasons:
        attrs["gen_ai.response.finish_reasons"] = reasons
    usage = rbody.get("usage") if isinstance(rbody.get("usage"), dict) else {}
    for key, attr in (("prompt_tokens", "gen_ai.usage.input_tokens"),
                      ("completion_tokens", "gen_ai.usage.output_tokens")):
        if isinstance(usage.get(key), int):
            attrs[attr] = usage[key]
    if content:
        messages = body.get("messages")
        if isinstance(messages, list):
            attrs["gen_ai.input.messages"] = _json(input_messages(messages))
        if choices:
            attrs["gen_ai.output.messages"] = _json(output_messages(choices))
    name = f"{operation} {model}" if isinstance(model, str) else operation
    return name, "client", attrs, error


def _tool_call(
    event: Event, result: Event | None, content: bool
) -> tuple[str, str, dict[str, AttrValue], str | None]:
    tool = _tool_name(event)
    attrs: dict[str, AttrValue] = {"gen_ai.operation.name": "execute_tool",
                                   "gen_ai.tool.name": tool}
    if event.meta.get("call_id"):
        attrs["gen_ai.tool.call.id"] = str(event.meta["call_id"])
    if event.meta.get("tool_type"):
        attrs["gen_ai.tool.type"] = str(event.meta["tool_type"])
    if content and isinstance(event.request, dict):
        attrs["gen_ai.tool.call.arguments"] = _json(event.request.get("arguments"))
    error = _tool_error(result) if result is not None else None
    if error:
        attrs["error.type"] = error[0]
    elif result is None:
        attrs["symtrace.unfinished"] = True  # the run ended before the tool returned
    if content and result is not None and isinstance(result.response, dict) \
            and result.response.get("ok"):
        attrs["gen_ai.tool.call.result"] = _json(result.response.get("value"))
    return f"execute_tool {tool}", "internal", attrs, error[1] if error else None


def _tool_name(event: Event) -> str:
    request = event.request if isinstance(event.request, dict) else {}
    return str(request.get("tool") or event.meta.get("tool") or "unknown")


def _tool_error(event: Event) -> tuple[str, str] | None:
    response = event.response if isinstance(event.response, dict) else {}
    if response.get("ok", True):
        return None
    error = response.get("error") if isinstance(response.get("error"), dict) else {}
    kind = str(error.get("type") or "_OTHER")
    return kind, f"{kind}: {error.get('message') or ''}".rstrip(": ")


def _json(value: Any) -> str:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS, default=str).decode()
