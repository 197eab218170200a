"""What a responder decides, before it is put on the wire.

Scripted and stochastic responders both answer a request with a `Reply`; only `sse` turns it
into chat.completion JSON or SSE chunks. Keeping the decision separate from the encoding is
what lets one reply be served streamed or not, and lets tests reason about replies directly.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One function call the assistant makes; ``arguments`` is the JSON text, as on the wire."""

    name: str
    arguments: str


@dataclass(frozen=True, slots=True)
class Reply:
    """An assistant turn (``content`` and/or ``tool_calls``) or, if ``status`` >= 400, an error.

    Ids (``chatcmpl-…``, ``call_…``) are not part of a reply: the encoder invents them fresh for
    every response, as a real provider does.
    """

    content: str | None = None
    tool_calls: tuple[ToolCall, ...] = field(default_factory=tuple)
    status: int = 200
    error: str | None = None
    error_type: str | None = None
    error_code: str | None = None

    @property
    def is_error(self) -> bool:
        return self.status >= 400

    @property
    def finish_reason(self) -> str:
        return "tool_calls" if self.tool_calls else "stop"


def error_reply(
    status: int, message: str, error_type: str | None = None, code: str | None = None
) -> Reply:
    return Reply(status=status, error=message, error_type=error_type, error_code=code)


def default_error_type(status: int) -> str:
    """The ``error.type`` OpenAI uses for a status, when a script does not name one."""
    if status == 401:
        return "authentication_error"
    if status == 403:
        return "permission_error"
    if status == 404:
        return "not_found_error"
    if status == 429:
        return "rate_limit_exceeded"
    if status < 500:
        return "invalid_request_error"
    return "server_error"
