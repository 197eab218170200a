"""AG2 1.x tool outcomes as JSON and back.

A tool's return value reaches the model as the `ToolResult` AG2 makes of it: text parts
(`TextInput`), data parts (`DataInput`, anything else the function returned, serialised for
the wire later), `final` (the result ends the turn) and metadata. That `ToolResult` is what is
recorded, and rebuilt on replay:

    {"parts": [{"text": "..."} | {"data": <JSON>}
               | {"model": {"class": "pkg.mod:Cls", "data": <model_dump>}}
               | {"dataclass": {"class": "pkg.mod:Cls", "data": <init fields>}}],
     "final": false, "metadata": {...}}

A pydantic model in a data part is kept as its class and `model_dump(mode="json")` and rebuilt
with `model_validate`; a dataclass (the Network's `Handoff` / `Finish` routing results) as its
class and init fields. Binary parts (images, audio, files) and other objects have no faithful
JSON form: recording stops with `CanonicalizationError` naming the tool (fail closed).

A failure is recorded by the core as the exception; `detail` adds the exact text AG2 showed
the model (the formatted traceback), because a replay raises the exception without the
original traceback.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import Any

from symtrace.errors import CanonicalizationError, UnreplayableEvent
from symtrace.frameworks.contract import Codec, failure_detail
from symtrace.model.canonical import JSONValue, to_json_value
from symtrace.model.qualname import qualified, resolve


def encode_result(result: Any) -> JSONValue:
    from ag2.events import DataInput, TextInput

    parts: list[JSONValue] = []
    for index, part in enumerate(result.parts):
        where = f"/parts/{index}"
        if isinstance(part, TextInput):
            encoded: dict[str, JSONValue] = {"text": part.content}
        elif isinstance(part, DataInput):
            encoded = _encode_data(part.data, where)
        else:
            raise CanonicalizationError(where, part)
        if part.metadata:
            encoded["metadata"] = to_json_value(part.metadata, f"{where}/metadata")
        parts.append(encoded)
    return {"parts": parts, "final": bool(result.final),
            "metadata": to_json_value(result.metadata, "/metadata")}


def _encode_data(data: Any, where: str) -> dict[str, JSONValue]:
    if isinstance(data, type):
        raise CanonicalizationError(where, data)
    dump = getattr(data, "model_dump", None)
    if callable(dump):
        return {"model": {"class": qualified(type(data)),
                          "data": to_json_value(dump(mode="json"), f"{where}/data")}}
    if dataclasses.is_dataclass(data):  # e.g. ag2.network.Handoff / Finish
        fields = {f.name: getattr(data, f.name) for f in dataclasses.fields(data) if f.init}
        return {"dataclass": {"class": qualified(type(data)),
                              "data": to_json_value(fields, f"{where}/data")}}
    return {"data": to_json_value(data, f"{where}/data")}


def decode_result(value: JSONValue) -> Any:
    from ag2.events import DataInput, TextInput, ToolResult

    if not isinstance(value, dict) or not isinstance(value.get("parts"), list):
        raise UnreplayableEvent(f"recorded AG2 tool result has no parts: {value!r:.80}")
    parts = []
    for part in value["parts"]:
        if not isinstance(part, dict):
            raise UnreplayableEvent(f"recorded AG2 tool result part is not an object: {part!r}")
        metadata = part.get("metadata") or {}
        if "text" in part:
            parts.append(TextInput(part["text"], metadata=metadata))
        elif "model" in part:
            parts.append(DataInput(_decode_model(part["model"]), metadata=metadata))
        elif "dataclass" in part:
            parts.append(DataInput(_decode_dataclass(part["dataclass"]), metadata=metadata))
        else:
            parts.append(DataInput(part.get("data"), metadata=metadata))
    return ToolResult(parts=parts, final=bool(value.get("final")),
                      metadata=dict(value.get("metadata") or {}))


def _decode_model(model: Any) -> Any:
    cls = resolve(str(model.get("class")), what="tool result model") if isinstance(
        model, dict) else None
    if not (isinstance(cls, type) and callable(getattr(cls, "model_validate", None))):
        raise UnreplayableEvent(f"recorded tool result is not a pydantic model: {model!r:.80}")
    return cls.model_validate(model.get("data"))


def _decode_dataclass(recorded: Any) -> Any:
    cls = resolve(str(recorded.get("class")), what="tool result dataclass") if isinstance(
        recorded, dict) else None
    if not (isinstance(cls, type) and dataclasses.is_dataclass(cls)):
        raise UnreplayableEvent(f"recorded tool result is not a dataclass: {recorded!r:.80}")
    return cls(**dict(recorded.get("data") or {}))


@dataclass(slots=True)
class ToolOutcome:
    """One tool call's outcome on its way through the boundary, both directions."""

    call: Any  # the ToolCallEvent
    shown: Any = None  # the ToolErrorEvent AG2 made while recording
    codec: Codec = field(init=False)

    def __post_init__(self) -> None:
        self.codec = Codec(self._encode, self._decode, describe_error=self._describe)

    async def run(self, invocation: Awaitable[Any]) -> Any:
        """Record: AG2's own tool call. A ToolErrorEvent becomes the exception it reports."""
        from ag2.events import ToolErrorEvent

        event = await invocation
        if isinstance(event, ToolErrorEvent):
            self.shown = event
            raise event.error
        return event

    def _encode(self, event: Any) -> JSONValue:
        return encode_result(event.result)

    def _decode(self, value: JSONValue) -> Any:
        from ag2.events import ToolResultEvent

        return ToolResultEvent.from_call(self.call, result=decode_result(value))

    def _describe(self, exc: BaseException) -> JSONValue:
        if self.shown is not None and self.shown.error is exc:
            return _text(self.shown.result)
        return None

    def failed(self, exc: Exception) -> Any:
        """The ToolErrorEvent for a tool failure: AG2's own while recording; on replay one
        carrying the recorded exception and the recorded text."""
        from ag2.events import ToolErrorEvent, ToolResult

        if self.shown is not None and self.shown.error is exc:
            return self.shown
        detail = failure_detail(exc)
        if not isinstance(detail, str):
            return ToolErrorEvent.from_call(self.call, error=exc)
        return ToolErrorEvent(parent_id=self.call.id, name=self.call.name, error=exc,
                              result=ToolResult(detail))

    def placeholder(self, exc: Exception) -> Any:
        """Stands in for a call a symtrace error stopped; the error ends the turn first."""
        from ag2.events import ToolErrorEvent

        return ToolErrorEvent.from_call(self.call, error=exc)


def tool_codec(call: Any) -> ToolOutcome:
    return ToolOutcome(call)


def _text(result: Any) -> str | None:
    from ag2.events import TextInput

    texts = [part.content for part in result.parts if isinstance(part, TextInput)]
    return texts[0] if len(texts) == 1 and len(result.parts) == 1 else None
