"""Which lanes caused an AG2 turn: messages and chat results carry their causes.

An agent's turn happens because of the message it received, and a chat's summary is carried
into later chats (`initiate_chats` carryover, `a_initiate_chats` prerequisites, a nested chat's
summary becoming the reply of the agent that ran it). Content cannot always show that link: a
tool-call reply has `content: null` (a nested chat's message function quotes it as "None"), a
`last_msg` summary of it is empty, a short reply quoted in a longer message is too short to
match. So every LLM call is attributed the lanes that caused it (`dispatched_by`); the core
graph draws a control edge from each such lane's latest call, and a selective replay runs the
call live when one of those lanes went live (model/graph.py, replay/live.py).

Causes are sets of lanes in boxes that follow AG2's own call structure:

* `receive(message, sender)`: the receiver's turn is caused by the sender (its lanes) and by
  whatever caused the sender's current turn: AG2's `send` calls `receive` directly (`a_send`
  awaits `a_receive`), so the box in context at that moment is the sender's. The turn runs
  with a box of its own; AG2 nests the rest of the conversation inside `receive`, and when it
  returns that box is merged back into the enclosing one: a chat is one causal chain.
* `initiate_chat`: the chat's box starts from the enclosing box (a nested chat run inside a
  turn) and, for a chat of `initiate_chats` / `a_initiate_chats`, from the boxes of the chats
  whose summaries it carries over: every earlier chat of the sequence (minus
  `finished_chat_indexes_to_exclude_from_carryover`), or its prerequisites - not chats that
  merely finished earlier by timing. After the chats, their boxes flow into the enclosing
  turn (a nested chat's summary is that turn's reply). Top-level chats have no enclosing box:
  two independent chats a program runs one after the other are not linked by order alone.
* An LLM call made on an executor thread (the async API runs the model client through
  `run_in_executor`, which does not carry contextvars) uses the box of the calling agent's
  latest received message, kept per agent object; agents that call the model are never shared
  by concurrent chats (_chat.refusing_shared_recipients), so that is the chat's own.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any
from weakref import WeakKeyDictionary

from symtrace.frameworks.contract import instance_lane
from symtrace_ag2._lanes import agent_name, lane_of


class Box:
    """A growing set of lanes (what caused a turn or a chat so far)."""

    __slots__ = ("_lanes", "_lock")

    def __init__(self, lanes: Iterable[str] = ()) -> None:
        self._lanes = set(lanes)
        self._lock = threading.Lock()  # executor threads read while the loop merges

    def add(self, lanes: Iterable[str]) -> None:
        with self._lock:
            self._lanes.update(lanes)

    def lanes(self) -> frozenset[str]:
        with self._lock:
            return frozenset(self._lanes)


_box: ContextVar[Box | None] = ContextVar("symtrace_ag2_causes", default=None)
# agent -> what caused its latest received message (for calls on executor threads)
_received: WeakKeyDictionary[Any, frozenset[str]] = WeakKeyDictionary()
_received_lock = threading.Lock()


@dataclass
class _Plan:
    """The chats one `initiate_chats` / `a_initiate_chats` call runs, and what each carries."""

    base: frozenset[str]
    prerequisites: dict[Any, tuple[Any, ...]] | None  # None: a sequence (carries all earlier)
    finished: dict[Any, frozenset[str]] = field(default_factory=dict)

    def carried(self, key: Any, excluded: Iterable[Any]) -> frozenset[str]:
        skip = set(excluded or ())
        sources = (self.finished if self.prerequisites is None
                   else {p: self.finished.get(p, frozenset())
                         for p in self.prerequisites.get(key, ())})
        out = set(self.base)
        for chat, lanes in sources.items():
            if chat not in skip:
                out |= lanes
        return frozenset(out)


_plan: ContextVar[_Plan | None] = ContextVar("symtrace_ag2_chat_plan", default=None)


def sender_lanes(agent: Any) -> frozenset[str]:
    """The lanes *agent*'s calls are recorded on: its lane in this context (qualified by a
    concurrent chat) and its plain lane (the async API's executor threads)."""
    return frozenset({lane_of(agent), instance_lane(agent, agent_name(agent))})


def of_call(caller: Any) -> frozenset[str]:
    """The lanes that caused the call *caller* (an agent, or None) is making now."""
    box = _box.get()
    if box is not None:
        return box.lanes()
    if caller is None:
        return frozenset()
    with _received_lock:
        return _received.get(caller, frozenset())


@contextmanager
def _turn(agent: Any, sender: Any) -> Iterator[None]:
    outer = _box.get()
    causes = (outer.lanes() if outer is not None else frozenset()) | sender_lanes(sender)
    with _received_lock:
        _received[agent] = causes
    box = Box(causes)
    token = _box.set(box)
    try:
        yield
    finally:
        _box.reset(token)
        if outer is not None:  # the conversation AG2 ran inside this receive
            outer.add(box.lanes())


def receiving(original: Callable[..., Any]) -> Callable[..., Any]:
    """`ConversableAgent.receive(message, sender, ...)`: the turn is caused by the sender."""

    @functools.wraps(original)
    def receive(self: Any, message: Any, sender: Any, *args: Any, **kwargs: Any) -> Any:
        with _turn(self, sender):
            return original(self, message, sender, *args, **kwargs)

    return receive


def a_receiving(original: Callable[..., Any]) -> Callable[..., Any]:
    """`ConversableAgent.a_receive`: async twin of receiving()."""

    @functools.wraps(original)
    async def a_receive(self: Any, message: Any, sender: Any, *args: Any, **kwargs: Any) -> Any:
        with _turn(self, sender):
            return await original(self, message, sender, *args, **kwargs)

    return a_receive


@contextmanager
def chat(kwargs: dict[str, Any]) -> Iterator[None]:
    """One `initiate_chat` / `a_initiate_chat` (its keyword arguments *kwargs*): its box starts
    from the enclosing one and the chats it carries over; it flows back when the chat ends."""
    outer, plan = _box.get(), _plan.get()
    start = outer.lanes() if outer is not None else frozenset()
    key = kwargs.get("chat_id") if plan is not None and plan.prerequisites is not None \
        else len(plan.finished) if plan is not None else None
    if plan is not None:
        start |= plan.carried(key, kwargs.get("finished_chat_indexes_to_exclude_from_carryover"))
    box = Box(start)
    token, plan_token = _box.set(box), _plan.set(None)  # chats nested in it are not members
    try:
        yield
    finally:
        _plan.reset(plan_token)
        _box.reset(token)
        if plan is not None:
            plan.finished[key] = box.lanes()
        elif outer is not None:
            outer.add(box.lanes())


@contextmanager
def _chats(prerequisites: dict[Any, tuple[Any, ...]] | None) -> Iterator[None]:
    outer = _box.get()
    plan = _Plan(outer.lanes() if outer is not None else frozenset(), prerequisites)
    token = _plan.set(plan)
    try:
        yield
    finally:
        _plan.reset(token)
        if outer is not None:  # the caller (a nested-chat reply) reads every summary
            for lanes in plan.finished.values():
                outer.add(lanes)


def sequence(original: Callable[..., Any]) -> Callable[..., Any]:
    """`initiate_chats(chat_queue)`: each chat carries over the summaries of the earlier ones."""

    @functools.wraps(original)
    def initiate_chats(chat_queue: list[dict[str, Any]], *args: Any, **kwargs: Any) -> Any:
        with _chats(None):
            return original(chat_queue, *args, **kwargs)

    return initiate_chats


@contextmanager
def concurrent(chat_queue: list[dict[str, Any]]) -> Iterator[None]:
    """`a_initiate_chats(chat_queue)`: each chat carries over its prerequisites' summaries."""
    with _chats({chat.get("chat_id"): tuple(chat.get("prerequisites") or ())
                 for chat in chat_queue}):
        yield
