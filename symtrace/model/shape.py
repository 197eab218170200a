"""What canonical JSON forgets of a value, kept beside it so a served value is the value.

A bundle stores values as canonical JSON (`canonical.py`): keys sorted, tuples as lists,
`1.0` as `1`, a `str` subclass as a plain `str`. That is right for hashing — two requests are
the same request whatever their key order — but wrong for what replay hands back: a tool's
list of dicts rendered with `str()` would show its keys sorted, and the next request would
differ from the recording. So what canonicalisation loses is recorded as a *shape* next to
the value, and `restore(value, shape)` rebuilds the original structure.

A shape is JSON, and None when there is nothing to restore (then nothing is stored: values
that were canonical already keep their bytes and digests). Otherwise, by the value's kind:

* `"f"`: a float with an integral value (stored as an int); `"-0"`: the float -0.0 (stored as
  `0`, which would come back as +0.0 and print differently);
* `{"c": "module:Qualname"}`: an instance of a subclass of str, int or float (an enum member,
  a framework's text type), rebuilt as `cls(value)` when the class still imports;
* a dict: `{"o": [keys in their original order]}` when that order is not sorted, and
  `{"m": {key: shape}}` for items that have one;
* a list or tuple: `{"t": 1}` for a tuple, and `{"m": {"index": shape}}` for items.
"""

from __future__ import annotations

import math
from typing import Any

from symtrace.errors import UnreplayableEvent
from symtrace.model.canonical import JSONValue
from symtrace.model.qualname import qualified, resolve

INTEGRAL_FLOAT = "f"
NEGATIVE_ZERO = "-0"
_EXACT = frozenset({str, int, bool, type(None)})


def shape_of(value: object) -> JSONValue:
    """The shape `restore` needs to rebuild *value* from its canonical JSON (None: none)."""
    kind = type(value)
    if kind in _EXACT:
        return None
    if kind is float:
        if value == 0 and math.copysign(1.0, value) < 0:  # type: ignore[arg-type]
            return NEGATIVE_ZERO
        return INTEGRAL_FLOAT if value.is_integer() and abs(value) < 2**53 else None  # type: ignore[attr-defined]
    if isinstance(value, dict):  # a subclass (OrderedDict) is served as a dict, in its order
        return _dict_shape(value)
    if isinstance(value, list | tuple):
        members = {str(i): s for i, item in enumerate(value)
                   if (s := shape_of(item)) is not None}
        shape: dict[str, JSONValue] = {"t": 1} if isinstance(value, tuple) else {}
        if members:
            shape["m"] = members
        return shape or None
    if isinstance(value, str | int | float) and not isinstance(value, bool):
        return {"c": qualified(kind)}
    return None  # a type canonicalisation refuses or a codec already encoded: nothing kept


def _dict_shape(value: dict[Any, Any]) -> JSONValue:
    keys = list(value)
    shape: dict[str, JSONValue] = {}
    if keys != sorted(keys, key=str):
        shape["o"] = [str(key) for key in keys]
    members = {str(k): s for k, item in value.items() if (s := shape_of(item)) is not None}
    if members:
        shape["m"] = members
    return shape or None


def restore(value: JSONValue, shape: JSONValue) -> Any:
    """*value* (canonical JSON as a bundle gives it back) rebuilt to the recorded *shape*.

    A shape that does not fit the value (another kind, keys it lacks) restores nothing of
    that part: the value is served as stored rather than guessed at."""
    if shape is None:
        return value
    if shape == INTEGRAL_FLOAT:
        return float(value) if type(value) is int else value
    if shape == NEGATIVE_ZERO:
        return -0.0 if value == 0 and type(value) in (int, float) else value
    if not isinstance(shape, dict):
        return value
    if "c" in shape:
        return _rebuild(value, str(shape["c"]))
    members = shape.get("m") if isinstance(shape.get("m"), dict) else {}
    if isinstance(value, dict):
        order = shape.get("o")
        keys = order if isinstance(order, list) and sorted(order) == sorted(value) else value
        return {key: restore(value[key], members.get(key)) for key in keys}
    if isinstance(value, list):
        items = [restore(item, members.get(str(i))) for i, item in enumerate(value)]
        return tuple(items) if shape.get("t") else items
    return value


def _rebuild(value: JSONValue, path: str) -> Any:
    try:
        cls = resolve(path, what="recorded value type")
    except UnreplayableEvent:
        return value
    try:
        rebuilt = cls(value)
    except Exception:  # noqa: BLE001 - a foreign constructor; the plain value is served
        return value
    return rebuilt if rebuilt == value else value
