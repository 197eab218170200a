"""Anchor resolution: check a selective replay's anchor before anything runs."""

from __future__ import annotations

from dataclasses import dataclass

from symtrace.bundle.reader import Bundle
from symtrace.errors import AnchorError, NoDependentLLMRequest, UnreplayableEvent
from symtrace.model.graph import first_dependent_llm


@dataclass(frozen=True, slots=True)
class ResolvedAnchor:
    requested: str
    event_id: str
    note: str | None


def resolve_anchor(bundle: Bundle, requested: str) -> ResolvedAnchor:
    """Check an anchor before anything runs; move a non-LLM anchor to its first LLM dependent."""
    if bundle.manifest.get("replayable") is False:
        raise UnreplayableEvent(f"{bundle.path} is an analysis-only trace; it cannot be replayed")
    event = bundle.event(requested)
    if event.meta.get("within"):
        raise AnchorError(
            f"anchor {requested} was made inside the body of tool call {event.meta['within']}, "
            "which replay does not re-enter; anchor on the LLM decision that called the tool"
        )
    if event.is_llm:
        return ResolvedAnchor(requested, event.id, None)
    target = first_dependent_llm(bundle.events, event.id)
    if target is None:
        raise NoDependentLLMRequest(
            f"anchor {requested} is a {event.type.value}, and no LLM request depends on it; "
            "guidance can only be placed in an LLM request"
        )
    return ResolvedAnchor(
        requested,
        target.id,
        f"anchor {requested} is a {event.type.value}, not an LLM request: moved to "
        f"{target.id}, the first LLM request that depends on it",
    )
