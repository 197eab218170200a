"""Who made an AgentChat model call, on which lane, and why.

AgentChat is async and message-driven: a team's agents and its manager run as handlers of an
embedded `SingleThreadedAgentRuntime`, each message handled in a fresh asyncio task whose
context is copied from the runtime's loop, not from the sender. Attribution therefore has to
be set where the work happens, not where it is requested: at an agent's turn
(`on_messages_stream`, a team container's `handle_request`, a standalone `run`/`run_stream`)
and at the manager methods that call the model themselves (the selector's `select_speaker`,
the Magentic-One orchestrator's planning, progress ledger, replanning and final answer).

An agent's turn is an async generator. A ContextVar set inside one step of a generator would
leak into its consumer between steps (and could not be reset from another context), so
`attributed_stream` sets attribution around each step only. Tasks the agent starts inside a
step (its parallel tool calls) copy the context, attribution included.

Lanes are per *instance* (`symtrace.session.core.instance_lane`): the first agent named
"writer" runs on lane `writer`, a second instance with that name (another team's writer, a
team rebuilt to load a saved state) on `writer@2`; instances are registered when they are
created, so the numbering follows the program, not timing. Managers likewise.

Parallel tool calls get a lane each: `<agent lane>/tool#<i>`, *i* being the call's position in
the model response. The position comes from the framework's own `ToolCallRequestEvent`, which the
agent yields right before it starts the calls; it travels to the tool tasks in a ContextVar.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import AsyncIterator, Callable, Iterator
from contextvars import ContextVar
from typing import Any

from symtrace.frameworks.contract import context, instance_lane

_TOOL_ORDER: ContextVar[tuple[str, ...]] = ContextVar("symtrace_agentchat_tool_order", default=())
# The tool lane of the AgentTool/TeamTool call running: the agents it runs get lanes under it.
_RUNNER_LANE: ContextVar[str | None] = ContextVar("symtrace_agentchat_runner_lane", default=None)

Wrapper = Callable[..., Any]


@contextlib.contextmanager
def _tool_order(order: tuple[str, ...]) -> Iterator[None]:
    token = _TOOL_ORDER.set(order)
    try:
        yield
    finally:
        _TOOL_ORDER.reset(token)


def _tool_lane_name(call_id: str | None) -> str | None:
    current = context.current()
    order = _TOOL_ORDER.get()
    if current.agent is None or call_id is None or call_id not in order:
        return None
    return f"{current.lane}/tool#{order.index(call_id)}"


def tool_lane(call_id: str | None) -> contextlib.AbstractContextManager[None]:
    """The lane of a tool call: `<agent lane>/tool#<i>` when it came from a model response."""
    name = _tool_lane_name(call_id)
    return contextlib.nullcontext() if name is None else context.lane(name)


@contextlib.contextmanager
def runner_lane(call_id: str | None, lane: str | None = None) -> Iterator[None]:
    """Around an AgentTool/TeamTool call: the agents it runs get lanes under its tool lane
    (`<agent lane>/tool#<i>/<inner agent lane>`), so two calls of one AgentTool in the same
    response (one agent instance running twice at once) do not share a lane."""
    token = _RUNNER_LANE.set(lane or _tool_lane_name(call_id) or _RUNNER_LANE.get())
    try:
        yield
    finally:
        _RUNNER_LANE.reset(token)


async def runner_stream(stream: Any, call_id: str | None) -> AsyncIterator[Any]:
    """runner_lane for a streamed AgentTool/TeamTool call, set around each step only (a
    ContextVar set across a generator's yield would leak into its consumer)."""
    lane = _tool_lane_name(call_id)
    try:
        while True:
            with runner_lane(call_id, lane):
                try:
                    item = await anext(stream)
                except StopAsyncIteration:
                    return
            yield item
    finally:
        await stream.aclose()


def attributed(agent: Any, reason: str | None = None, serial: object = None
               ) -> contextlib.AbstractContextManager[None]:
    """Attribution to *agent* (a chat agent or a team manager) on its instance lane (*serial*:
    context.agent's, the object whose turns run one after another)."""
    name = agent_name(agent)
    lane = instance_lane(agent, name)
    runner = _RUNNER_LANE.get()
    return context.agent(name, lane=f"{runner}/{lane}" if runner else lane, reason=reason,
                         serial=serial)


def agent_name(agent: Any) -> str:
    """A chat agent's name, or a manager's stable name (see manager_name)."""
    name = getattr(agent, "name", None)
    return name if isinstance(name, str) and name else manager_name(agent)


def register(original: Wrapper) -> Wrapper:
    """Hook for `BaseChatAgent.__init__`: number same-named instances in creation order."""

    @functools.wraps(original)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        instance_lane(self, agent_name(self))

    return __init__


async def attributed_stream(
    stream: Any, agent: Any, request_event: type | None, reason: str | None = None
) -> AsyncIterator[Any]:
    """Re-yield *stream*, running each of its steps attributed to *agent*."""
    order: tuple[str, ...] = ()
    try:
        while True:
            with attributed(agent, reason), _tool_order(order):
                try:
                    item = await anext(stream)
                except StopAsyncIteration:
                    return
            if request_event is not None and isinstance(item, request_event):
                order = tuple(call.id for call in item.content)
            yield item
    finally:
        with attributed(agent, reason):
            await stream.aclose()


def agent_turn(request_event: type) -> Callable[[Wrapper], Wrapper]:
    """Hook for `on_messages_stream` / `run_stream` of an agent: attribute every step."""

    def factory(original: Wrapper) -> Wrapper:
        @functools.wraps(original)
        def on_messages_stream(self: Any, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
            return attributed_stream(original(self, *args, **kwargs), self, request_event)

        return on_messages_stream

    return factory


# runtime id of a manager that calls the model -> its lane: the participants it asks to speak
# take their turn because of its latest call (a speaker selection, a progress ledger)
_CHOOSERS: dict[str, str] = {}
# runtime id of a participant's container -> the lane of the agent it runs (set at its turns):
# the messages that container publishes to its team were written on that lane. Ids carry the
# team's uuid, so two teams' same-named agents never share an entry.
_SPEAKERS: dict[str, str] = {}
# on a container: the lanes whose messages it buffered since its last turn (what the turn reads)
_HEARD = "_symtrace_heard"


def _heard(container: Any) -> set[str]:
    heard: set[str] | None = container.__dict__.get(_HEARD)
    if heard is None:
        heard = container.__dict__[_HEARD] = set()
    return heard


def participant_turn(original: Wrapper) -> Wrapper:
    """Hook for `ChatAgentContainer.handle_request`: any participant's turn in a team.

    The turn is caused by the manager that sent the request (its lane, when that manager calls
    the model) and by the team members whose messages the container buffered since its last
    turn: the agent reads exactly those. Naming them matters beyond the control edge: two teams
    whose agents get the same text back (both planners asked one tool the same thing) must not
    have one team's request linked to the other team's copy of that text (model/graph.py picks
    the producer inside the call's causes), or a selective replay anchored in one team drops a
    record of the other that nothing sends live (SYM-R102; tests/generated/
    test_defects_agentchat.py)."""

    @functools.wraps(original)
    async def handle_request(self: Any, message: Any, ctx: Any) -> Any:
        chooser = _CHOOSERS.get(str(getattr(ctx, "sender", None)))
        heard = _heard(self)
        causes = heard | {chooser} if chooser else set(heard)
        # the runtime hands each message to a task of its own, but a container handles one at
        # a time (a SequentialRoutedAgent): its turns are ordered, not siblings that could
        # have run in either order (session/context.py serial)
        with attributed(self._agent, serial=self), context.dispatched_by(causes):
            _SPEAKERS[str(self.id)] = context.current().lane
            result = await original(self, message, ctx)
        heard.clear()  # the container cleared its buffer: the next turn reads only new messages
        return result

    return handle_request


def heard_from(original: Wrapper) -> Wrapper:
    """Hook for `ChatAgentContainer.handle_agent_response` / `handle_team_response`: a message
    of another participant (or of an orchestrator that speaks to the team) was buffered."""

    @functools.wraps(original)
    async def handler(self: Any, message: Any, ctx: Any) -> Any:
        sender = str(getattr(ctx, "sender", None))
        lane = _SPEAKERS.get(sender) or _CHOOSERS.get(sender)
        if lane is not None:
            _heard(self).add(lane)
        return await original(self, message, ctx)

    return handler


def buffer_reset(original: Wrapper) -> Wrapper:
    """Hook for `ChatAgentContainer.handle_reset`: the buffer is emptied, and so are its causes."""

    @functools.wraps(original)
    async def handle_reset(self: Any, message: Any, ctx: Any) -> Any:
        _heard(self).clear()
        return await original(self, message, ctx)

    return handle_reset


def manager_call(reason: str) -> Callable[[Wrapper], Wrapper]:
    """Hook for a team manager method that calls the model itself (why: *reason*)."""

    def factory(original: Wrapper) -> Wrapper:
        @functools.wraps(original)
        async def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
            with attributed(self, reason, serial=self):  # one message at a time, as above
                _CHOOSERS[str(self.id)] = context.current().lane
                return await original(self, *args, **kwargs)

        return wrapper

    return factory


def manager_name(manager: Any) -> str:
    """A manager's stable name ("SelectorGroupChatManager", "MagenticOneOrchestrator").

    Its runtime id and topic types carry the team's uuid4 and change every run; the name does
    not, so lanes stay comparable across runs.
    """
    name = getattr(manager, "_name", None)
    return name if isinstance(name, str) and name else type(manager).__name__
