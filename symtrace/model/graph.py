"""The event-dependency graph G: how edges are derived and how it is queried.

Edges are derived from content, never guessed from timing:

* **data** edge u → v when v's request contains a value u produced: an assistant message text
  or tool call an LLM response returned, a tool result, or a tool-call id. Values are matched
  by fingerprint (whitespace-normalised text digest) to the *latest* producer that completed
  before v started, so an edge always points backwards in O.
* **control** edge u → v when u is the previous event on v's lane (lane order).

Because the derivation is a pure function of the records, a replayed run rebuilds the same
parents for the same events, and a child bundle's live events get parents the same way.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterable, Sequence
from typing import Any

import orjson

from symtrace.model.canonical import canonical_bytes
from symtrace.model.events import Edge, EdgeKind, Event, EventType
from symtrace.model.llm_wire import chat_messages, reply_messages

MIN_TEXT = 4  # shorter texts ("ok", "") are too common to mean a dependency


# A conversation re-sends every earlier message on every call: the same texts are normalised
# and fingerprinted again and again. Both are pure, so they are memoised by content, bounded
# (entry count, and only texts up to MEMO_MAX_TEXT characters are kept).
MEMO_ENTRIES = 4096
MEMO_MAX_TEXT = 32_768
_normalised: dict[str, str] = {}
_text_fingerprints: dict[tuple[str, str], str | None] = {}
_MISSING = object()


def normalise(text: str) -> str:
    """*text* with every run of whitespace collapsed to one space, trimmed."""
    found = _normalised.get(text)
    if found is None:
        found = " ".join(text.split())
        _remember(_normalised, text, found)
    return found


def fingerprint(kind: str, value: object) -> str | None:
    if value is None:  # an absent value (null content, no call id) links nothing
        return None
    if isinstance(value, str):
        key = (kind, value)
        known = _text_fingerprints.get(key, _MISSING)
        if known is not _MISSING:
            return known  # str or None, as computed below
        text = normalise(value)
        found = (
            None
            if len(text) < MIN_TEXT
            else kind + ":" + hashlib.sha256(text.encode()).hexdigest()[:32]
        )
        _remember(_text_fingerprints, key, found, value)
        return found
    return kind + ":" + hashlib.sha256(canonical_bytes(value)).hexdigest()[:32]


def _remember(memo: dict[Any, Any], key: Any, value: Any, text: str | None = None) -> None:
    if len(text if text is not None else key) > MEMO_MAX_TEXT:
        return
    if len(memo) >= MEMO_ENTRIES:
        memo.clear()  # a new phase of the run: the old texts are rarely re-sent
    memo[key] = value


def produced(event: Event) -> list[str]:
    """Fingerprints of the values *event* hands to later events."""
    out: list[str | None] = []
    if event.type is EventType.AGENT_ACTION:
        body = (event.response or {}).get("body") if isinstance(event.response, dict) else None
        for message in reply_messages(body):
            out.append(fingerprint("text", _text(message.get("content"))))
            out.extend(fingerprint("text", leaf) for leaf in _json_leaves(message.get("content")))
            for call in message.get("tool_calls") or []:
                out.append(fingerprint("id", call.get("id")))
                out.append(_call_fp(call.get("function") or {}))
    elif event.type is EventType.TOOL_RESULT and isinstance(event.response, dict):
        value = event.response.get("value")
        out.append(fingerprint("text", value if isinstance(value, str) else _json_text(value)))
        error = event.response.get("error")
        if isinstance(error, dict):
            out.append(fingerprint("text", error.get("message")))
    return [fp for fp in out if fp]


def consumed(event_type: EventType, request: Any, meta: dict[str, Any]) -> list[str]:
    """Fingerprints of earlier values a request of this type carries."""
    out: list[str | None] = []
    if event_type is EventType.AGENT_ACTION and isinstance(request, dict):
        for message in chat_messages(request):
            out.append(fingerprint("text", _text(message.get("content"))))
            for call in message.get("tool_calls") or []:
                out.append(_call_fp(call.get("function") or {}))
    elif event_type is EventType.TOOL_CALL:
        out.append(fingerprint("id", meta.get("call_id")))
        if isinstance(request, dict):
            out.append(fingerprint("call", [request.get("tool"), request.get("arguments")]))
    return [fp for fp in out if fp]


MIN_QUOTED = 16  # a produced text this long, quoted inside a later message, is a dependency
MAX_QUOTED_PRODUCERS = 256  # bound the substring scan to the most recent producers


def quoted_texts(event: Event) -> list[str]:
    """Longer texts *event* produced that a later prompt may quote inside a larger message."""
    out = []
    if event.type is EventType.AGENT_ACTION and isinstance(event.response, dict):
        for message in reply_messages(event.response.get("body")):
            content = message.get("content")
            text = _text(content)
            if text:
                out.append(normalise(text))
            out.extend(normalise(leaf) for leaf in _json_leaves(content))
    elif event.type is EventType.TOOL_RESULT and isinstance(event.response, dict):
        value = event.response.get("value")
        if isinstance(value, str):
            out.append(normalise(value))
        error = event.response.get("error")  # frameworks show it wrapped ("Error: <message>")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            out.append(normalise(error["message"]))
    return [text for text in out if len(text) >= MIN_QUOTED]


def request_text(request: Any) -> str:
    """All message text of a chat request, whitespace-normalised, for quote detection."""
    parts = []
    for message in chat_messages(request):
        part = normalise(_text(message.get("content")) or "")
        if part:
            parts.append(part)
    return " ".join(parts)  # = the whole text normalised at once, from memoised parts


class GraphBuilder:
    """Derives parents incrementally while a run is recorded (thread-safe)."""

    def __init__(self) -> None:
        self._producers: dict[str, str] = {}
        self._quoted: list[tuple[str, str]] = []  # (text, event id), oldest first
        self._lane_last: dict[str, str] = {}
        self._parents: dict[str, frozenset[str]] = {}
        self._order: dict[str, int] = {}
        self._lock = threading.Lock()

    def parents_for(
        self, event_id: str, event_type: EventType, lane: str, request: Any, meta: dict[str, Any]
    ) -> tuple[Edge, ...]:
        """Parents of a new event, from producers completed so far; advances the lane.

        A chat request quotes every earlier reply, so naive data edges grow quadratically.
        Edges already implied by a newer parent (the candidate is that parent's own parent)
        are dropped: reachability, and so descendants and anchors, stay the same.
        """
        with self._lock:
            candidates: set[str] = set()
            for fp in consumed(event_type, request, meta):
                source = self._producers.get(fp)
                if source is not None and source != event_id:
                    candidates.add(source)
            if event_type is EventType.AGENT_ACTION and self._quoted:
                haystack = request_text(request)
                for text, source in self._quoted[-MAX_QUOTED_PRODUCERS:]:
                    if source not in candidates and text in haystack:
                        candidates.add(source)
            edges: dict[str, EdgeKind] = {}
            for source in sorted(candidates, key=lambda c: -self._order.get(c, -1)):
                if not any(source in self._parents.get(kept, ()) for kept in edges):
                    edges[source] = EdgeKind.DATA
            previous = self._lane_last.get(lane)
            if previous is not None and previous not in edges and not any(
                previous in self._parents.get(kept, ()) for kept in edges
            ):
                edges[previous] = EdgeKind.CONTROL
            self._lane_last[lane] = event_id
            self._parents[event_id] = frozenset(edges)
            self._order.setdefault(event_id, len(self._order))
            return tuple(Edge(source, kind) for source, kind in sorted(edges.items()))

    def completed(self, event: Event) -> None:
        with self._lock:
            self._register(event)

    def follow(self, event: Event) -> None:
        """Account for an event materialised from a recording (replayed, not derived)."""
        with self._lock:
            self._lane_last[event.lane] = event.id
            self._register(event)

    def _register(self, event: Event) -> None:
        self._order.setdefault(event.id, len(self._order))
        self._parents.setdefault(event.id, frozenset(event.parent_ids))
        for fp in produced(event):
            self._producers[fp] = event.id
        self._quoted.extend((text, event.id) for text in quoted_texts(event))


def children_index(events: Iterable[Event]) -> dict[str, list[str]]:
    index: dict[str, list[str]] = {}
    for event in events:
        for parent in event.parent_ids:
            index.setdefault(parent, []).append(event.id)
    return index


def descendants(events: Sequence[Event], root: str) -> set[str]:
    """All events causally after *root* (data or control), *root* excluded."""
    index = children_index(events)
    seen: set[str] = set()
    stack = list(index.get(root, []))
    while stack:
        node = stack.pop()
        if node not in seen:
            seen.add(node)
            stack.extend(index.get(node, []))
    return seen


def ancestors(events: Sequence[Event], node: str) -> set[str]:
    by_id = {e.id: e for e in events}
    seen: set[str] = set()
    stack = list(by_id[node].parent_ids) if node in by_id else []
    while stack:
        current = stack.pop()
        if current not in seen:
            seen.add(current)
            stack.extend(by_id[current].parent_ids)
    return seen


def first_dependent_llm(events: Sequence[Event], root: str) -> Event | None:
    """The first LLM event in O that is causally after *root*."""
    after = descendants(events, root)
    for event in sorted(events, key=lambda e: e.position):
        if event.id in after and event.is_llm and not event.meta.get("within"):
            return event
    return None


def _call_fp(function: dict[str, Any]) -> str | None:
    arguments = function.get("arguments")
    if isinstance(arguments, str):
        try:
            arguments = orjson.loads(arguments)
        except orjson.JSONDecodeError:
            pass
    return fingerprint("call", [function.get("name"), arguments])


def _text(content: Any) -> str | None:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(p.get("text", "") for p in content if isinstance(p, dict))
    return None


MAX_JSON_LEAVES = 64


def _json_leaves(content: Any) -> list[str]:
    """String values inside a JSON object/array reply (a structured output, e.g. a ledger).

    A framework may parse such a reply and hand one field on as a message of its own
    (Magentic-One's progress ledger -> the next speaker's instruction): that is a dependency.
    """
    if not isinstance(content, str) or not content.lstrip().startswith(("{", "[")):
        return []
    try:
        value = orjson.loads(content)
    except orjson.JSONDecodeError:
        return []
    leaves: list[str] = []
    stack = [value]
    while stack and len(leaves) < MAX_JSON_LEAVES:
        item = stack.pop()
        if isinstance(item, str):
            leaves.append(item)
        elif isinstance(item, dict):
            stack.extend(reversed(list(item.values())))
        elif isinstance(item, list):
            stack.extend(reversed(item))
    return leaves


def _json_text(value: Any) -> str | None:
    if value is None:
        return None
    try:
        return canonical_bytes(value).decode()
    except TypeError:
        return None
