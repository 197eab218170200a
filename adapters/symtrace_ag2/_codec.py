"""AG2 values that cross the bundle: as JSON on the way in, as the objects AG2 expects back.

Tool results use the core's JSON codec as they are (AG2 serialises a registered function's
return value to a string before the model sees it). A reply AG2 keeps in its response cache
is a pydantic completion object (openai's `ChatCompletion`, with AG2's `cost` extra): it is
stored as its class path and `model_dump(mode="json")`, and rebuilt with `model_validate`.
"""

from __future__ import annotations

from typing import Any

from symtrace.errors import CanonicalizationError, UnreplayableEvent
from symtrace.frameworks.contract import Codec
from symtrace.model.canonical import JSONValue, to_json_value
from symtrace.model.qualname import qualified, resolve


def encode_cached(value: Any) -> JSONValue:
    """A cache answer: None for a miss, else the pydantic model AG2 stored."""
    if value is None:
        return None
    dump = getattr(value, "model_dump", None)
    if not callable(dump):
        raise CanonicalizationError("/cached", value)
    return {
        "class": qualified(type(value)),
        "data": to_json_value(dump(mode="json"), "/cached"),
    }


def decode_cached(data: JSONValue) -> Any:
    if data is None:
        return None
    if not isinstance(data, dict) or not isinstance(data.get("class"), str):
        raise UnreplayableEvent(f"recorded cache answer is not a stored model: {data!r:.80}")
    cls = resolve(data["class"], what="cached reply")
    if not (isinstance(cls, type) and callable(getattr(cls, "model_validate", None))):
        raise UnreplayableEvent(f"cached value class {data['class']} is not a pydantic model")
    return cls.model_validate(data.get("data"))


CACHED_REPLY = Codec(encode_cached, decode_cached)
