"""Events: the nodes of a bundle's event-dependency graph G, in observed order O.

An event is plain frozen data, no I/O. Node types follow the paper: an `agent_action` is one
LLM decision (request and response together), a tool invocation is a `tool_call` node (the
arguments) followed by a `tool_result` node (the observation or the exception, as data), and a
run ends in one `final_result` node.

Event ids are `<type>_<ordinal>` (ordinal per type, four digits), assigned at record time in
the order boundaries were crossed: never uuids or timestamps, so the same id names the same
event in every replay of the bundle.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, fields
from enum import StrEnum
from typing import Any

from symtrace.model.canonical import JSONValue
from symtrace.model.hashing import content_digest, digest
from symtrace.model.llm_wire import chat_messages, reply_message


class EventType(StrEnum):
    AGENT_ACTION = "agent_action"
    TOOL_CALL = "tool_call"
    TOOL_RESULT = "tool_result"
    FINAL_RESULT = "final_result"


# Completion-order stamps (event meta keys), written by the session, read by replay
# (symtrace.session.scheduling explains the order they encode).
COMPLETED = "completed"  # meta key: rank of the event's result in the completion order
ABANDONED = "abandoned"  # meta key: an LLM call whose response never reached the program
# A selective replay's anchor sent again after a failed attempt (replay/anchor_retries.py):
RETRY_OF = "retry_of"  # meta key: the anchor's first live attempt this one retries
ATTEMPT = "attempt"  # meta key: which attempt of the anchor (the first is 1, unmarked)
RESULT_TYPES = (EventType.AGENT_ACTION, EventType.TOOL_RESULT)  # events that hand a result back
# lanes of unattributed workers (session/context.py): matched by content, not by order
MAIN_LANE = "main"  # the main thread outside asyncio: strict (session/context.py)
POOLED_PREFIXES = ("thread:", "task:")


def is_strict_lane(lane: str) -> bool:
    return not lane.startswith(POOLED_PREFIXES)


# meta key: the turn of a call on an explicit lane (symtrace.session.context.Turn.info: key,
# lane, ordinal, fork, the sibling turns it ran concurrently with, its parent's info)
TURN = "turn"


def turns_independent(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Whether the recording leaves the order of two turns (meta TURN infos) open: the one
    rule by which the graph draws lane order (model/graph.py), replay binds turns
    (replay/matching.py) and a selective replay's live frontier follows a lane
    (replay/live.py). Decided where the turns' ancestries part (siblings_independent()); a
    turn and one inside it are ordered."""
    chain_a = _turn_chain(a)
    for b_side in _turn_chain(b):
        parent = _parent_key(b_side)
        for a_side in chain_a:
            if _parent_key(a_side) == parent:
                return a_side.get("key") != b_side.get("key") and siblings_independent(
                    a_side, b_side)
    return False


def siblings_independent(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Whether two sibling turns (one parent) may have run in either order: one was still open
    when the other opened (`with`), or, neither being a fork, other tasks or threads opened
    them (`opener`): nothing in the record says one waited for the other, and a replay may
    see them the other way round (two threads whose turns happened not to overlap). Turns one
    task or thread opened one after the other are ordered (program order), and so are forks
    that did not overlap (their `with`: an AgentChat model call runs in a task of its own,
    each awaited before the next)."""
    key_a, key_b = a.get("key"), b.get("key")
    if key_a == key_b:
        return False
    if key_b in a.get("with", ()) or key_a in b.get("with", ()):
        return True
    return (not a.get("fork") and not b.get("fork")
            and a.get("opener", 0) != b.get("opener", 0))


def _turn_chain(info: dict[str, Any]) -> list[dict[str, Any]]:
    """*info* and the infos of the turns it is inside, innermost first."""
    out = []
    current: Any = info
    while isinstance(current, dict):
        out.append(current)
        current = current.get("parent")
    return out


def _parent_key(info: dict[str, Any]) -> str:
    parent = info.get("parent")
    return str(parent.get("key", "")) if isinstance(parent, dict) else ""


class EdgeKind(StrEnum):
    DATA = "data"  # the target's request contains a value the source produced
    CONTROL = "control"  # lane order: the source came before the target in the same lane



def event_hashes(
    event_type: EventType, lane: str, request: JSONValue, response: JSONValue,
    request_hash: str | None = None, response_hash: str | None = None,
) -> tuple[str | None, str | None, str]:
    """The request, response and content hashes of an event with this content (what
    `Event.with_hashes` sets; the session builds its events with them at once). A digest the
    caller already computed (*request_hash*, *response_hash*) is not computed again."""
    if request is None:
        request_hash = None
    elif not request_hash:
        request_hash = digest(request)
    if response is None:
        response_hash = None
    elif not response_hash:
        response_hash = digest(response)
    return request_hash, response_hash, content_digest(event_type, lane, request_hash,
                                                        response_hash)

@dataclass(frozen=True, slots=True)
class Edge:
    source: str
    kind: EdgeKind

    def to_json(self) -> dict[str, str]:
        return {"source": self.source, "kind": self.kind.value}


@dataclass(frozen=True, slots=True)
class Event:
    """One node of G.

    `request` is the canonical request (what matching compares); `response` is what the
    boundary returned (what replay serves). `content_hash` digests the fields that must agree
    when the event is materialised again: type, lane, request and response hashes.
    """

    id: str
    position: int
    type: EventType
    lane: str
    agent: str | None = None
    reason: str | None = None
    parents: tuple[Edge, ...] = ()
    request: JSONValue = None
    request_hash: str | None = None
    response: JSONValue = None
    response_hash: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    content_hash: str = ""

    @property
    def is_llm(self) -> bool:
        return self.type is EventType.AGENT_ACTION

    @property
    def parent_ids(self) -> tuple[str, ...]:
        return tuple(edge.source for edge in self.parents)

    def with_hashes(
        self,
        request_hash: str | None = None,
        *,
        meta: dict[str, Any] | None = None,
        response_hash: str | None = None,
    ) -> Event:
        """Return a copy with request/response/content hashes computed from the content.

        *request_hash*, *response_hash*: the digest of `request` / `response` when the
        caller already computed it (a boundary call hashes its request once, to match it;
        recording does not hash it again). *meta*: a new `meta` for the same copy (the
        session stamps and hashes a recorded event at once; meta is not part of any hash).
        """
        request_hash, response_hash, content_hash = event_hashes(
            self.type, self.lane, self.request, self.response, request_hash, response_hash)
        changes: dict[str, Any] = {
            "request_hash": request_hash,
            "response_hash": response_hash,
            "content_hash": content_hash,
        }
        if meta is not None:
            changes["meta"] = meta
        return self.evolve(**changes)

    def evolve(self, **changes: Any) -> Event:
        """`dataclasses.replace` for events, without its generic machinery (every recorded
        call copies its event at least once: hashed): the one way an event is copied.
        Unknown field names raise TypeError."""
        unknown = changes.keys() - _FIELD_NAMES
        if unknown:
            raise TypeError(f"Event has no field(s) {sorted(unknown)}")
        if type(self) is Event:
            return _evolved(self, changes)
        # a subclass (LazyEvent) reads and writes some fields through its own properties
        event = object.__new__(type(self))
        for name in _FIELD_NAMES_ORDERED:
            _set(event, name, changes[name] if name in changes else getattr(self, name))
        return event

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "position": self.position,
            "type": self.type.value,
            "lane": self.lane,
            "agent": self.agent,
            "reason": self.reason,
            "parents": [edge.to_json() for edge in self.parents],
            "request": self.request,
            "request_hash": self.request_hash,
            "response": self.response,
            "response_hash": self.response_hash,
            "meta": self.meta,
            "content_hash": self.content_hash,
        }

    @classmethod
    def from_json(
        cls, data: dict[str, Any], edges: dict[tuple[str, str], Edge] | None = None
    ) -> Event:
        """An event from its JSON form; a missing or ill-typed field raises KeyError,
        ValueError or TypeError. *edges*: a cache shared across one bundle's events (an Edge
        is an immutable value, so equal edges can be one object)."""
        # Loading a bundle builds tens of thousands of events: the frozen dataclass __init__
        # (one checked setattr per field, defaults) costs three times these sets, each through
        # its slot's own setter (a quarter cheaper than object.__setattr__).
        self = object.__new__(cls)
        edges = {} if edges is None else edges
        position = data["position"]
        _put_id(self, data["id"])
        _put_position(self, position if type(position) is int else int(position))
        kind = data["type"]
        _put_type(self, _EVENT_TYPES.get(kind) or EventType(kind))
        _put_lane(self, data["lane"])
        get = data.get
        _put_agent(self, get("agent"))
        _put_reason(self, get("reason"))
        parents = []
        for p in data.get("parents", ()):
            key = (p["source"], p["kind"])
            edge = edges.get(key)
            if edge is None:
                edge = edges[key] = Edge(key[0], _EDGE_KINDS.get(key[1]) or EdgeKind(key[1]))
            parents.append(edge)
        _put_parents(self, tuple(parents))
        _put_request_hash(self, get("request_hash"))
        _put_response_hash(self, get("response_hash"))
        _put_meta(self, dict(get("meta") or {}))
        _put_content_hash(self, get("content_hash", ""))
        self._take_content(get("request"), get("response"))
        return self

    def _take_content(self, request: JSONValue, response: JSONValue) -> None:
        """Set request and response as read (a LazyEvent keeps its blob refs to join later)."""
        _put_request(self, request)
        _put_response(self, response)


_set = object.__setattr__  # frozen: fields are set once, while an event is being built
_FIELD_NAMES_ORDERED = tuple(f.name for f in fields(Event))
_FIELD_NAMES = frozenset(_FIELD_NAMES_ORDERED)


def _evolved_source() -> str:
    """The source of `_evolved(event, changes)`: a copy of *event* (exactly an Event) with
    *changes*, one straight line per field, each through its slot's own setter (generated
    from the fields, as dataclasses generates __init__: a loop over the names with
    object.__setattr__ costs 1.75 times as much, and every recorded call copies an event)."""
    lines = ["def _evolved(self, changes):", "    event = _new(Event)"]
    lines += [f"    _put_{name}(event, changes[{name!r}] if {name!r} in changes else self.{name})"
              for name in _FIELD_NAMES_ORDERED]
    return "\n".join([*lines, "    return event", ""])


_generated: dict[str, Any] = {"_new": object.__new__, "Event": Event}
_generated.update({f"_put_{name}": getattr(Event, name).__set__ for name in _FIELD_NAMES_ORDERED})
exec(_evolved_source(), _generated)
_evolved: Callable[[Event, dict[str, Any]], Event] = _generated["_evolved"]
(_put_id, _put_position, _put_type, _put_lane, _put_agent, _put_reason, _put_parents, _put_request,
 _put_request_hash, _put_response, _put_response_hash, _put_meta, _put_content_hash) = (
    _generated[f"_put_{name}"] for name in _FIELD_NAMES_ORDERED)


# Enum calls dominate reading a large bundle; a dict finds the member (an unknown value still
# raises ValueError through the Enum call).
_EVENT_TYPES = {member.value: member for member in EventType}
_EDGE_KINDS = {member.value: member for member in EdgeKind}


def event_id(event_type: EventType, ordinal: int) -> str:
    return f"{event_type.value}_{ordinal:04d}"


def event_summary(event: Event, limit: int = 60) -> str:
    """What an event says, in one line, the same in `show`, the viewer and `diff`: a tool
    call's request; a final result's answer (the value the program declared), or its exit
    code (none in-process) and last line of output when it declared none; anything else's
    response."""
    if event.type is EventType.FINAL_RESULT and isinstance(event.response, dict):
        value = event.response.get("value")
        if isinstance(value, str):  # the answer as text, not as a JSON string literal
            return one_line(value, limit)
        if value is not None:
            return summarize(value, limit)
        tail = [ln for ln in str(event.response.get("stdout_tail") or "").splitlines()
                if ln.strip()]
        code = event.response.get("exit_code")  # None: recorded in-process (API, pytest)
        text = ("no declared answer" if code is None else f"exit {code}, no declared answer") + (
            f"; output ends: {tail[-1]}" if tail else ""
        )
        return one_line(text, limit)
    shown = event.request if event.type is EventType.TOOL_CALL else event.response
    if shown is None:
        shown = event.request
    return summarize(shown, limit) if shown is not None else ""


def one_line(text: str, limit: int = 60) -> str:
    """*text* on one line (whitespace runs as one space), ellipsized to *limit*."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def summarize(value: JSONValue, limit: int = 60) -> str:
    """A one-line human summary of a request or response, for tables and reports."""
    text = _summary_text(value)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _summary_text(value: JSONValue) -> str:
    if isinstance(value, dict):
        body = value.get("body", value)
        if isinstance(body, dict):
            messages = chat_messages(value) if "path" in value else body.get("messages")
            if isinstance(messages, list) and messages:
                last = messages[-1]
                if isinstance(last, dict):
                    return f"{last.get('role', '?')}: {_content_text(last)}"
            message = reply_message(body)
            if message is not None:
                calls = message.get("tool_calls") or []
                if calls:
                    names = [c.get("function", {}).get("name", "?") for c in calls]
                    return "→ tool_calls " + ", ".join(names)
                return str(message.get("content") or "")
        if "chunks" in value:
            return f"[stream {len(value['chunks'])} chunks] {value.get('text', '')}"
        if "tool" in value:
            return f"{value['tool']}({_short_json(value.get('arguments'))})"
        if "ok" in value:
            if value["ok"]:
                return _short_json(value.get("value"))
            error = value.get("error") or {}
            return f"! {error.get('type')}: {error.get('message')}"
    return _short_json(value)


def _content_text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return " ".join(part.get("text", "") for part in content if isinstance(part, dict))
    if content is None and message.get("tool_calls"):
        return "tool_calls " + ", ".join(
            c.get("function", {}).get("name", "?") for c in message["tool_calls"]
        )
    return str(content or "")


def _short_json(value: JSONValue) -> str:
    import orjson

    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()
    except TypeError:
        return repr(value)
