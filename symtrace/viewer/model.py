"""The page model: everything the HTML report shows, as plain JSON-able data.

Pure and deterministic (same bundle, same model): the page embeds it as a JSON data island
and its script renders lists from it with `textContent` only, so nothing from a bundle is ever
parsed as HTML. Payloads are pretty JSON; a payload longer than `EMBED_LIMIT` characters is
cut in the page (its full length is kept so the page can say how much is missing).
"""

from __future__ import annotations

from typing import Any

import orjson

from symtrace.bundle.inspect import aligned, diff_bundles, outcome_text
from symtrace.bundle.reader import Bundle
from symtrace.model.events import Event, EventType, event_summary, summarize

EMBED_LIMIT = 200_000  # characters of one payload kept in the page
PREVIEW_LIMIT = 4_000  # characters shown before "show all"


def pretty(value: Any) -> str:
    return orjson.dumps(
        value, option=orjson.OPT_SORT_KEYS | orjson.OPT_INDENT_2, default=str
    ).decode()


def payload(value: Any) -> dict[str, Any] | None:
    if value is None:
        return None
    text = pretty(value)
    return {"text": text[:EMBED_LIMIT], "length": len(text)}


def lanes_of(bundle: Bundle) -> list[str]:
    return list(dict.fromkeys(e.lane for e in bundle.events))


def event_model(event: Event, live: frozenset[str] = frozenset()) -> dict[str, Any]:
    return {
        "id": event.id,
        "pos": event.position,
        "type": event.type.value,
        "lane": event.lane,
        "agent": event.agent,
        "reason": event.reason,
        "parents": [[edge.source, edge.kind.value] for edge in event.parents],
        "summary": event_summary(event, 120),
        "request": payload(event.request),
        "response": payload(event.response),
        "failed": is_failed(event),
        "live": event.id in live,  # a child bundle's events after the anchor
        "meta": event.meta,
    }


def is_failed(event: Event) -> bool:
    response = event.response if isinstance(event.response, dict) else {}
    if event.type is EventType.AGENT_ACTION:
        status = response.get("status")
        return "error" in response or (isinstance(status, int) and status >= 400)
    if event.type is EventType.TOOL_RESULT:
        return response.get("ok") is False
    if event.type is EventType.FINAL_RESULT:
        return response.get("exit_code") not in (None, 0)
    return False


def diagnosis_model(bundle: Bundle) -> dict[str, Any]:
    """Symptoms per node, and the summary `symtrace diagnose` prints (the same sentences, from
    symtrace.diagnosis.summary); a failing diagnosis becomes an error in the page."""
    try:
        from symtrace.diagnosis import diagnose
        from symtrace.diagnosis.summary import summarize_diagnosis

        result = diagnose(bundle)
        nodes = {}
        for node in result.nodes:
            if node.evidence:
                nodes[node.view.id] = {
                    "confirmed": [c.value for c in node.confirmed],
                    "proposed": [c.value for c in node.proposed],
                    "score": round(node.c_f, 4),
                    "eligible": node.eligible,
                    "evidence": [
                        {"rule": e.rule, "category": e.category.value if e.category else None,
                         "note": e.note, "quote": e.quote}
                        for e in node.evidence
                    ],
                }
        anchor = result.anchor
        return {
            "status": "ok",
            "nodes": nodes,
            "summary": summarize_diagnosis(result).to_json(),
            "anchor": anchor.anchor if anchor else None,
            "target": anchor.target if anchor else None,
            "symptom": anchor.symptom if anchor else None,
            "relation": anchor.relation if anchor else None,
            "ranking": [n.view.id for n in result.ranking()][:10],
        }
    except Exception as exc:  # noqa: BLE001 - the report must still render; the page shows why
        return {"status": "error", "error": f"{type(exc).__name__}: {exc}", "nodes": {}}


def diff_model(left: Bundle, right: Bundle) -> dict[str, Any]:
    """Both trajectories aligned by event identity (bundle/inspect.py), the first difference
    marked, the equal events that only ran in another order listed."""
    first = diff_bundles(left, right)
    rows = []
    for index, (a, b) in enumerate(aligned(left, right)):
        same = a is not None and b is not None and a.content_hash == b.content_hash
        is_first = not first.identical and a is first.left and b is first.right
        rows.append({"pos": index, "same": same, "first": is_first,
                     "left": _side(a), "right": _side(b)})
    return {
        "left": str(left.path.name),
        "right": str(right.path.name),
        "identical": first.identical,
        "first": next((r["pos"] for r in rows if r["first"]), None),
        "identity": first.identity,
        "field": first.field,
        "differences": [
            {"path": d.path or "(the whole value)", "left": summarize(d.expected, 200),
             "right": summarize(d.actual, 200)}
            for d in first.differences
        ][:20],
        "moved": [{"left": x.id, "left_position": x.position, "right": y.id,
                   "right_position": y.position} for x, y in first.moved][:20],
        "rows": rows,
    }


def _side(event: Event | None) -> dict[str, Any] | None:
    if event is None:
        return None
    return {"id": event.id, "type": event.type.value, "lane": event.lane,
            "summary": event_summary(event, 90)}


def page_model(
    bundle: Bundle, *, other: Bundle | None = None, diagnosis: bool = True
) -> dict[str, Any]:
    manifest = bundle.manifest
    live = frozenset((bundle.lineage or {}).get("live_events") or ())
    counts: dict[str, int] = {}
    for event in bundle.events:
        counts[event.type.value] = counts.get(event.type.value, 0) + 1
    return {
        "bundle": {
            "name": bundle.path.name,
            "kind": manifest.get("kind"),
            "complete": bundle.complete,
            "outcome": manifest.get("outcome"),
            "digest": bundle.digest,  # the events digest
            "root_digest": bundle.root_digest,
            "outcome_text": outcome_text(bundle),
            "task": summarize(bundle.task, 400) if bundle.task is not None else None,
            "lineage": bundle.lineage,
            "warnings": list(bundle.warnings),
            "counts": counts,
        },
        "lanes": lanes_of(bundle),
        "types": [t.value for t in EventType],
        "events": [event_model(e, live) for e in bundle.events],
        "diagnosis": diagnosis_model(bundle) if diagnosis else {"status": "off", "nodes": {}},
        "diff": diff_model(bundle, other) if other is not None else None,
        "preview": PREVIEW_LIMIT,
    }
