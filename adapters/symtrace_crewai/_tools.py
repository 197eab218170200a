"""Tool boundaries at CrewAI's tool-execution seams.

CrewAI reaches a tool body two ways: the native function-calling path calls `tool.run(**args)`
(`BaseTool.run`, overridden by `Tool.run` for `@tool` functions), the text (ReAct) path calls
`CrewStructuredTool.invoke(input)`, whose `func` is the tool's `_run`. Both, and their async
twins, become `symtrace.boundaries.tools.call_tool` boundaries named as the LLM sees the tool
(`sanitize_tool_name`). On replay the body is skipped and the recorded value (or exception) is
returned; the bookkeeping the skipped method would have done (argument validation, the usage
count behind `max_usage_count`) is mirrored so CrewAI's later decisions stay the same.

Delegation tools (`BaseAgentTool`: delegate work / ask question) are not tool bodies but
hand-offs to another agent, whose own LLM and tool calls are the boundaries. They are
recorded as a `tool_call`/`tool_result` pair marked `handoff` around the coworker's work, and
their body runs in replay too, so the coworker's calls replay one by one.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from symtrace.errors import CanonicalizationError
from symtrace.frameworks.contract import (
    TOOL,
    BoundaryCall,
    acall_tool,
    active,
    call_tool,
    error_outcome,
)
from symtrace.model.canonical import JSONValue, canonical_tool_call, to_json_value
from symtrace_crewai._attribution import delegation, inside_tool, is_inside_tool, native_call_id
from symtrace_crewai._codec import CODEC

T = TypeVar("T")


def tool_name(tool: Any) -> str:
    from crewai.utilities.string_utils import sanitize_tool_name

    return sanitize_tool_name(str(tool.name))


def is_handoff(tool: Any) -> bool:
    from crewai.tools.agent_tools.base_agent_tools import BaseAgentTool

    return isinstance(tool, BaseAgentTool) or isinstance(
        getattr(tool, "_original_tool", None), BaseAgentTool
    )


def run_arguments(args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    return dict(kwargs) if not args else {"args": list(args), "kwargs": dict(kwargs)}


def invoke_arguments(tool_input: Any, kwargs: dict[str, Any]) -> dict[str, Any]:
    """What the text path passed: the input (a dict, or the raw string) and extra kwargs.

    `config` (CrewAI's fingerprint metadata, random per run) is left out by the caller.
    """
    arguments = dict(tool_input) if isinstance(tool_input, dict) else {"input": tool_input}
    return {**arguments, "kwargs": dict(kwargs)} if kwargs else arguments


def needs_boundary() -> bool:
    return active() is not None and not is_inside_tool()


# -- sync and async shells ------------------------------------------------------------------
def boundary(tool: Any, arguments: dict[str, Any], invoke: Callable[[], T],
             mirror: Callable[[], None]) -> T:
    """Run *invoke* as the tool boundary; if replay served it, *mirror* the skipped bookkeeping."""
    if is_handoff(tool):
        return _handoff(tool, arguments, invoke)
    ran = False

    def live() -> T:
        nonlocal ran
        ran = True
        with inside_tool():
            return invoke()

    try:
        return call_tool(tool_name(tool), _arguments(arguments), live, call_id=native_call_id(),
                         codec=CODEC)
    finally:
        if not ran:
            mirror()


async def aboundary(tool: Any, arguments: dict[str, Any], invoke: Callable[[], Awaitable[T]],
                    mirror: Callable[[], None]) -> T:
    if is_handoff(tool):
        return await _ahandoff(tool, arguments, invoke)
    ran = False

    async def live() -> T:
        nonlocal ran
        ran = True
        with inside_tool():
            return await invoke()

    try:
        return await acall_tool(tool_name(tool), _arguments(arguments), live,
                                call_id=native_call_id(), codec=CODEC)
    finally:
        if not ran:
            mirror()


# -- hand-offs to coworkers -----------------------------------------------------------------
def _handoff(tool: Any, arguments: dict[str, Any], invoke: Callable[[], T]) -> T:
    session, call = _handoff_call(tool, arguments)
    ticket = session.begin(call)
    try:
        with delegation():
            result = invoke()
    except Exception as exc:
        if ticket.live:
            session.finish(ticket, error_outcome(exc))
        raise
    if ticket.live:
        session.finish(ticket, {"ok": True, "value": CODEC.encode(result)})
    return result


async def _ahandoff(tool: Any, arguments: dict[str, Any], invoke: Callable[[], Awaitable[T]]
                    ) -> T:
    session, call = _handoff_call(tool, arguments)
    ticket = await session.abegin(call)  # may be held until its recorded completion turn
    try:
        with delegation():
            result = await invoke()
    except Exception as exc:
        if ticket.live:
            await session.afinish(ticket, error_outcome(exc))  # reaches the program in its turn
        raise
    if ticket.live:
        await session.afinish(ticket, {"ok": True, "value": CODEC.encode(result)})
    return result


def _handoff_call(tool: Any, arguments: dict[str, Any]) -> tuple[Any, BoundaryCall]:
    """The hand-off's tool_call; in replay it is matched like any call (not live)."""
    session = active()
    assert session is not None
    name = tool_name(tool)
    meta: dict[str, Any] = {"tool": name, "handoff": True}
    call_id = native_call_id()
    if call_id is not None:
        meta["call_id"] = call_id
    request = session.scrub(canonical_tool_call(name, _arguments(arguments)))
    return session, BoundaryCall.make(TOOL, request, meta)


def _arguments(arguments: dict[str, Any]) -> JSONValue:
    """Arguments as the LLM gave them (core canonical form), tagged only when not JSON."""
    try:
        return to_json_value(arguments)
    except CanonicalizationError:
        return CODEC.encode(arguments)


# -- mirrors of the bookkeeping a served call skips ------------------------------------------
def mirror_run(tool: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Callable[[], None]:
    """`BaseTool.run`/`Tool.run`: validate kwargs, then claim one use (may hit the limit)."""

    def mirror() -> None:
        if not args:
            try:
                tool._validate_kwargs(kwargs)
            except ValueError:
                return  # the recorded call failed validation: it never claimed a use
        tool._claim_usage()

    return mirror


def mirror_invoke(tool: Any, tool_input: Any) -> Callable[[], None]:
    """`CrewStructuredTool.invoke`: parse, check the limit, count one use."""

    def mirror() -> None:
        try:
            tool._parse_args(tool_input)
        except ValueError:
            return
        if not tool.has_reached_max_usage_count():
            tool._increment_usage_count()

    return mirror
