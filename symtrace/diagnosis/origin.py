"""Trace a symptom back along the event graph G to the node where the failure is introduced.

Algorithm 4 gates on the first eligible node in O, and that node is often a consequence: the
failed tool result of a call made with a wrong argument, the decision that reads a failure,
the call that uses a wrong fact another agent handed over. The paper's annotators place the
failure at "the earliest trace-supported node at which an error is both actionable and
connected through the recorded execution to the failure" and "later repetitions or
propagations of the same failure do not replace the earliest actionable node" (App. B,
failure-node localization). `trace_origin` walks from the gated symptom s upwards in G, one
step at a time, and only on trace evidence:

1. **propagation** — s has only propagated evidence (it continues from, or answers after, a
   failure): go to the earliest failed node that evidence points at;
2. **failure caused by its call** — s is a failed tool/exec result (or a call) and the failure
   is the call's doing: the error quotes one of the call's argument values, the call is code
   the previous turn wrote, or the call itself carries local rule evidence. Go to the agent
   decision that made the call. A failure that names none of this (a timeout, a 503) is the
   environment's: s stays, and its boundary stays the decision that handles it;
3. **value provenance** — s is now a decision whose call failed because of a value: go to the
   earliest agent decision above it in G that introduced that value — it appears in that
   decision's text, and neither in the task nor in any tool result observed before it. A
   value the task or a tool supplied is not an agent's mistake, so s stays.

Each step needs its own evidence; nothing is moved on position alone, so when no step applies
the origin is the gated node itself. Scores (equations 21–38) and the gate are unchanged: only
where along G the anchor is placed moves. Pure: the same trace gives the same path.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from symtrace.diagnosis.symptoms import Evidence, Scope
from symtrace.diagnosis.view import NodeView, TraceContext
from symtrace.model.canonical import JSONValue
from symtrace.model.events import EventType

EXEC_TOOLS = frozenset({"execute_code"})  # calls that are code a decision wrote (importers.py)
MIN_VALUE_LENGTH = 3  # shorter argument values ("1", "EU") match too much text to count


@dataclass(frozen=True, slots=True)
class Step:
    """One move up G: from `source` to `target`, and which of the three rules made it."""

    source: str
    target: str
    rule: str  # "propagation" | "caused_by_call" | "value_provenance"
    detail: str

    def to_json(self) -> dict[str, str]:
        return {
            "from": self.source,
            "to": self.target,
            "rule": self.rule,
            "detail": self.detail,
        }


def trace_origin(
    start: NodeView, ctx: TraceContext, evidence: Mapping[str, tuple[Evidence, ...]]
) -> tuple[NodeView, tuple[Step, ...]]:
    """The origin of the failure first seen at *start*, and the steps that led there.

    *evidence* maps node ids to their confirmed evidence (nodes without any may be absent).
    """
    steps: list[Step] = []
    node = start
    seen = {node.id}
    values: tuple[str, ...] = ()
    while True:
        move = _propagation(node, ctx, evidence) or _caused_by_call(node, ctx, evidence)
        if move is not None:
            step, values = move
        else:
            step = _provenance(node, ctx, values)
            values = ()
        if step is None or step.target in seen:
            return node, tuple(steps)
        seen.add(step.target)
        steps.append(step)
        node = ctx.by_id[step.target]


def _propagation(
    node: NodeView, ctx: TraceContext, evidence: Mapping[str, tuple[Evidence, ...]]
) -> tuple[Step, tuple[str, ...]] | None:
    own = evidence.get(node.id, ())
    if not own or any(e.scope is Scope.LOCAL for e in own):
        return None
    refs = [ctx.by_id[r] for e in own for r in e.event_ids[1:] if r in ctx.by_id]
    failed = sorted((v for v in refs if v.error is not None), key=lambda v: v.index)
    if not failed:
        return None
    first = failed[0]
    return Step(node.id, first.id, "propagation", f"continues the failure at {first.id}"), ()


def _caused_by_call(
    node: NodeView, ctx: TraceContext, evidence: Mapping[str, tuple[Evidence, ...]]
) -> tuple[Step, tuple[str, ...]] | None:
    if node.type is EventType.TOOL_RESULT:
        if node.error is None or node.call_id is None or node.call_id not in ctx.by_id:
            return None
        call = ctx.by_id[node.call_id]
    elif node.type is EventType.TOOL_CALL and any(
        e.scope is Scope.LOCAL for e in evidence.get(node.id, ())
    ):
        call = node
    else:
        return None
    decision = _maker(call, ctx)
    if decision is None or call.control:
        return None
    quoted: tuple[str, ...] = ()
    if node is call:
        why = "the call itself carries the symptom"
        quoted = _values(call)
    elif any(c.name in EXEC_TOOLS for c in call.calls):
        why = f"the failing code was written by {decision.id}"
    else:
        message = node.error.render().lower() if node.error else ""
        quoted = tuple(v for v in _values(call) if v.lower() in message)
        if quoted:
            why = f"the error names the argument {quoted[0]!r} of {call.id}"
        elif any(e.scope is Scope.LOCAL for e in evidence.get(call.id, ())):
            why = f"the call {call.id} carries the symptom"
            quoted = _values(call)
        else:
            return None  # the environment's failure: handled downstream, not traced up
    return Step(node.id, decision.id, "caused_by_call", why), quoted


def _provenance(node: NodeView, ctx: TraceContext, values: tuple[str, ...]) -> Step | None:
    if not values or node.type is not EventType.AGENT_ACTION:
        return None
    task = ctx.task.text.lower()
    above = _ancestors(node, ctx)
    for value in values:
        needle = value.lower()
        if needle in task:
            continue
        for earlier in ctx.views[: node.index]:
            if earlier.type is EventType.TOOL_RESULT and needle in earlier.text.lower():
                break  # a tool supplied the value: not an agent's mistake
            if (
                earlier.id in above
                and earlier.type is EventType.AGENT_ACTION
                and not earlier.control
                and needle in earlier.text.lower()
            ):
                detail = f"{value!r} first appears in {earlier.id} (not in the task or a result)"
                return Step(node.id, earlier.id, "value_provenance", detail)
    return None


def _maker(call: NodeView, ctx: TraceContext) -> NodeView | None:
    """The agent decision that made *call*: the nearest agent_action above it in G."""
    above = _ancestors(call, ctx)
    for view in reversed(ctx.views[: call.index]):
        if view.id in above and view.type is EventType.AGENT_ACTION and not view.control:
            return view
    return None


def _ancestors(view: NodeView, ctx: TraceContext) -> set[str]:
    seen: set[str] = set()
    stack = list(ctx.parents.get(view.id, ()))
    while stack:
        node = stack.pop()
        if node not in seen:
            seen.add(node)
            stack.extend(ctx.parents.get(node, ()))
    return seen


def _values(call: NodeView) -> tuple[str, ...]:
    """The string argument values of a call long enough to be traced (code is not traced)."""
    out: list[str] = []
    for invocation in call.calls:
        if invocation.name in EXEC_TOOLS:
            continue
        out.extend(_strings(invocation.arguments))
    return tuple(dict.fromkeys(v for v in out if len(v) >= MIN_VALUE_LENGTH))


def _strings(value: JSONValue) -> list[str]:
    if isinstance(value, str):
        return [value.strip()]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []
