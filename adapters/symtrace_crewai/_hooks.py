"""Wrapper factories for the CrewAI hook table (see `CrewAIAdapter.hooks`).

Each factory takes the original function and returns its replacement. Wrappers pass the
framework's arguments through unchanged; they only open attribution scopes (ContextVars, which
CrewAI copies into its worker threads), tool boundaries, or declare the run's final result.
The hooks are installed only while a symtrace session is active.
"""

from __future__ import annotations

import functools
import inspect
import re
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from symtrace.errors import AdapterError
from symtrace.frameworks.contract import active, call_tool, context, final_result
from symtrace_crewai import _refusals, _tools
from symtrace_crewai._attribution import (
    MANAGER,
    agent_scope,
    flow_step,
    is_manager,
    native_tool_lane,
    reason_scope,
    register_crew,
    role_of,
)

Original = Callable[..., Any]
Scope = Callable[..., AbstractContextManager[None]]  # (self, *args, **kwargs) -> scope
PLANNER = "Task Execution Planner"  # the role CrewPlanner gives its agent


# -- attribution scopes ------------------------------------------------------------------------
def scoped(scope: Scope) -> Callable[[Original], Original]:
    """A factory wrapping sync, async and awaitable-returning methods in *scope*."""

    def factory(original: Original) -> Original:
        if inspect.iscoroutinefunction(original):

            @functools.wraps(original)
            async def async_wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
                with scope(self, *args, **kwargs):
                    return await original(self, *args, **kwargs)

            return async_wrapper

        @functools.wraps(original)
        def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
            with scope(self, *args, **kwargs):
                result = original(self, *args, **kwargs)
            if inspect.iscoroutine(result):  # Agent.kickoff inside a running loop
                return _scoped_coroutine(result, scope(self, *args, **kwargs))
            return result

        return wrapper

    return factory


async def _scoped_coroutine(coroutine: Any, scope: AbstractContextManager[None]) -> Any:
    with scope:
        return await coroutine


def executing_agent(agent: Any, *_: Any, **__: Any) -> AbstractContextManager[None]:
    """Agent.execute_task / kickoff: the agent's own calls (the manager's say so)."""
    return agent_scope(agent, reason=MANAGER if is_manager(agent) else None)


def converting_output(task: Any, *_: Any, **__: Any) -> AbstractContextManager[None]:
    """Task._export_output: the converter's LLM call for output_pydantic / output_json."""
    return _for_agent(task.agent, "output_conversion")


def checking_guardrail(task: Any, *args: Any, **kwargs: Any) -> AbstractContextManager[None]:
    """Task._invoke_guardrail_function(task_output, agent, ...): LLM guardrails and retries."""
    agent = kwargs.get("agent") or (args[1] if len(args) > 1 else task.agent)
    return _for_agent(agent, "guardrail")


def _for_agent(agent: Any, reason: str) -> AbstractContextManager[None]:
    return reason_scope(reason) if agent is None else agent_scope(agent, reason=reason)


def because(reason: str) -> Scope:
    def scope(*_: Any, **__: Any) -> AbstractContextManager[None]:
        return reason_scope(reason)

    return scope


# -- native tool calls: one lane per call of an LLM response ------------------------------------
def native_tool_call(original: Original) -> Original:
    """AgentExecutor._execute_single_native_tool_call(tool_call): runs on a pool thread."""

    @functools.wraps(original)
    def wrapper(self: Any, tool_call: Any, *args: Any, **kwargs: Any) -> Any:
        from crewai.utilities.agent_utils import extract_tool_call_info

        info = extract_tool_call_info(tool_call)
        call_id = str(info[0]) if info else None
        with native_tool_lane(call_id, _position(self, call_id)):
            return original(self, tool_call, *args, **kwargs)

    return wrapper


def _position(executor: Any, call_id: str | None) -> int:
    """Index of *call_id* in the assistant message CrewAI appended before running the batch."""
    for message in reversed(list(getattr(executor.state, "messages", []))):
        calls = message.get("tool_calls") if isinstance(message, dict) else None
        if calls:
            ids = [call.get("id") if isinstance(call, dict) else None for call in calls]
            return ids.index(call_id) if call_id in ids else 0
    return 0


# -- tool bodies ---------------------------------------------------------------------------------
def tool_run(original: Original) -> Original:
    """BaseTool.run / Tool.run (native path)."""

    @functools.wraps(original)
    def run(self: Any, *args: Any, **kwargs: Any) -> Any:
        if not _tools.needs_boundary():
            return original(self, *args, **kwargs)
        return _tools.boundary(
            self, _tools.run_arguments(args, kwargs), lambda: original(self, *args, **kwargs),
            _tools.mirror_run(self, args, kwargs),
        )

    return run


def tool_arun(original: Original) -> Original:
    """BaseTool.arun / Tool.arun (async native path)."""

    @functools.wraps(original)
    async def arun(self: Any, *args: Any, **kwargs: Any) -> Any:
        if not _tools.needs_boundary():
            return await original(self, *args, **kwargs)
        return await _tools.aboundary(
            self, _tools.run_arguments(args, kwargs), lambda: original(self, *args, **kwargs),
            _tools.mirror_run(self, args, kwargs),
        )

    return arun


def structured_invoke(original: Original) -> Original:
    """CrewStructuredTool.invoke(input, config=None, **kwargs) (text/ReAct path)."""

    @functools.wraps(original)
    def invoke(self: Any, input: Any, config: Any = None, **kwargs: Any) -> Any:
        if not _tools.needs_boundary():
            return original(self, input, config, **kwargs)
        return _tools.boundary(
            self, _tools.invoke_arguments(input, kwargs),
            lambda: original(self, input, config, **kwargs), _tools.mirror_invoke(self, input),
        )

    return invoke


def structured_ainvoke(original: Original) -> Original:
    @functools.wraps(original)
    async def ainvoke(self: Any, input: Any, config: Any = None, **kwargs: Any) -> Any:
        if not _tools.needs_boundary():
            return await original(self, input, config, **kwargs)
        return await _tools.aboundary(
            self, _tools.invoke_arguments(input, kwargs),
            lambda: original(self, input, config, **kwargs), _tools.mirror_invoke(self, input),
        )

    return ainvoke


# -- fail closed where the core cannot see --------------------------------------------------------
UNCAPTURED_SDKS = {"bedrock": "boto3", "azure": "azure-core"}  # BaseLLM.llm_type -> transport


def provider_guard(original: Original) -> Original:
    """BaseLLM._invoke_before_llm_call_hooks: every native provider calls it before sending.

    LLM values are captured at the httpx transport. Bedrock (boto3) and Azure AI Inference
    (azure-core) send through other HTTP stacks, so their calls would be neither recorded nor
    served: refuse them inside a session instead of letting a replay go live silently.
    """

    @functools.wraps(original)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        llm_type = str(getattr(self, "llm_type", ""))
        if llm_type in UNCAPTURED_SDKS and active() is not None:
            raise AdapterError(
                f"symtrace cannot capture CrewAI's native {llm_type} provider: its SDK "
                f"({UNCAPTURED_SDKS[llm_type]}) does not send through httpx, so its calls would "
                "be neither recorded nor replayed; use an OpenAI-compatible endpoint instead"
            )
        return original(self, *args, **kwargs)

    return wrapper


# -- side channel: the injected date -------------------------------------------------------------
def date_block(original: Original) -> Original:
    """Prompts._build_date_block: `Agent(inject_date=True)` puts today's date in the prompt.

    The rendered block is recorded as a boundary (`crewai.current_date`) and served on replay,
    so a replay on another day sends the recorded date instead of loosening the match.
    """

    @functools.wraps(original)
    def wrapper(self: Any) -> Any:
        agent = getattr(self, "agent", None)
        if active() is None or not getattr(agent, "inject_date", False):
            return original(self)
        arguments = {"date_format": str(getattr(agent, "date_format", ""))}
        with _as_agent(agent, "inject_date"):
            return call_tool("crewai.current_date", arguments, lambda: original(self),
                             meta={"side_channel": "inject_date"})

    return wrapper


def _as_agent(agent: Any, reason: str) -> AbstractContextManager[None]:
    """Inside the agent's own scope keep its lane (it may be a delegation lane); else open one."""
    if context.current().agent == role_of(agent):
        return reason_scope(reason)
    return agent_scope(agent, reason=reason)


# -- refusals ------------------------------------------------------------------------------------
def refusing_unsupported(original: Original) -> Original:
    """Crew.kickoff / akickoff: refuse what cannot be replayed before any task runs."""
    if inspect.iscoroutinefunction(original):

        @functools.wraps(original)
        async def async_wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
            if active() is not None:
                _refusals.check_crew(self)
                register_crew(self)
            return await original(self, *args, **kwargs)

        return async_wrapper

    @functools.wraps(original)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        if active() is not None:
            _refusals.check_crew(self)
            register_crew(self)
        return original(self, *args, **kwargs)

    return wrapper


def registering_crew(original: Original) -> Original:
    """Crew.kickoff_async: the crew's place among the run's crews is taken here, in the
    caller's task, before CrewAI runs `kickoff` on a worker thread (`crew_prefix`)."""

    @functools.wraps(original)
    async def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        if active() is not None:
            register_crew(self)
        return await original(self, *args, **kwargs)

    return wrapper


def refusing_parallel_handoffs(original: Original) -> Original:
    """AgentExecutor._should_parallelize_native_tool_calls(calls): a batch about to run on
    the pool; refuse two hand-offs to one coworker in it (see _refusals)."""

    @functools.wraps(original)
    def wrapper(self: Any, tool_calls: Any, *args: Any, **kwargs: Any) -> Any:
        parallel = original(self, tool_calls, *args, **kwargs)
        if parallel and active() is not None:
            _refusals.check_parallel_handoffs(list(tool_calls))
        return parallel

    return wrapper


# -- flows ---------------------------------------------------------------------------------------
def is_user_flow(flow: Any) -> bool:
    """CrewAI's own AgentExecutor is a Flow too: only the program's flows are steps/results."""
    from crewai.agents.agent_executor import AgentExecutor

    return not isinstance(flow, AgentExecutor)


def flow_method(original: Original) -> Original:
    """Flow._execute_method(method_name, method, ...): each user step on its own lane."""

    @functools.wraps(original)
    async def wrapper(self: Any, method_name: Any, *args: Any, **kwargs: Any) -> Any:
        if active() is None or not is_user_flow(self):
            return await original(self, method_name, *args, **kwargs)
        with flow_step(self, str(method_name)):
            return await original(self, method_name, *args, **kwargs)

    return wrapper


def flow_state_id(original: Original) -> Original:
    """Flow._create_initial_state: a user flow's state id is a side channel.

    CrewAI gives every flow state a fresh `uuid4()` and prints it in its console panels, so a
    replay would print another id. It is recorded as a boundary `crewai.flow_id` (arguments:
    the flow class) and the recorded id is served on replay, as `inject_date` is.
    """

    @functools.wraps(original)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        state = original(self, *args, **kwargs)
        if active() is None or not is_user_flow(self):
            return state
        current = state.get("id") if isinstance(state, dict) else getattr(state, "id", None)
        recorded = call_tool("crewai.flow_id", {"flow": type(self).__name__},
                             lambda: current, meta={"side_channel": "flow_id"})
        if isinstance(state, dict):
            state["id"] = recorded
        else:
            object.__setattr__(state, "id", recorded)  # as CrewAI itself sets it
        return state

    return wrapper


def declaring_flow_final(original: Original) -> Original:
    """Flow.kickoff_async (kickoff and akickoff end here): the flow's output is the result."""

    @functools.wraps(original)
    async def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        with context.activation(KICKOFF) as unit:
            result = await original(self, *args, **kwargs)
            if active() is not None and is_user_flow(self):
                if isinstance(result, str):
                    final_result(result, turn=unit)
                else:
                    declare_final(result, unit)
        return result

    return wrapper


# -- side channel: the planner's task summary ------------------------------------------------
ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def planning_summary(original: Original) -> Original:
    """CrewPlanner._create_tasks_summary: the text the planner is asked about.

    CrewAI renders each task's tools with `str(tool)`, a pydantic repr that includes
    `<function _default_cache_function at 0x7f…>`: a memory address, different in every
    process, inside the planner's prompt. The rendering is a boundary `crewai.planning_summary`
    whose arguments are the text with addresses masked (so an edited task, goal or tool still
    changes them and fails closed there) and whose result, served on replay, is the recorded
    text: the planner's request is then the recorded one, byte for byte.
    """

    @functools.wraps(original)
    def wrapper(self: Any) -> Any:
        if active() is None:
            return original(self)
        rendered = original(self)
        with context.agent(PLANNER, reason="planning"):
            return call_tool("crewai.planning_summary",
                             {"summary": ADDRESS.sub(" at 0x…", rendered)}, lambda: rendered,
                             meta={"side_channel": "planning_summary"})

    return wrapper


# -- the run's final output ----------------------------------------------------------------------
# Each kickoff is a unit of work (`context.activation`): of crews kicked off at once (two
# `akickoff`s under `gather`) the result of the one kicked off later is the run's, whichever
# ended last (their end order is timing; R107 would blame the program). A kickoff inside a
# unit (CrewAI's copies in `kickoff_for_each`, a crew inside a Flow step, `kickoff_async`'s
# thread) declares in that unit.
KICKOFF = "crewai.kickoff"


def _declaring(declare: Callable[[Any, context.Turn | None], None]
               ) -> Callable[[Original], Original]:
    """A wrapper factory: run the target in a kickoff unit, then `declare(result, unit)`."""

    def factory(original: Original) -> Original:
        if inspect.iscoroutinefunction(original):

            @functools.wraps(original)
            async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
                with context.activation(KICKOFF) as unit:
                    result = await original(*args, **kwargs)
                    declare(result, unit)
                return result

            return async_wrapper

        @functools.wraps(original)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with context.activation(KICKOFF) as unit:
                result = original(*args, **kwargs)
                if not inspect.isawaitable(result):
                    declare(result, unit)
            return result

        return wrapper

    return factory


def opening_unit(original: Original) -> Original:
    """Crew.kickoff_async: the unit opens in the caller's task (in program order), not in the
    worker thread CrewAI runs `kickoff` on (threads start in any order)."""

    @functools.wraps(original)
    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        with context.activation(KICKOFF):
            return await original(*args, **kwargs)

    return wrapper


def _declare_each(results: Any, unit: context.Turn | None) -> None:
    raws = [getattr(r, "__dict__", {}).get("raw") for r in results] \
        if isinstance(results, list) else []
    if active() is not None and raws and all(isinstance(raw, str) for raw in raws):
        final_result(raws, turn=unit)


def declare_final(output: Any, unit: context.Turn | None = None) -> None:
    """CrewOutput / LiteAgentOutput → its raw text; streaming outputs declare when they end.
    *unit*: the kickoff's (None: the top-level turn running here)."""
    raw = getattr(output, "__dict__", {}).get("raw")  # a field: never trigger a property
    if active() is not None and isinstance(raw, str):
        final_result(raw, turn=unit)


# Crew.kickoff / akickoff, Agent.kickoff: the output's text is the final result
declaring_final = _declaring(declare_final)
# Crew.kickoff_for_each / kickoff_for_each_async / akickoff_for_each: the copies run at once,
# so the result is all their texts, in input order (a list), not the last one to end
declaring_each_final = _declaring(_declare_each)


def chain(*factories: Callable[[Original], Original]) -> Callable[[Original], Original]:
    """Apply several factories to one target (innermost first)."""

    def factory(original: Original) -> Original:
        for make in factories:
            original = make(original)
        return original

    return factory
