"""AG2 tool calls as symtrace tool boundaries, on AG2's own execution path.

AG2 runs a tool in `ConversableAgent.execute_function` (sync tool-call replies, sequential) or
`a_execute_function` (async replies, several calls of one message under `asyncio.gather`).
Both parse the arguments, emit the "EXECUTING/EXECUTED FUNCTION" events, look the function up
with `self._function_map.get(name)`, call it, and turn an exception into the observation
`"Error: <message>"`. Only the function call itself is the boundary: while one of these
methods runs, the agent's `_function_map` is a view that hands out the function wrapped in
`call_tool`/`acall_tool`, so everything around it (events, error text, result dict) still runs
natively on replay, the function body does not, and a recorded exception is re-raised where
AG2 catches it. The view is the agent's map again as soon as no call is in flight.

Lanes: a tool call runs on `<executor>/tool#<i>`, *i* its position in the LLM message that
requested it, so the calls of one message never share a strict lane (they are concurrent on
the async path) while call #0 of successive turns stays ordered.

AG2 catches every `Exception` a tool raises. A symtrace error raised at the boundary (a replay
divergence, a result with no JSON form) must not become an "Error: ..." observation: it is
kept and raised again once AG2's method returns. A recorded tool exception is re-raised as its
own class; when that class cannot be imported on replay (defined inside a function), the core
raises ReplayedToolError, and since AG2 shows the model nothing but `str(exc)`, it is raised
as `RecordedToolError`, whose text is exactly the recorded message.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterator, MutableMapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from symtrace.errors import SymtraceError
from symtrace.frameworks.contract import ReplayedToolError, acall_tool, call_tool, context
from symtrace_ag2._attribution import agent_name, lane_of


class RecordedToolError(ReplayedToolError):
    """A recorded tool exception whose class cannot be rebuilt; `str()` is its message."""

    def __str__(self) -> str:
        return str(self.error.get("message", ""))


@dataclass(slots=True)
class ToolCall:
    """The tool call in flight in one execute_function frame."""

    executor: str
    name: str
    call_id: str | None
    lane: str
    failure: SymtraceError | None = None

    def bind(self, func: Callable[..., Any]) -> Callable[..., Any]:
        from autogen.fast_depends.utils import is_coroutine_callable

        if is_coroutine_callable(func):

            @functools.wraps(func)
            async def run_async(**arguments: Any) -> Any:
                with self._attributed():
                    return await acall_tool(self.name, arguments, lambda: func(**arguments),
                                            call_id=self.call_id)

            return run_async

        @functools.wraps(func)
        def run(**arguments: Any) -> Any:
            with self._attributed():
                return call_tool(self.name, arguments, lambda: func(**arguments),
                                 call_id=self.call_id)

        return run

    @contextmanager
    def _attributed(self) -> Iterator[None]:
        try:
            with context.agent(self.executor, lane=self.lane):
                yield
        except RecordedToolError:
            raise
        except ReplayedToolError as exc:  # a recorded tool exception AG2 must see, as recorded
            raise RecordedToolError(exc.error) from None
        except SymtraceError as exc:
            self.failure = exc
            raise


_in_flight: ContextVar[ToolCall | None] = ContextVar("symtrace_ag2_tool_call", default=None)
_view_lock = threading.Lock()


class FunctionMapView(MutableMapping[str, Any]):
    """An agent's function map that wraps the function of the call in flight (this context)."""

    def __init__(self, inner: dict[str, Any]) -> None:
        self.inner = inner
        self.users = 0

    def get(self, name: str, default: Any = None) -> Any:  # type: ignore[override]
        func = self.inner.get(name, default)
        call = _in_flight.get()
        if call is None or func is None or call.name != name:
            return func
        return call.bind(func)

    def __getitem__(self, name: str) -> Any:
        return self.inner[name]

    def __setitem__(self, name: str, value: Any) -> None:
        self.inner[name] = value

    def __delitem__(self, name: str) -> None:
        del self.inner[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.inner)

    def __len__(self) -> int:
        return len(self.inner)

    def __repr__(self) -> str:
        return f"FunctionMapView({self.inner!r})"


@contextmanager
def _viewed(agent: Any) -> Iterator[None]:
    """Give *agent* the view for the duration of one call (nested/concurrent calls share it)."""
    with _view_lock:
        current = agent.__dict__.get("_function_map")
        if isinstance(current, FunctionMapView):
            view = current
        else:
            view = FunctionMapView(current if current is not None else {})
            agent._function_map = view
        view.users += 1
    try:
        yield
    finally:
        with _view_lock:
            view.users -= 1
            if view.users == 0 and agent.__dict__.get("_function_map") is view:
                agent._function_map = view.inner


@contextmanager
def _tool_call(agent: Any, func_call: dict[str, Any], call_id: str | None) -> Iterator[ToolCall]:
    executor = agent_name(agent)
    index = call_index(agent, call_id)
    lane = lane_of(agent)
    call = ToolCall(
        executor=executor,
        name=str(func_call.get("name", "")),
        call_id=call_id,
        lane=f"{lane}/tool#{index}" if index is not None else f"{lane}/tool",
    )
    token = _in_flight.set(call)
    try:
        with _viewed(agent):
            yield call
    finally:
        _in_flight.reset(token)


def call_index(agent: Any, call_id: str | None) -> int | None:
    """Position of *call_id* among the tool calls of the message the agent is answering."""
    if call_id is None:
        return None
    for messages in getattr(agent, "_oai_messages", {}).values():
        if messages:
            for index, call in enumerate(messages[-1].get("tool_calls") or ()):
                if isinstance(call, dict) and call.get("id") == call_id:
                    return index
    return None


def _call_id(args: tuple[Any, ...], kwargs: dict[str, Any]) -> str | None:
    return kwargs.get("call_id", args[0] if args else None)


def execute_function(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def wrapper(self: Any, func_call: dict[str, Any], *args: Any, **kwargs: Any) -> Any:
        with _tool_call(self, func_call, _call_id(args, kwargs)) as call:
            result = original(self, func_call, *args, **kwargs)
        if call.failure is not None:
            raise call.failure
        return result

    return wrapper


def a_execute_function(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    async def wrapper(self: Any, func_call: dict[str, Any], *args: Any, **kwargs: Any) -> Any:
        with _tool_call(self, func_call, _call_id(args, kwargs)) as call:
            result = await original(self, func_call, *args, **kwargs)
        if call.failure is not None:
            raise call.failure
        return result

    return wrapper
