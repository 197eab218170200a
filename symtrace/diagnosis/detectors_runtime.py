"""Table 10 conditions for C3 (unresolved runtime condition) and C4 (plan–action–outcome
inconsistency). Same contract as detectors.py: `(view, ctx) -> list[Evidence]`, pure."""

from __future__ import annotations

import re

from symtrace.diagnosis.detectors import (
    ACTING,
    BROWSER_TOOL,
    HTML,
    INACCESSIBLE,
    PLAN,
    STILL_NEEDED,
    STRUCTURED_REQUEST,
    evidence_at,
)
from symtrace.diagnosis.message_text import render
from symtrace.diagnosis.symptoms import Evidence, Scope, excerpt
from symtrace.diagnosis.view import PROVIDER_RETRY, NodeView, TraceContext
from symtrace.model.events import EventType

_SCHEME = re.compile(r"^[a-z][a-z0-9+.\-]*://[^/\s]", re.IGNORECASE)

# ----------------------------------------------------------------------------------------- C3


def error_recorded(view: NodeView, ctx: TraceContext) -> list[Evidence]:
    """C3: the node records an error, a timeout, a failed tool result or a failed LLM call
    (not a provider refusal the SDK retried with success: that is infrastructure)."""
    if view.error is None or view.reason == PROVIDER_RETRY:
        return []
    what = {
        EventType.TOOL_RESULT: f"tool {view.calls[0].name if view.calls else '?'} failed",
        EventType.AGENT_ACTION: "the LLM call failed",
        EventType.FINAL_RESULT: "the run exited with an error",
    }.get(view.type, "the node failed")
    return [evidence_at(view, view.error.render(), f"{what} ({view.error.type})")]


def inaccessible_evidence(view: NodeView, ctx: TraceContext) -> list[Evidence]:
    """C3: the node reports that required evidence is inaccessible."""
    if view.error is not None or view.type not in (EventType.AGENT_ACTION, EventType.TOOL_RESULT):
        return []
    return _quoted_match(view, INACCESSIBLE, "reports inaccessible evidence")


def continues_from_failure(view: NodeView, ctx: TraceContext) -> list[Evidence]:
    """C3 (propagated): the node consumes the output of a failed node (a DATA parent)."""
    if view.error is not None:
        return []
    for parent_id in view.data_parents:
        parent = ctx.by_id.get(parent_id)
        if parent is not None and parent.error is not None:
            return [
                evidence_at(
                    view,
                    parent.error.render(),
                    f"continues from the failure at {parent.id}",
                    parent.id,
                    scope=Scope.PROPAGATED,
                )
            ]
    return []


def final_despite_error(view: NodeView, ctx: TraceContext) -> list[Evidence]:
    """C3 (propagated): a final answer while an error in τ<v is still unresolved."""
    if not view.final_style:
        return []
    unresolved = ctx.unresolved_errors(view)
    if not unresolved:
        return []
    last = unresolved[-1]
    ids = tuple(v.id for v in unresolved)
    error = last.error.render() if last.error else ""
    return [
        evidence_at(
            view,
            error,
            f"gives a final answer while the failure at {last.id} is unresolved",
            *ids,
            scope=Scope.PROPAGATED,
        )
    ]


# ----------------------------------------------------------------------------------------- C4


def browser_url(view: NodeView, ctx: TraceContext) -> list[Evidence]:
    """C4: a browser action without a (valid) URL, or with a view-source: URL."""
    if view.type not in ACTING:
        return []
    for call in view.calls:
        if not BROWSER_TOOL.search(call.name):
            continue
        text = f"{call.name}({render(call.arguments)})"
        urls = [u for u in view.urls if u in render(call.arguments)]
        if not urls:
            return [evidence_at(view, text, f"browser action {call.name} has no URL")]
        for url in urls:
            if url.lower().startswith("view-source:"):
                return [
                    evidence_at(view, url, f"browser action {call.name} uses a view-source: URL")
                ]
            if not _SCHEME.match(url):
                return [
                    evidence_at(
                        view,
                        url,
                        f"browser action {call.name} has no valid URL (no scheme or host)",
                    )
                ]
    return []


def structured_vs_html(view: NodeView, ctx: TraceContext) -> list[Evidence]:
    """C4: the call asked for structured data (JSON/API) but the result is an HTML page."""
    if view.type is not EventType.TOOL_RESULT or view.error is not None or not view.calls:
        return []
    request = render(view.calls[0].arguments) + " " + view.calls[0].name
    if not STRUCTURED_REQUEST.search(request):
        return []
    body = view.result
    if isinstance(body, dict):
        body = next((body[k] for k in ("content", "body", "text", "html") if k in body), "")
    match = HTML.search(str(body)[:2000])
    if match is None:
        return []
    return [
        evidence_at(
            view,
            excerpt(str(body), match.start(), match.end(), 40),
            f"structured data was requested ({view.calls[0].name}) but HTML came back",
            *((view.call_id,) if view.call_id else ()),
        )
    ]


def completion_after_failure(view: NodeView, ctx: TraceContext) -> list[Evidence]:
    """C4 (propagated): completion is claimed right after an unsuccessful action."""
    if not view.final_style:
        return []
    last = next((v for v in reversed(ctx.before(view)) if v.type is EventType.TOOL_RESULT), None)
    if last is None or last.error is None:
        return []
    return [
        evidence_at(
            view,
            last.error.render(),
            f"claims completion right after the failed action at {last.id}",
            last.id,
            scope=Scope.PROPAGATED,
        )
    ]


def answer_without_tool_evidence(view: NodeView, ctx: TraceContext) -> list[Evidence]:
    """C4: a tool-dependent task answered without any successful tool result before it."""
    if not view.final_style or view.action is not None or not ctx.tool_dependent:
        return []
    if any(v.type is EventType.TOOL_RESULT and not v.failed for v in ctx.before(view)):
        return []
    return [
        evidence_at(
            view,
            render(view.output) if view.output is not None else view.text,
            "answers a tool-dependent task with no successful tool result in the trace",
        )
    ]


def claim_contradicts_plan(view: NodeView, ctx: TraceContext) -> list[Evidence]:
    """C4: the node claims a final answer while saying it still has to act to get the data."""
    if not view.final_style:
        return []
    return _quoted_match(
        view, STILL_NEEDED, "claims a final answer but says further action is still needed"
    )


def plan_action_mismatch(view: NodeView, ctx: TraceContext) -> list[Evidence]:
    """C4: the agent's text says it will use one offered tool but it calls a different one."""
    if not view.is_llm or not view.calls or not view.offered_tools:
        return []
    called = {call.name for call in view.calls}
    for tool in view.offered_tools:
        if len(tool) < 3 or tool in called:
            continue
        match = re.search(PLAN + r"[^.\n]{0,60}?\b" + re.escape(tool) + r"\b", view.text)
        if match:
            return [
                evidence_at(
                    view,
                    excerpt(view.text, match.start(), match.end()),
                    f"plans to use {tool} but calls {', '.join(sorted(called))}",
                )
            ]
    return []


def _quoted_match(view: NodeView, pattern: re.Pattern[str], what: str) -> list[Evidence]:
    """Evidence quoting the first match of *pattern* in the node's text, if any."""
    match = pattern.search(view.text)
    if match is None:
        return []
    return [
        evidence_at(
            view, excerpt(view.text, match.start(), match.end()), f"{what} ({match.group(0)!r})"
        )
    ]
