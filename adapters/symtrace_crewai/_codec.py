"""Tool results as JSON and back, exact enough that CrewAI renders the same observation.

CrewAI hands a tool's raw return value to `format_output_for_agent` (usually `str(value)`),
to its tool cache and to `detect_tool_failure` (a `ToolFailure` model). Plain JSON would
lose what `str()` shows: `21.0` would come back as `21`, a tuple as a list, a model as a
dict. So values are encoded by type:

* `str`, `int`, `bool`, `None`, lists and string-keyed dicts of them, non-integral floats:
  as themselves;
* integral or non-finite floats, tuples, other dicts: tagged (`{"$crewai": "float", ...}`);
* pydantic models (`ToolFailure` included): class path and `model_dump(mode="json")`,
  rebuilt with `model_validate`;
* anything else: its `str()`, replayed as a `RecordedText` (a `str`) that renders the same.
"""

from __future__ import annotations

import math
from typing import Any

from symtrace.errors import UnreplayableEvent
from symtrace.frameworks.contract import Codec
from symtrace.model.canonical import JSONValue
from symtrace.model.qualname import qualified, resolve

TAG = "$crewai"


class RecordedText(str):
    """A recorded tool value of a type that could not be rebuilt: its text, as CrewAI saw it."""

    type_name: str = ""


def encode(value: Any) -> JSONValue:
    kind = type(value)
    if value is None or kind in (str, int, bool):
        return value
    if kind is float:
        if math.isfinite(value) and not value.is_integer():
            return value
        return {TAG: "float", "repr": repr(value)}
    if kind is list:
        return [encode(item) for item in value]
    if kind is tuple:
        return {TAG: "tuple", "items": [encode(item) for item in value]}
    if kind is dict:
        if all(type(key) is str for key in value) and TAG not in value:
            return {key: encode(item) for key, item in value.items()}
        return {TAG: "dict", "items": [[encode(k), encode(v)] for k, v in value.items()]}
    path = qualified(kind)
    dump = getattr(value, "model_dump", None)
    if callable(dump) and _importable(path):
        return {TAG: "pydantic", "class": path, "value": dump(mode="json"), "text": str(value)}
    return {TAG: "text", "class": path, "text": str(value)}


def decode(data: JSONValue) -> Any:
    if isinstance(data, list):
        return [decode(item) for item in data]
    if not isinstance(data, dict):
        return data
    tag = data.get(TAG)
    if tag is None:
        return {key: decode(item) for key, item in data.items()}
    if tag == "float":
        return float(data["repr"])
    if tag == "tuple":
        return tuple(decode(item) for item in data["items"])
    if tag == "dict":
        return {_hashable(decode(k)): decode(v) for k, v in data["items"]}
    if tag == "pydantic":
        cls = _load_class(data["class"])
        try:
            return cls.model_validate(data["value"])
        except ValueError as exc:  # pydantic's ValidationError is a ValueError
            raise UnreplayableEvent(f"recorded {data['class']} no longer validates: {exc}") from exc
    if tag == "text":
        text = RecordedText(data["text"])
        text.type_name = data.get("class", "")
        return text
    raise UnreplayableEvent(f"unknown CrewAI tool value tag {tag!r} in the bundle")


CODEC = Codec(encode=encode, decode=decode)


def _importable(path: str) -> bool:
    try:
        _load_class(path)
    except UnreplayableEvent:
        return False
    return True


def _load_class(path: str) -> Any:
    return resolve(path, what="recorded tool value")


def _hashable(key: Any) -> Any:
    return tuple(key) if isinstance(key, list) else key
