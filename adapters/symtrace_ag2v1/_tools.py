"""AG2 1.x tool calls as symtrace tool boundaries.

A model's tool calls arrive as one `ToolCallsEvent`; `ToolExecutor.execute_tools` runs them
concurrently (`asyncio.gather`), each through the tool's middleware into
`FunctionTool.__call__(call, context)`, which resolves the function's dependencies, runs it and
returns a `ToolResultEvent`, or a `ToolErrorEvent` whose text (what the model is shown) is the
formatted traceback of the exception.

The boundary is `FunctionTool.__call__`, below the tool middleware (which still runs on
replay, like the rest of AG2's path): its outcome is recorded, and on replay served without
running the function.

* a result is recorded as the `ToolResult` AG2 made of the return value (its text and data
  parts, `final` and metadata) and rebuilt as one;
* a failure is recorded as the exception (type, module, message, args: the core's failed
  result) plus the exact text AG2 showed the model (`detail`), so the replayed observation is
  byte-identical although no traceback is made on replay.

Lanes: the calls of one message run concurrently, so each gets its own lane
`<agent lane>/tool#<i>`, *i* its position in the message (call #0 of successive turns stays
ordered). Delegations are not boundaries: a `SubagentTool` (`agent.as_tool()`) and the
sub-task tools (`run_subtask(s)`) run other agents, whose model calls and tools are recorded
on their own lanes and replayed through.

A symtrace error at the boundary (a replay divergence) must not become a tool error the model
is shown: AG2 turns any exception into one, so it is kept and raised again once AG2's
`_execute_call` returns, which ends the turn.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

from symtrace.errors import SymtraceError
from symtrace.frameworks.contract import acall_tool
from symtrace.frameworks.contract import context as attribution
from symtrace_ag2v1 import _slots
from symtrace_ag2v1._attribution import agent_name, lane_of, spawning
from symtrace_ag2v1._codec import tool_codec

AGENT_KEY = "__ag2_agent__"  # ag2.utils.AGENT_CONTEXT_DEPENDENCY_KEY
# Where AG2 defines the tools that run agents or its own in-process state rather than the
# outside world: sub-task and knowledge tools (ag2.agent), `as_tool` delegation
# (ag2.tools.subagents), the Network plugin's delegate/peers/channels/tasks/context tools.
DELEGATING_MODULES = ("ag2.agent", "ag2.tools.subagents", "ag2.network")

# call id -> position in the message, for the batch execute_tools is running
_batch: ContextVar[dict[str, int] | None] = ContextVar("symtrace_ag2v1_batch", default=None)
# where a symtrace error raised inside a tool call waits until AG2 let go of it
_failure: ContextVar[list[SymtraceError] | None] = ContextVar("symtrace_ag2v1_failure",
                                                             default=None)


def execute_tools(original: Callable[..., Any]) -> Callable[..., Any]:
    """`ToolExecutor.execute_tools(event, context)`: remember each call's position.

    AG2 calls it as a stream subscriber through fast_depends, which reads the signature
    (through `__wrapped__`) and passes `context` by name: the parameter names must stay."""

    @functools.wraps(original)
    async def execute_tools(self: Any, event: Any, context: Any) -> Any:
        positions = {call.id: index for index, call in enumerate(event.calls)}
        token = _batch.set(positions)
        try:
            with _slots.batch(event.calls):  # sub-task slots asked for in call order
                return await original(self, event, context)
        finally:
            _batch.reset(token)

    return execute_tools


def execute_call(original: Callable[..., Any]) -> Callable[..., Any]:
    """`ag2.tools.executor._execute_call(context, call)`: AG2 turns every exception of a tool
    call into a ToolErrorEvent here; a symtrace error is raised once it returns instead. When
    it returns, the call gives up the sub-task slot turns it did not use (_slots.py)."""

    @functools.wraps(original)
    async def _execute_call(context: Any, call: Any) -> Any:
        box: list[SymtraceError] = []
        token = _failure.set(box)
        try:
            outcome = await original(context, call)
        finally:
            _failure.reset(token)
            _slots.call_ended((_batch.get() or {}).get(call.id))
        if box:
            raise box[0]
        return outcome

    return _execute_call


def is_delegation(tool: Any) -> bool:
    """Tools whose body runs other agents (recorded on their own lanes, not as one value)
    or AG2's own in-process state: they run on replay too."""
    call = getattr(getattr(tool, "model", None), "call", None)
    module = str(getattr(call, "__module__", None) or "")
    return any(module == package or module.startswith(f"{package}.")
               for package in DELEGATING_MODULES)


def function_tool_call(original: Callable[..., Any]) -> Callable[..., Any]:
    """`FunctionTool.__call__(call, context)`: the tool boundary."""

    @functools.wraps(original)
    async def __call__(self: Any, event: Any, context: Any) -> Any:
        if is_delegation(self):  # a sub-task it spawns is named after the call's position
            with spawning((_batch.get() or {}).get(event.id), getattr(event, "id", None)):
                return await original(self, event, context)
        agent = getattr(context, "dependencies", {}).get(AGENT_KEY)
        executor = agent_name(agent) if agent is not None else "main"
        base = lane_of(agent) if agent is not None else attribution.current().lane
        index = (_batch.get() or {}).get(event.id)
        lane = f"{base}/tool#{index}" if index is not None else f"{base}/tool"
        codec = tool_codec(event)
        try:
            with attribution.agent(executor, lane=lane):
                return await acall_tool(self.name, _arguments(event),
                                        lambda: codec.run(original(self, event, context)),
                                        call_id=event.id, codec=codec.codec)
        except SymtraceError as exc:
            box = _failure.get()
            if box is None:
                raise
            box.append(exc)
            return codec.placeholder(exc)
        except Exception as exc:  # noqa: BLE001 - a recorded tool failure, served on replay
            return codec.failed(exc)

    return __call__


def _arguments(call: Any) -> dict[str, Any]:
    try:
        parsed = call.serialized_arguments
    except ValueError:  # not JSON: AG2 reports that as the tool's failure, recorded as such
        return {"arguments": call.arguments}
    return parsed if isinstance(parsed, dict) else {"arguments": parsed}
