"""The single definition of "the same request".

Two boundary calls are the same call when their canonical forms are byte-identical. The
canonical form of a value is its JSON with sorted keys (orjson, OPT_SORT_KEYS), after the
normalisation rules below have been applied. The rules are data: their ids are written into
every bundle (manifest `config.normalisation`) so a divergence report can say which applied.

Rules are deliberately few. Everything that shapes the model's output (model, messages,
tools, tool_choice, response_format, sampling parameters, stream, stream_options) is kept.
Headers are never part of the key: they carry per-process noise (user-agent, retry counts,
idempotency keys) and secrets. Host and port are dropped because a recorded endpoint on
127.0.0.1:53211 is the same endpoint on 127.0.0.1:40100 in the next process.

Changing anything here changes digests: tests pin golden digests, and FORMAT_VERSION must be
bumped with them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import chain
from typing import Any

import orjson

from symtrace.errors import CanonicalizationError
from symtrace.model.llm_wire import WireFormat, normalise_echoed_ids, wire_format

JSONValue = Any  # None | bool | int | float | str | list[JSONValue] | dict[str, JSONValue]


@dataclass(frozen=True, slots=True)
class Rule:
    id: str
    description: str


RULES: tuple[Rule, ...] = (
    Rule("sort-keys", "object keys are sorted; arrays keep their order"),
    Rule("http-drop-headers", "HTTP headers are not part of a request's identity"),
    Rule("http-drop-origin", "scheme, host and port are dropped; method, path and query stay"),
    Rule(
        "tool-call-ids-to-ordinals",
        "provider-generated tool-call ids echoed back in messages[].tool_calls[].id and "
        "messages[].tool_call_id (Responses: input[].call_id; Anthropic: tool_use.id and "
        "tool_result.tool_use_id) are replaced by their order of first appearance (call#0, …)",
    ),
    Rule("floats-integral", "a float with an integral value equals the integer (1.0 == 1)"),
)
RULE_IDS: tuple[str, ...] = tuple(rule.id for rule in RULES)


def to_json_value(value: object, path: str = "") -> JSONValue:
    """Return *value* as plain JSON data, or raise CanonicalizationError naming the path.

    Tuples become lists; non-string keys and non-finite floats are refused rather than guessed,
    because a guess (repr, str) would make digests depend on memory addresses or locale.
    """
    try:
        return _plain(value)
    except CanonicalizationError:
        return _checked(value, path)  # raises again, naming the full path


def _plain(value: object) -> JSONValue:
    """The common case fast: exact JSON types, no path kept (it costs a string per key).

    Anything else (subclasses, foreign types) goes to `_checked`, which decides; a refusal
    found here is raised again from the top by `to_json_value` with its full path.
    """
    kind = type(value)
    if kind is str or value is None or kind is bool or kind is int:
        return value
    if kind is dict:
        out: dict[str, JSONValue] = {}
        for key, item in value.items():
            if type(key) is not str:
                return _checked(value, "")
            out[key] = _plain(item)
        return out
    if kind is list or kind is tuple:
        return [_plain(item) for item in value]
    if kind is float:
        if not math.isfinite(value):
            raise CanonicalizationError("", value)
        return int(value) if value.is_integer() and abs(value) < 2**53 else value
    return _checked(value, "")


def _checked(value: object, path: str) -> JSONValue:
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise CanonicalizationError(path, value)
        return int(value) if value.is_integer() and abs(value) < 2**53 else value
    if isinstance(value, dict):
        out: dict[str, JSONValue] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise CanonicalizationError(f"{path}/{key!r}", key)
            out[key] = _checked(item, f"{path}/{_escape(key)}")
        return out
    if isinstance(value, list | tuple):
        return [_checked(item, f"{path}/{i}") for i, item in enumerate(value)]
    raise CanonicalizationError(path, value)


def as_json_value(value: object) -> JSONValue:
    """*value* itself when it is already canonical data, else `to_json_value(value)`.

    For data the caller alone holds (what orjson just parsed) or only reads (to serialise
    it): checking is a walk that allocates nothing, where `to_json_value` copies every
    container of a request that is mostly re-sent history. orjson's parser yields exact JSON
    types, so in practice only an integral float (`1.0`) makes the copy."""
    return value if _is_canonical(value) else to_json_value(value)


# Types `to_json_value` returns unchanged (exact types: a subclass is converted or refused).
_LEAVES = frozenset({str, int, bool, type(None)})


def _is_canonical(value: object) -> bool:
    """True when `to_json_value(value)` would equal *value* (recursion, like `_plain`: a
    cyclic value raises RecursionError in both)."""
    kind = type(value)
    if kind in _LEAVES:
        return True
    if kind is dict:
        for key, item in value.items():  # type: ignore[attr-defined]
            if type(key) is not str or (type(item) not in _LEAVES and not _is_canonical(item)):
                return False
        return True
    if kind is list:
        return all(type(item) in _LEAVES or _is_canonical(item) for item in value)  # type: ignore[attr-defined]
    if kind is float:  # non-finite floats are refused, integral ones become ints
        return math.isfinite(value) and not value.is_integer()  # type: ignore[attr-defined]
    return False  # tuples, subclasses, foreign types: converted (or refused) by to_json_value


def canonical_bytes(value: object) -> bytes:
    """Canonical JSON bytes of *value* (sorted keys, no whitespace)."""
    return orjson.dumps(as_json_value(value), option=orjson.OPT_SORT_KEYS)


def pretty_bytes(value: object) -> bytes:
    """Sorted, indented JSON for files people read."""
    return orjson.dumps(as_json_value(value), option=orjson.OPT_SORT_KEYS | orjson.OPT_INDENT_2)


def json_strings(value: object) -> list[str] | None:
    """Every string of *value* (object keys and string values) when *value* is canonical data
    as it is (`as_json_value` would return it uncopied); None when it is not.

    One walk for the two things recording needs of a parsed request: whether it must be
    converted, and the strings redaction searches (`Redactor.scrub(value, strings)`), in no
    particular order. *value* must be a tree, as a parser returns it (like `Redactor.scrub`,
    the walk follows every reference: a cycle would never end)."""
    found = _strings_and_keys(value)
    if found is None:
        return None
    strings, keys = found
    strings.extend(keys)
    return strings


def _strings_and_keys(value: object) -> tuple[list[str], list[str]] | None:
    """`json_strings`' walk: the string values of *value* and its object keys apart."""
    strings: list[str] = []
    keys: list[str] = []  # only a key may not be a str: all checked at once, at the end
    stack = [value]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is str:
            strings.append(item)
        elif kind is dict:
            keys.extend(item)
            stack.extend(item.values())
        elif kind is list:
            if len(item) > _BULK:  # messages, stream chunks: typed in C, not item by item
                kinds = set(map(type, item))
                if kinds == _STR:
                    strings.extend(item)
                    continue
                if kinds == _DICT:
                    keys.extend(chain.from_iterable(item))
                    values = list(chain.from_iterable(map(dict.values, item)))
                    if set(map(type, values)) <= _STR:
                        strings.extend(values)
                    else:
                        stack.extend(values)
                    continue
            stack.extend(item)
        elif kind is float:
            if item.is_integer() or not math.isfinite(item):
                return None
        elif not (item is None or kind is bool or kind is int):
            return None
    if not set(map(type, keys)) <= _STR:  # a non-string key (one C pass, not one per key)
        return None
    return strings, keys


# json_strings types the items of a list longer than this at once (shorter: set() costs more).
_BULK = 4
_STR = frozenset({str})
_DICT = frozenset({dict})


def canonical_http_request(
    method: str, path: str, query: str, body: JSONValue | bytes | None
) -> dict[str, JSONValue]:
    """The canonical identity of an HTTP boundary call (rules http-drop-*, tool-call ids).

    A *body* that is already canonical data is used as is, not copied (see `as_json_value`):
    pass a body nothing else will change (the exchange passes what it just parsed)."""
    if isinstance(body, bytes | bytearray):
        content: JSONValue = {"$bytes": bytes(body).decode("utf-8", "replace")}
    else:
        content = as_json_value(body)
    return normalise_echoed_ids(_envelope(method, path, query, content))


def scanned_http_request(
    method: str, path: str, query: str, body: JSONValue | bytes | None
) -> tuple[dict[str, JSONValue], list[str] | None]:
    """`canonical_http_request`, and every string of it when they are known from one walk of
    a body that was canonical as parsed and whose echoed ids needed no rewriting (None
    otherwise: redaction then walks the request itself)."""
    found = None if isinstance(body, bytes | bytearray) else _strings_and_keys(body)
    if found is None:
        return canonical_http_request(method, path, query, body), None
    strings, keys = found
    request = _envelope(method, path, query, body)
    # Outside Anthropic's format, an echoed id is the value of one of these keys: a body
    # without any (a conversation without tool calls) is left as it is, unsearched.
    if (not _ECHOED_ID_KEYS.isdisjoint(keys)
            or wire_format(method, path) is WireFormat.ANTHROPIC):
        request = normalise_echoed_ids(request)
        if request["body"] is not body:  # ids were rewritten: the body's strings changed
            return request, None
    strings.extend(keys)
    strings.extend(request)  # the envelope's keys and its strings
    strings.extend((request["method"], path, query))
    return request, strings


# The keys whose values `normalise_echoed_ids` rewrites in the chat and Responses formats
# (Anthropic's blocks are found by their type: that format is always passed to it).
_ECHOED_ID_KEYS = frozenset({"tool_calls", "tool_call_id", "call_id"})


def _envelope(method: str, path: str, query: str, content: JSONValue) -> dict[str, JSONValue]:
    """An HTTP boundary call's request before its echoed ids are normalised."""
    return {"method": method.upper(), "path": path, "query": query, "body": content}


def canonical_tool_call(name: str, arguments: object) -> dict[str, JSONValue]:
    """The canonical identity of a tool call: its name and arguments (call ids excluded)."""
    return {"tool": name, "arguments": to_json_value(arguments)}


def _escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")
