"""AgentChat tool results as JSON, and back, so replay hands the framework what it saw.

A tool's return value reaches the model only through `tool.return_value_as_string(value)`
(the workbench turns it into a `FunctionExecutionResult`). A codec is right when the decoded
value renders to the same string, and, where the type allows, is the same value:

* plain JSON data (tuples, integral floats and key order included: the tool boundary keeps
  their shape, `symtrace/model/shape.py`) is recorded as it is. Most tools return a string:
  recorded raw, it is also what the core fingerprints to draw the data edge tool_result ->
  the model call that reads it;
* anything else is recorded in an envelope marked `"$agentchat"`: a pydantic model as
  `model_dump(mode="json")` (rebuilt with `model_validate`), a dataclass such as `CodeResult`
  as its fields (rebuilt with its constructor), and any other value as the string the
  framework would have made of it, served back as `ReplayedText` (a `str` that keeps the
  original type's name).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from symtrace.errors import CanonicalizationError, UnreplayableEvent
from symtrace.frameworks.contract import Codec
from symtrace.model.canonical import JSONValue, to_json_value
from symtrace.model.qualname import qualified, resolve


class ReplayedText(str):
    """A recorded tool value that is not JSON, served as the text the framework made of it."""

    original_type: str = ""

    def __new__(cls, text: str, original_type: str = "") -> ReplayedText:
        value = super().__new__(cls, text)
        value.original_type = original_type
        return value


def _import(path: str) -> Any:
    return resolve(path, what="recorded tool value")


def _exact_json(value: Any) -> Any:
    """*value* itself when it is data a bundle gives back unchanged: JSON, with the shape the
    tool boundary records beside it (key order, tuples, integral floats, str subclasses)."""
    try:
        to_json_value(value)
    except CanonicalizationError:
        return None
    return value


MARK = "$agentchat"


def _envelope(kind: str, value: Any, payload: JSONValue) -> dict[str, JSONValue]:
    return {MARK: kind, "type": qualified(type(value)), "value": payload}


def encode_value(value: Any, as_text: Any) -> JSONValue:
    from pydantic import BaseModel

    if isinstance(value, BaseModel):
        return _envelope("pydantic", value, to_json_value(value.model_dump(mode="json")))
    exact = _exact_json(value)
    if value is None or (exact is not None and not (isinstance(exact, dict) and MARK in exact)):
        return exact
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = _exact_json({f.name: getattr(value, f.name) for f in dataclasses.fields(value)})
        if fields is not None:
            return _envelope("dataclass", value, fields)
    return _envelope("text", value, str(as_text(value)))


def decode_value(data: JSONValue, known: Sequence[Any] = ()) -> Any:
    """The value *data* encodes; *known* are classes to rebuild without importing them (a
    tool's declared return type may be defined where no import reaches, e.g. in a function)."""
    if not (isinstance(data, dict) and MARK in data):
        return data
    kind = data[MARK]
    if kind in ("pydantic", "dataclass"):
        path = data["type"]
        cls = next((k for k in known if isinstance(k, type) and qualified(k) == path), None)
        cls = cls or _import(path)
        if kind == "pydantic":
            return cls.model_validate(data["value"])
        return cls(**data["value"])
    if kind == "text":
        return ReplayedText(data["value"], data.get("type", ""))
    raise UnreplayableEvent(f"unknown recorded tool value kind {kind!r}")


def _declared(tool: Any) -> tuple[Any, ...]:
    return (tool.return_type(), tool.args_type())


def tool_codec(tool: Any) -> Codec:
    """The codec for one tool's return values (its own `return_value_as_string` for text)."""
    return Codec(
        lambda value: encode_value(value, tool.return_value_as_string),
        lambda data: decode_value(data, _declared(tool)),
    )


def stream_codec(tool: Any) -> Codec:
    """The codec for the list of items a stream tool yielded."""
    return Codec(
        lambda items: [encode_value(item, tool.return_value_as_string) for item in items],
        lambda data: [decode_value(item, _declared(tool)) for item in data or []],
    )


VALUE_CODEC = Codec(lambda value: encode_value(value, str), decode_value)
