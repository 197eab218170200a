"""Where to intervene: Algorithm 4's gate, the LLM boundary for a node, and the two controls.

Selective replay resumes live at an LLM call, so every suspicious node v is mapped to the LLM
boundary where Δ is injected:

- `self`: v is an agent decision (an agent_action) — resume at v;
- `downstream`: the first agent decision after v in O that depends on v in G (the call that
  reads a failed tool result, say);
- `lane`: otherwise the first agent decision after v in v's lane;
- `producer`: otherwise (a terminal node such as final_result) the nearest agent decision
  before v that v depends on, else the last one before v — the decision that emitted it.

Agent decisions are agent_action events that are not framework control (dialects.py: speaker
selection, progress ledgers, a bare TERMINATE are not places to inject repair guidance; a
Magentic-One plan or a CrewAI manager's delegation is); if a trace has none, every
agent_action counts. The suspicious policy gates on the first node in O that is eligible
(eq. 34 and a boundary exists), then traces that symptom back along G to the node where the
failure was introduced (origin.py) and anchors at that node's boundary; the random (seeded)
and last controls pick among agent decisions.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from symtrace.diagnosis.origin import Step
from symtrace.diagnosis.symptoms import Category, Evidence
from symtrace.diagnosis.view import NodeView, TraceContext
from symtrace.model.events import EventType


class AnchorPolicy(StrEnum):
    SUSPICIOUS = "suspicious"
    RANDOM = "random"
    LAST = "last"


@dataclass(frozen=True, slots=True)
class Boundary:
    """The LLM call at which to resume for a node, and how it relates to the node."""

    event_id: str
    relation: str  # "self" | "downstream" | "lane" | "producer"

    def to_json(self) -> dict[str, str]:
        return {"event_id": self.event_id, "relation": self.relation}


@dataclass(frozen=True)
class AnchorChoice:
    """The chosen intervention: inject Δ at `anchor` because of `target`.

    For the controls, `target == anchor` and there are no categories or evidence: they get
    the generic template.
    """

    policy: AnchorPolicy
    anchor: str
    target: str
    relation: str
    categories: tuple[Category, ...] = ()
    evidence: tuple[Evidence, ...] = ()
    c_f: float | None = None
    replayable: bool = True
    seed: int | None = None
    symptom: str | None = None  # the gated (first eligible) node the trace-back started from
    trace: tuple[Step, ...] = ()  # the moves from the symptom up G to `target`

    def to_json(self) -> dict[str, Any]:
        return {
            "symptom": self.symptom,
            "trace": [step.to_json() for step in self.trace],
            "policy": self.policy.value,
            "anchor": self.anchor,
            "target": self.target,
            "relation": self.relation,
            "categories": [c.value for c in self.categories],
            "evidence": [e.to_json() for e in self.evidence],
            "c_f": None if self.c_f is None else round(self.c_f, 6),
            "replayable": self.replayable,
            "seed": self.seed,
        }


def decisions(ctx: TraceContext) -> tuple[NodeView, ...]:
    """The agent decisions of the trace in O (see the module docstring)."""
    llm = tuple(v for v in ctx.views if v.type is EventType.AGENT_ACTION)
    own = tuple(v for v in llm if not v.control)
    return own or llm


def _closure(start: str, edges: Mapping[str, tuple[str, ...]]) -> set[str]:
    seen: set[str] = set()
    stack = list(edges.get(start, ()))
    while stack:
        node = stack.pop()
        if node not in seen:
            seen.add(node)
            stack.extend(edges.get(node, ()))
    return seen


def resolve_boundary(view: NodeView, ctx: TraceContext) -> Boundary | None:
    """The LLM boundary at which to intervene for *view*, or None if the trace has none."""
    candidates = decisions(ctx)
    if view.id in {v.id for v in candidates}:
        return Boundary(view.id, "self")
    later = [v for v in candidates if v.index > view.index]
    if later:
        below = _closure(view.id, ctx.children)
        for v in later:
            if v.id in below:
                return Boundary(v.id, "downstream")
        for v in later:
            if v.lane == view.lane:
                return Boundary(v.id, "lane")
    earlier = [v for v in candidates if v.index < view.index]
    if earlier:
        above = _closure(view.id, ctx.parents)
        chosen = next((v for v in reversed(earlier) if v.id in above), earlier[-1])
        return Boundary(chosen.id, "producer")
    return None
