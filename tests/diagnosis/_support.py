"""Small hand-built traces for the diagnosis tests, and the four gold examples of App. G.

`TraceBuilder` appends events the way the recorder does: an agent_action's DATA parents are
the tool results it reads, a tool_call's is the agent_action that asked for it, a
tool_result's is its tool_call, the final_result's is the last agent_action; CONTROL edges
follow each lane.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from symtrace.bundle import FORMAT_VERSION, Bundle
from symtrace.model.events import Edge, EdgeKind, Event, EventType, event_id

BROWSE_TOOLS = [
    {"type": "function", "function": {"name": "browse", "parameters": {"type": "object"}}},
    {"type": "function", "function": {"name": "wiki_api", "parameters": {"type": "object"}}},
]


class TraceBuilder:
    def __init__(self, task: Any = "Answer the question.", *, tools: list[Any] | None = None):
        self.task = task
        self.tools = tools
        self.events: list[Event] = []
        self.counts: dict[EventType, int] = {}
        self.lane_last: dict[str, str] = {}
        self.pending: list[str] = []  # tool results since the last agent action
        self.last_agent: str | None = None

    def _add(
        self,
        type_: EventType,
        lane: str,
        request: Any,
        response: Any,
        data: list[str],
        agent: str | None = None,
        reason: str | None = None,
    ) -> str:
        n = self.counts.get(type_, 0)
        self.counts[type_] = n + 1
        eid = event_id(type_, n)
        parents = [Edge(p, EdgeKind.DATA) for p in data]
        prev = self.lane_last.get(lane)
        if prev and prev not in data:
            parents.append(Edge(prev, EdgeKind.CONTROL))
        self.lane_last[lane] = eid
        event = Event(
            id=eid,
            position=len(self.events),
            type=type_,
            lane=lane,
            agent=agent,
            reason=reason,
            parents=tuple(parents),
            request=request,
            response=response,
        )
        self.events.append(event.with_hashes())
        return eid

    def agent(
        self,
        content: str | None = None,
        *,
        calls: list[tuple[str, Any]] = (),
        agent: str = "assistant",
        lane: str = "main",
        status: int = 200,
        error: dict[str, Any] | None = None,
        reason: str | None = None,
    ) -> str:
        body: dict[str, Any] = {"model": "m", "messages": [{"role": "user", "content": "…"}]}
        if self.tools:
            body["tools"] = self.tools
        if status >= 400:
            rbody: Any = {"error": error or {"type": "server_error", "message": "boom"}}
        else:
            message: dict[str, Any] = {"role": "assistant", "content": content}
            if calls:
                message["tool_calls"] = [
                    {
                        "id": f"call_{i}",
                        "type": "function",
                        "function": {"name": name, "arguments": json.dumps(args)},
                    }
                    for i, (name, args) in enumerate(calls)
                ]
            rbody = {
                "id": "x",
                "object": "chat.completion",
                "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            }
        request = {"method": "POST", "path": "/v1/chat/completions", "query": "", "body": body}
        response = {"status": status, "headers": {}, "body": rbody}
        eid = self._add(
            EventType.AGENT_ACTION, lane, request, response, list(self.pending), agent, reason
        )
        self.pending = []
        self.last_agent = eid
        return eid

    def tool(
        self,
        name: str,
        args: Any,
        *,
        value: Any = None,
        error: dict[str, Any] | None = None,
        lane: str = "main",
    ) -> tuple[str, str]:
        data = [self.last_agent] if self.last_agent else []
        call = self._add(EventType.TOOL_CALL, lane, {"tool": name, "arguments": args}, None, data)
        if error is not None:
            response = {"ok": False, "error": {"module": "requests.exceptions", **error}}
        else:
            response = {"ok": True, "value": value}
        result = self._add(EventType.TOOL_RESULT, lane, None, response, [call])
        self.pending.append(result)
        return call, result

    def final(
        self,
        value: Any,
        *,
        exit_code: int | None = 0,
        stdout_tail: str | None = None,
        lane: str = "main",
    ) -> str:
        data = [self.last_agent] if self.last_agent else []
        response = {"exit_code": exit_code, "value": value, "stdout_tail": stdout_tail}
        return self._add(EventType.FINAL_RESULT, lane, None, response, data)

    def bundle(self, *, replayable: bool = True) -> Bundle:
        manifest = {
            "format_version": FORMAT_VERSION,
            "kind": "recording",
            "complete": True,
            "task": self.task,
            "initial_state": {},
            "config": {},
        }
        if not replayable:
            manifest["replayable"] = False
        return Bundle(path=Path("<test>"), manifest=manifest, events=tuple(self.events))


def gold_c1() -> Bundle:
    """GOLD–C1 (AssistantBench / AG2): final_result returns another browse action."""
    b = TraceBuilder(
        "Which supermarkets within 2 blocks of Lincoln Park in Chicago have "
        "ready-to-eat salad for under $15?",
        tools=BROWSE_TOOLS,
    )
    b.agent("Searching for supermarkets.", calls=[("search", {"query": "Lincoln Park grocery"})])
    b.tool(
        "search",
        {"query": "Lincoln Park grocery"},
        value={"status": "success", "http_status": 200, "results": ["Potash Markets"]},
    )
    b.agent(None, calls=[("browse", {"url": "https://w.potashmarkets.com/"})])
    b.tool(
        "browse",
        {"url": "https://w.potashmarkets.com/"},
        value={
            "status": "success",
            "http_status": 200,
            "url": "https://w.potashmarkets.com/",
            "content": "Potash Markets: fresh salads, deli",
        },
    )
    action = {
        "action": "browse",
        "url": "https://w.potashmarkets.com/",
        "reason": "Find Potash Markets locations and addresses near Lincoln Park.",
    }
    b.agent(json.dumps(action))
    b.final(action)
    return b.bundle()


def gold_c2() -> Bundle:
    """GOLD–C2 (WebArena / AG2): the same wiki page fetched again after a failed
    coordinate query."""
    b = TraceBuilder(
        "Get the relation ID of the closest national park to the hometown of Stephen King and "
        "the time to drive there. Return a list of objects with keys relation_id (integer) and "
        "duration (in H:M:S format) only, without any additional details. Use the OSRM "
        "direction service and the provided wiki to look up any needed information.",
        tools=BROWSE_TOOLS,
    )
    page = {
        "status": "success",
        "http_status": 200,
        "content_length": 889638,
        "url": "https://en.wikipedia.org/wiki/Stephen_King",
    }
    b.agent(None, calls=[("browse", {"url": "https://en.wikipedia.org/wiki/Stephen_King"})])
    b.tool("browse", {"url": "https://en.wikipedia.org/wiki/Stephen_King"}, value=page)
    query = {"action": "query", "prop": "coordinates", "titles": "Stephen King"}
    b.agent(None, calls=[("wiki_api", query)])
    b.tool(
        "wiki_api",
        query,
        value={
            "status": "success",
            "http_status": 200,
            "response": {
                "batchcomplete": "",
                "query": {"pages": {"26954": {"pageid": 26954, "ns": 0, "title": "Stephen King"}}},
            },
        },
    )
    b.agent(None, calls=[("browse", {"url": "https://en.wikipedia.org/wiki/Stephen_King"})])
    b.tool("browse", {"url": "https://en.wikipedia.org/wiki/Stephen_King"}, value=page)
    action = {"action": "browse", "url": "https://en.wikipedia.org/wiki/Stephen_King"}
    b.agent(json.dumps(action))
    b.final(action)
    return b.bundle()


def gold_c3() -> Bundle:
    """GOLD–C3 (WebArena / AG2): MissingSchema then ConnectionError on a placeholder URL."""
    b = TraceBuilder(
        "How much refund should I expect from my orders canceled, if any, in February 2023, "
        "including the shipping fee? Return the value as a number only, without any "
        "additional details.",
        tools=BROWSE_TOOLS,
    )
    b.agent(None, calls=[("browse", {"url": "__SHOPPING__"})])
    b.tool(
        "browse",
        {"url": "__SHOPPING__"},
        error={
            "type": "MissingSchema",
            "message": "Invalid URL '__SHOPPING__': No scheme supplied. Perhaps you meant "
            "https://__SHOPPING__?",
        },
    )
    b.agent(None, calls=[("browse", {"url": "https://__SHOPPING__"})])
    b.tool(
        "browse",
        {"url": "https://__SHOPPING__"},
        error={
            "type": "ConnectionError",
            "message": "HTTPSConnectionPool(host='__shopping__', port=443): Failed to resolve "
            "'__shopping__'",
        },
    )
    b.agent("Final answer: 58.99")
    b.final(58.99)
    return b.bundle()


GOLD_C4_TEXT = (
    "Final answer:\n"
    '[{"name": "Product B", "price": 9.99}, {"name": "Product A", "price": 19.99}]\n\n'
    "Evidence needed: To obtain the actual data, I would browse to the __SHOPPING_ADMIN__ "
    "page and open the most recent completed order."
)


def gold_c4() -> Bundle:
    """GOLD–C4 (WebArena / CrewAI): claims a final answer while saying it must still browse."""
    b = TraceBuilder(
        {
            "task": "Get the product name and final price, ordered from low to high, of the most "
            "recent completed order. Return a list of objects with keys name and price "
            "only, without any additional details.",
            "start_urls": ["__SHOPPING_ADMIN__"],
            "evaluator": {"expected": [{"name": "Ida Workout Parachute Pant", "price": 38.4}]},
        },
        tools=BROWSE_TOOLS,
    )
    b.agent(GOLD_C4_TEXT, agent="Order Analyst")
    b.final(GOLD_C4_TEXT)
    return b.bundle()


def write_bundle(bundle: Bundle, path: Path) -> Path:
    """Write an in-memory bundle to *path* with the core writer (for CLI tests)."""
    from symtrace.bundle import BundleWriter
    from symtrace.model.redaction import Redactor

    manifest = {k: v for k, v in bundle.manifest.items() if k not in ("complete",)}
    writer = BundleWriter(path, manifest, redactor=Redactor()).open()
    for event in bundle.events:
        writer.write_event(event)
    writer.finalize(complete=True)
    return path
