"""Who makes each AG2 1.x LLM call, and on which lane.

Every turn of an `ag2.Agent` (`ask`, `run`, `AgentReply.ask`, `resume`, and the turns the
Network hub, A2A and sub-task tools start) goes through `Agent._drive_scope`, an async context
manager that yields the `drive()` coroutine function which runs the turn: the model calls, the
tool calls the model asks for, and the middleware around both. Everything `drive()` awaits
runs in the caller's task (AG2's stream calls its subscribers inline), so attribution set
around `drive()` reaches the LLM request the provider SDK sends, whatever the provider.

Lanes are per agent object (`symtrace.lane_identity.instance_lane`): the first object named
`writer` runs on `writer`, a second one on `writer@2`, numbered when AG2 constructs them, so in
program order. A sub-task agent AG2 builds for `run_subtask(s)` is named `subtask-<random
hex>`; its lane is named after the agent whose tool spawned it instead, and after the position
of that tool call in the model's message: `<parent lane>/subtask` for call #0,
`<parent lane>/subtask#<i>` for call #i, then `@2`, ... for the further sub-tasks of one call
in spawn order. The position matters because sub-tasks of different calls of one message race:
with `TaskConfig(max_concurrency=...)` they are built when they get a slot, which is timing;
the sub-tasks of one `run_subtasks` call start in task order.
"""

from __future__ import annotations

import functools
import re
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from contextvars import ContextVar
from typing import Any
from weakref import WeakKeyDictionary

from symtrace.frameworks.contract import context, final_result, instance_lane

SUBTASK_NAME = re.compile(r"subtask-[0-9a-f]{8}")
# the lane of the agent whose turn is running in this context (None: no turn)
_turn_lane: ContextVar[str | None] = ContextVar("symtrace_ag2v1_turn_lane", default=None)
# sub-task agent -> the name it goes by: "<lane of the agent that spawned it>/subtask[#i]"
_subtask_names: WeakKeyDictionary[Any, str] = WeakKeyDictionary()
# the position (in the model's message) of the delegating tool call running in this context
_spawn_call: ContextVar[int | None] = ContextVar("symtrace_ag2v1_spawn_call", default=None)
# ... and its provider call id (the Network `delegate` wait names it: _delegate.py)
_spawn_id: ContextVar[str | None] = ContextVar("symtrace_ag2v1_spawn_id", default=None)


def _base_name(agent: Any) -> str:
    name = getattr(agent, "name", None)
    name = str(name) if name else type(agent).__name__
    if SUBTASK_NAME.fullmatch(name):
        if agent not in _subtask_names:  # built outside a turn: named at its first call
            call = _spawn_call.get()
            suffix = f"#{call}" if call else ""
            _subtask_names[agent] = f"{_turn_lane.get() or 'main'}/subtask{suffix}"
        return _subtask_names[agent]
    return name


def agent_name(agent: Any) -> str:
    """The name symtrace records for *agent*: its own, or its lane for a sub-task agent."""
    name = getattr(agent, "name", None)
    if name and SUBTASK_NAME.fullmatch(str(name)):
        return lane_of(agent)
    return str(name) if name else type(agent).__name__


def lane_of(agent: Any) -> str:
    return instance_lane(agent, _base_name(agent))


def spawn_call() -> int | None:
    """The position of the delegating tool call running in this context (None: none)."""
    return _spawn_call.get()


def spawn_call_id() -> str | None:
    """The provider's id of the delegating tool call running in this context (None: none)."""
    return _spawn_id.get()


@contextmanager
def spawning(call: int | None, call_id: str | None = None) -> Iterator[None]:
    """The block runs the delegating tool call at position *call* of the model's message
    (provider id *call_id*): a sub-task agent built inside is named after it."""
    tokens = (_spawn_call.set(call), _spawn_id.set(call_id))
    try:
        yield
    finally:
        _spawn_id.reset(tokens[1])
        _spawn_call.reset(tokens[0])


def registered_at_creation(original: Callable[..., Any]) -> Callable[..., Any]:
    """`Agent.__init__`: number same-named agents in the order they are built (a sub-task
    agent is built inside the turn of the agent that spawns it: named after that one)."""

    @functools.wraps(original)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        lane_of(self)

    return __init__


def drive_scope(original: Callable[..., Any]) -> Callable[..., Any]:
    """`Agent._drive_scope`: the turn it yields runs as this agent, on its lane. The reply of
    a turn no other turn encloses (what the program asked for) is the run's final result."""

    @functools.wraps(original)
    @asynccontextmanager
    async def _drive_scope(self: Any, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        async with original(self, *args, **kwargs) as drive:

            async def attributed() -> Any:
                enclosing = _turn_lane.get()
                outermost = enclosing is None
                name, lane = agent_name(self), lane_of(self)
                # a turn run from inside another agent's turn (its `as_tool` delegation, its
                # sub-task) happens because that agent's model asked for it: a control edge
                # from the asking lane's latest call, live when that call went live
                chooser = enclosing if enclosing != lane else None
                token = _turn_lane.set(lane)
                try:
                    with context.agent(name, lane=lane), context.dispatched_by(chooser):
                        turn = context.top_turn()  # concurrent asks: whose reply is final
                        reply = await drive()
                finally:
                    _turn_lane.reset(token)
                if outermost and isinstance(getattr(reply, "body", None), str):
                    final_result(reply.body, turn=turn)
                return reply

            yield attributed

    return _drive_scope
