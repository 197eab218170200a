"""Attribution: which agent made a boundary call, on which lane, and why.

Adapters (and users) set attribution with `symtrace.agent(...)` / `symtrace.lane(...)`; it
lives in ContextVars so it follows asyncio tasks and context-copying thread pools.

A *lane* is a sequential actor. Explicit lanes (set by an adapter or the user) and the
implicit `main` lane (the main thread outside asyncio) are **strict**: their calls must come in
recorded order. Calls from other threads and asyncio tasks without explicit attribution fall
into **pooled** lanes (`thread:<name>`, `task:<name>`): which worker runs which call varies from
run to run, so replay matches them by content among the causally enabled records instead.
"""

from __future__ import annotations

import asyncio
import asyncio.events as asyncio_events
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

_agent: ContextVar[str | None] = ContextVar("symtrace_agent", default=None)
_lane: ContextVar[str | None] = ContextVar("symtrace_lane", default=None)
_reason: ContextVar[str | None] = ContextVar("symtrace_reason", default=None)
# The lanes whose latest calls decided that this turn happens (a team manager that selected this
# speaker; the agents whose messages or chat results triggered it): the turn is causally after
# those calls even when its request does not quote them (a tool-call message has no content).
_dispatched_by: ContextVar[tuple[str, ...]] = ContextVar("symtrace_dispatched_by", default=())
# The tool_call whose body is running: boundary calls inside it are part of its observation.
_within_tool: ContextVar[str | None] = ContextVar("symtrace_within_tool", default=None)

MAIN_LANE = "main"
POOLED_PREFIXES = ("thread:", "task:")


@dataclass(frozen=True, slots=True)
class Attribution:
    agent: str | None
    lane: str
    reason: str | None
    dispatched_by: tuple[str, ...] = ()  # lanes whose latest calls caused this turn (see below)

    @property
    def strict(self) -> bool:
        return is_strict_lane(self.lane)


def is_strict_lane(lane: str) -> bool:
    return not lane.startswith(POOLED_PREFIXES)


@contextmanager
def agent(name: str, *, lane: str | None = None, reason: str | None = None) -> Iterator[None]:
    """Attribute boundary calls inside the block to agent *name* (its lane unless given)."""
    tokens = [_agent.set(name), _lane.set(lane or name)]
    reason_token = _reason.set(reason)
    try:
        yield
    finally:
        _reason.reset(reason_token)
        _lane.reset(tokens[1])
        _agent.reset(tokens[0])


@contextmanager
def lane(name: str) -> Iterator[None]:
    """Run the block's boundary calls on the strict lane *name*."""
    token = _lane.set(name)
    try:
        yield
    finally:
        _lane.reset(token)


@contextmanager
def reason(text: str) -> Iterator[None]:
    """Say why the calls in the block are made (e.g. "speaker_selection")."""
    token = _reason.set(text)
    try:
        yield
    finally:
        _reason.reset(token)


@contextmanager
def dispatched_by(lanes: str | Iterable[str] | None) -> Iterator[None]:
    """The block is a turn that the latest calls of *lanes* caused: a group chat manager's
    speaker selection, or the agents whose messages (with or without content) or chat results
    triggered it. The graph gets a control edge from each such lane's latest call to the turn's
    calls, and a selective replay in which one of those lanes went live runs the turn live."""
    if lanes is None:
        lanes = ()
    elif isinstance(lanes, str):
        lanes = (lanes,)
    token = _dispatched_by.set(tuple(sorted(set(lanes))))
    try:
        yield
    finally:
        _dispatched_by.reset(token)


@contextmanager
def within_tool(event_id: str) -> Iterator[None]:
    """Mark boundary calls made while a live tool body runs as nested in that tool call."""
    token = _within_tool.set(event_id)
    try:
        yield
    finally:
        _within_tool.reset(token)


def current_tool() -> str | None:
    return _within_tool.get()


def current() -> Attribution:
    # Every boundary call asks; a program makes its calls from a few attributions, so each
    # is built once (frozen: shared safely) rather than per call. Bounded: task lanes are
    # named per task.
    key = (_agent.get(), _lane.get() or _implicit_lane(), _reason.get(), _dispatched_by.get())
    found = _attributions.get(key)
    if found is None:
        if len(_attributions) >= _ATTRIBUTIONS_KEPT:
            _attributions.clear()
        found = _attributions[key] = Attribution(*key)
    return found


_attributions: dict[tuple[str | None, str, str | None, tuple[str, ...]], Attribution] = {}
_ATTRIBUTIONS_KEPT = 1024


def _implicit_lane() -> str:
    # the running loop without the RuntimeError `current_task()` raises outside one (every
    # call of a sync program would raise and catch it)
    loop = asyncio_events._get_running_loop()
    task = asyncio.current_task(loop) if loop is not None else None
    if task is not None:
        return f"task:{task.get_name()}"
    if threading.get_ident() == threading.main_thread().ident:  # no Thread looked up
        return MAIN_LANE
    return f"thread:{threading.current_thread().name}"
