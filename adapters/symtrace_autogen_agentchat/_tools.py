"""Tool boundaries in AgentChat: function tools, stream tools, code execution, human input.

Every AgentChat tool runs through `BaseTool.run_json(args, cancellation_token, call_id)`,
whether a workbench calls it (`StaticWorkbench.call_tool`, the stream workbench) or an agent
does directly (handoffs). That is the boundary: the call is recorded with its name, its
arguments and the provider's call id, the body runs only when recording or live, and on
replay the recorded value (or the recorded exception, re-raised as its own type) comes back
through the same `await`, so the workbench formats it exactly as it did (`is_error`, message).

`AgentTool`/`TeamTool` (a `TaskRunnerTool`) are not boundaries: they run another agent or
team, whose model calls and tools are the boundaries. A `CodeExecutorAgent`'s code execution
and a `UserProxyAgent`'s input are boundaries too: both are worlds outside the process.
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Callable
from typing import Any

from symtrace.frameworks.contract import JSON_CODEC, acall_tool, context
from symtrace_autogen_agentchat._attribution import runner_lane, runner_stream, tool_lane
from symtrace_autogen_agentchat._codec import VALUE_CODEC, stream_codec, tool_codec

Wrapper = Callable[..., Any]


def _meta(tool: Any) -> dict[str, Any]:
    return {"tool_type": type(tool).__qualname__}


def run_json(task_runner: type) -> Callable[[Wrapper], Wrapper]:
    """Hook for `BaseTool.run_json`: the tool boundary."""

    def factory(original: Wrapper) -> Wrapper:
        @functools.wraps(original)
        async def wrapper(
            self: Any, args: Any, cancellation_token: Any, call_id: str | None = None
        ) -> Any:
            if isinstance(self, task_runner):
                with runner_lane(call_id):
                    return await original(self, args, cancellation_token, call_id=call_id)
            with tool_lane(call_id):
                return await acall_tool(
                    self.name,
                    dict(args),
                    lambda: original(self, args, cancellation_token, call_id=call_id),
                    call_id=call_id,
                    codec=tool_codec(self),
                    meta=_meta(self),
                )

        return wrapper

    return factory


def run_json_stream(task_runner: type) -> Callable[[Wrapper], Wrapper]:
    """Hook for `BaseStreamTool.run_json_stream`: one boundary for the whole stream.

    The items are recorded as a list and re-yielded once the tool has finished, when
    recording as on replay, so both hand the workbench the same sequence.
    """

    def factory(original: Wrapper) -> Wrapper:
        @functools.wraps(original)
        async def wrapper(
            self: Any, args: Any, cancellation_token: Any, call_id: str | None = None
        ) -> AsyncIterator[Any]:
            stream = original(self, args, cancellation_token, call_id=call_id)
            if isinstance(self, task_runner):
                async for item in runner_stream(stream, call_id):
                    yield item
                return

            async def collect() -> list[Any]:
                return [item async for item in stream]

            with tool_lane(call_id):
                items = await acall_tool(
                    self.name, dict(args), collect, call_id=call_id,
                    codec=stream_codec(self), meta=_meta(self),
                )
            for item in items:
                yield item

        return wrapper

    return factory


def execute_code_block(original: Wrapper) -> Wrapper:
    """Hook for `CodeExecutorAgent.execute_code_block`: running code is a tool call."""

    @functools.wraps(original)
    async def wrapper(self: Any, code_blocks: Any, cancellation_token: Any) -> Any:
        blocks = [{"language": block.language, "code": block.code} for block in code_blocks]
        with context.agent(self.name):
            return await acall_tool(
                "execute_code",
                {"code_blocks": blocks},
                lambda: original(self, code_blocks, cancellation_token),
                codec=VALUE_CODEC,
                meta={"tool_type": type(self._code_executor).__qualname__},
            )

    return wrapper


def user_input(original: Wrapper) -> Wrapper:
    """Hook for `UserProxyAgent._get_input`: what the human typed is a recorded observation."""

    @functools.wraps(original)
    async def wrapper(self: Any, prompt: str, cancellation_token: Any) -> str:
        with context.agent(self.name):
            result: str = await acall_tool(
                "user_input",
                {"prompt": prompt},
                lambda: original(self, prompt, cancellation_token),
                codec=JSON_CODEC,
            )
            return result

    return wrapper
