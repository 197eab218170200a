"""A recorded LLM response seen as an attempt: did it fail the way an SDK retries?

An SDK (or a framework) sends a request again after an HTTP error status, a transport
failure (timeout, refused or reset connection) or a stream cut off before its end. Replay
uses this to recognise retries of a selective replay's anchor (replay/anchor_retries.py);
`symtrace show` to summarise such an event as "HTTP 429, retried" instead of its raw body.
"""

from __future__ import annotations

from symtrace.model.canonical import JSONValue
from symtrace.model.llm_streams import stream_ended
from symtrace.model.llm_wire import WireFormat

# A stream record's key for the transport error that cut the stream off (absent when the
# stream ended, or the program stopped reading it, without one).
CUT = "cut"


def failure_of(response: JSONValue, fmt: WireFormat | None) -> str | None:
    """Why the recorded LLM *response* is a failed attempt (an SDK would retry it), or None."""
    if not isinstance(response, dict):
        return None
    error = response.get("error")
    if "status" not in response and isinstance(error, dict):  # a transport failure
        return f"{error.get('type') or 'error'}: {error.get('message') or ''}".rstrip(": ")
    status = response.get("status")
    if isinstance(status, int) and status >= 400:
        return f"HTTP {status}"
    if response.get("stream"):
        cut = response.get(CUT)
        if isinstance(cut, dict):
            return f"the stream was cut off ({cut.get('type')}: {cut.get('message')})"
        chunks = response.get("chunks")
        text = "".join(c for c in chunks if isinstance(c, str)) if isinstance(chunks, list) else ""
        if not stream_ended(fmt, text):
            return "the stream ended before its provider's last event"
    return None


def wire_format_of(meta: dict[str, JSONValue]) -> WireFormat | None:
    """The wire format an LLM event's meta names (None: not an HTTP LLM call, or unknown)."""
    try:
        return WireFormat(meta.get("wire_format"))
    except ValueError:
        return None
