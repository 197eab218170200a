"""Tool boundaries: a tool call and its observation, recorded as data and replayed without
running the tool body.

Framework adapters call `call_tool` / `acall_tool` from their tool-execution seam; plain
programs decorate their functions with `@symtrace.tool`. Outside a session both simply run
the tool. A tool's exception is an observation too: it is recorded (`type`, `module`,
`message`, `args`) and re-raised as the same exception type on replay. When a framework shows
the model more of a failure than the exception carries (AG2 1.x sends the formatted
traceback, which names files on the recording machine), the codec's `describe_error` keeps
that text beside the recorded exception as `detail`, and `failure_detail(exc)` hands it back
on the rebuilt exception.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from symtrace.boundaries.console import CONSOLE_KEY, Chunks, capturing, write_back
from symtrace.errors import CanonicalizationError, ReplayError, UnreplayableEvent
from symtrace.model.canonical import JSONValue, canonical_tool_call, to_json_value
from symtrace.model.qualname import resolve
from symtrace.model.shape import restore, shape_of
from symtrace.session.context import within_tool
from symtrace.session.core import TOOL, BoundaryCall, Session, Ticket, active

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Codec:
    """How a tool's return value becomes JSON and back. The default is JSON values as-is.

    What `encode` returns is canonicalised by the boundary, which records its shape beside
    it (`model/shape.py`: key order, tuples, integral floats, str subclasses); `decode` gets
    that structure back, so an encoder should return plain data as it is, not canonicalised.

    `describe_error`, if given, returns what else the framework made of a failure (JSON, or
    None for nothing); it is recorded as the failure's `detail`."""

    encode: Callable[[Any], Any] = lambda value: value
    decode: Callable[[Any], Any] = lambda value: value
    describe_error: Callable[[BaseException], JSONValue] | None = None


JSON_CODEC = Codec()


def call_tool(
    name: str,
    arguments: dict[str, Any],
    invoke: Callable[[], T],
    *,
    call_id: str | None = None,
    codec: Codec = JSON_CODEC,
    meta: dict[str, Any] | None = None,
) -> T:
    """Run *invoke* as the tool boundary *name*(**arguments*) under the active session."""
    started = _begin(name, arguments, call_id, meta)
    if started is None:
        return invoke()
    session, ticket = started
    if not ticket.live:
        return served_outcome(ticket.served, codec)
    with capturing() as console:
        try:
            with within_tool(ticket.event_id):
                result = invoke()
        except Exception as exc:
            session.finish(ticket, _with_console(error_outcome(exc, codec), console))
            raise
    return _record_result(session, ticket, codec, result, name, console)


async def acall_tool(
    name: str,
    arguments: dict[str, Any],
    invoke: Callable[[], Awaitable[T]],
    *,
    call_id: str | None = None,
    codec: Codec = JSON_CODEC,
    meta: dict[str, Any] | None = None,
) -> T:
    """Async twin of call_tool (same steps; the begin and the invocation are awaited)."""
    started = await _abegin(name, arguments, call_id, meta)
    if started is None:
        return await invoke()
    session, ticket = started
    if not ticket.live:
        return served_outcome(ticket.served, codec)
    with capturing() as console:
        try:
            with within_tool(ticket.event_id):
                result = await invoke()
        except Exception as exc:
            # the outcome reaches the program in its turn
            await session.afinish(ticket, _with_console(error_outcome(exc, codec), console))
            raise
    await session.ahand_off()
    return _record_result(session, ticket, codec, result, name, console)


def _prepare(
    name: str, arguments: dict[str, Any], call_id: str | None, meta: dict[str, Any] | None
) -> tuple[Session, BoundaryCall] | None:
    session = active()
    if session is None:
        return None
    return session, _make_call(name, arguments, call_id, meta, session.scrub)


def _begin(
    name: str, arguments: dict[str, Any], call_id: str | None, meta: dict[str, Any] | None
) -> tuple[Session, Ticket] | None:
    prepared = _prepare(name, arguments, call_id, meta)
    return None if prepared is None else (prepared[0], prepared[0].begin(prepared[1]))


async def _abegin(
    name: str, arguments: dict[str, Any], call_id: str | None, meta: dict[str, Any] | None
) -> tuple[Session, Ticket] | None:
    """_begin for async callers: a replay may hold the call without blocking the loop."""
    prepared = _prepare(name, arguments, call_id, meta)
    return None if prepared is None else (prepared[0], await prepared[0].abegin(prepared[1]))


def _record_result(session: Session, ticket: Ticket, codec: Codec, result: T, name: str,
                   console: Chunks) -> T:
    value, shape = _encode(codec, result, name)
    outcome: dict[str, JSONValue] = {"ok": True, "value": value}
    if shape is not None:  # only when canonical JSON loses something: digests stay otherwise
        outcome[SHAPE_KEY] = shape
    session.finish(ticket, _with_console(outcome, console))
    return result


def _with_console(outcome: dict[str, JSONValue], console: Chunks) -> dict[str, JSONValue]:
    """The outcome with what the tool body wrote to the console (only when it wrote: the
    outcomes, and digests, of silent tools are unchanged)."""
    if console:
        outcome[CONSOLE_KEY] = [list(chunk) for chunk in console]
    return outcome


def served_outcome(outcome: JSONValue, codec: Codec = JSON_CODEC) -> Any:
    """A replayed tool call: its body's recorded console output written back, then its
    recorded value returned (or its recorded exception raised)."""
    write_back(outcome)
    return decode_outcome(outcome, codec)


def tool(fn: Callable[..., Any] | None = None, *, name: str | None = None) -> Any:
    """Decorator: make a plain function (sync or async) a recorded/replayed tool boundary."""

    def wrap(func: Callable[..., Any]) -> Callable[..., Any]:
        tool_name = name or func.__name__
        signature = inspect.signature(func)

        def arguments(args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            return dict(bound.arguments)

        if inspect.iscoroutinefunction(func):

            @functools.wraps(func)
            async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
                return await acall_tool(
                    tool_name, arguments(args, kwargs), lambda: func(*args, **kwargs)
                )

            return async_wrapper

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            return call_tool(tool_name, arguments(args, kwargs), lambda: func(*args, **kwargs))

        return wrapper

    return wrap(fn) if fn is not None else wrap


# -- outcomes ----------------------------------------------------------------------------------
def error_outcome(exc: BaseException, codec: Codec = JSON_CODEC) -> dict[str, JSONValue]:
    try:
        args = to_json_value(list(exc.args))
    except CanonicalizationError:
        args = [str(exc)]
    error: dict[str, JSONValue] = {
        "type": type(exc).__qualname__,
        "module": type(exc).__module__,
        "message": str(exc),
        "args": args,
    }
    if codec.describe_error is not None:
        detail = to_json_value(codec.describe_error(exc), "/error/detail")
        if detail is not None:
            error["detail"] = detail
    return {"ok": False, "error": error}


def decode_outcome(outcome: JSONValue, codec: Codec = JSON_CODEC) -> Any:
    """Return a recorded value, or raise the recorded exception as its own type."""
    if not isinstance(outcome, dict):
        raise UnreplayableEvent(f"recorded tool outcome is not an object: {outcome!r}")
    if outcome.get("ok"):
        return codec.decode(restore(outcome.get("value"), outcome.get(SHAPE_KEY)))
    error = outcome.get("error") or {}
    exc = rebuild_exception(error)
    if isinstance(error, dict) and "detail" in error:
        try:
            exc.__dict__[_DETAIL] = error["detail"]
        except AttributeError:  # an exception class without __dict__: no detail to hand back
            pass
    raise exc


_DETAIL = "__symtrace_failure_detail__"


def failure_detail(exc: BaseException) -> JSONValue:
    """The `detail` recorded with a replayed tool failure (None when there is none)."""
    return getattr(exc, "__dict__", {}).get(_DETAIL)


def rebuild_exception(error: dict[str, Any]) -> BaseException:
    """The recorded exception, as an instance of its original class when importable."""
    try:
        cls: Any = resolve(f"{error.get('module')}:{error.get('type')}", what="recorded exception")
    except UnreplayableEvent:
        cls = None
    if isinstance(cls, type) and issubclass(cls, BaseException):
        for attempt in (lambda: cls(*error.get("args", [])), lambda: cls(error.get("message"))):
            try:
                exc = attempt()
            except Exception:  # noqa: BLE001, S112 - foreign constructors vary; try the next form
                continue
            if str(exc) == error.get("message") or not error.get("message"):
                return exc
    return ReplayedToolError(error)


class ReplayedToolError(ReplayError):
    """A recorded tool exception whose original class could not be rebuilt."""

    def __init__(self, error: dict[str, Any]) -> None:
        self.error = error
        super().__init__(f"{error.get('module')}.{error.get('type')}: {error.get('message')}")


def _make_call(
    name: str,
    arguments: dict[str, Any],
    call_id: str | None,
    meta: dict[str, Any] | None,
    scrub: Callable[[JSONValue], JSONValue],
) -> BoundaryCall:
    request = scrub(canonical_tool_call(name, arguments))
    full_meta = {"tool": name, **(meta or {})}
    if call_id is not None:
        full_meta["call_id"] = call_id
    return BoundaryCall.make(TOOL, request, full_meta)


SHAPE_KEY = "shape"  # the outcome field holding what canonical JSON forgets of the value


def _encode(codec: Codec, value: Any, name: str) -> tuple[JSONValue, JSONValue]:
    """The value as canonical JSON, and its shape (None when it has none)."""
    try:
        encoded = codec.encode(value)
        return to_json_value(encoded), shape_of(encoded)
    except CanonicalizationError as exc:
        raise CanonicalizationError(f"result of tool {name}{exc.path}", value) from exc
