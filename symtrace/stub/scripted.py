"""Scripted mode: a fixed table of "when the request looks like this, reply that".

A script is plain JSON so tests and shell scripts can write one::

    {"rules": [{"match": {"last_user_contains": "weather", "has_tools": true},
                "reply": {"tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}]}},
               {"match": {"tool_result_present": true}, "reply": {"content": "Sunny. TERMINATE"}}],
     "default": {"content": "I do not know."}}

Scripts are validated when loaded (unknown keys, wrong types) so a typo fails loudly at start
instead of silently never matching. Matching is pure given the request and its call index.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from symtrace.errors import SymtraceError
from symtrace.stub import request as rq
from symtrace.stub.reply import Reply, ToolCall, error_reply

MATCH_KEYS: dict[str, type | tuple[type, ...]] = {
    "last_user_contains": str,
    "any_message_contains": str,
    "has_tools": bool,
    "tool_result_present": bool,
    "model": str,
    "call_index": int,
    "agent": str,
}
REPLY_KEYS = frozenset({"content", "tool_calls", "status", "error", "type", "code"})


class ScriptError(SymtraceError, ValueError):
    """A stub script is missing, not JSON, or not a valid script."""

    exit_code = 2


@dataclass(frozen=True, slots=True)
class Rule:
    match: dict[str, Any]
    reply: Reply

    def matches(self, body: dict[str, Any], call_index: int) -> bool:
        return all(_check(key, want, body, call_index) for key, want in self.match.items())


@dataclass(frozen=True, slots=True)
class Script:
    rules: tuple[Rule, ...] = ()
    default: Reply | None = None
    source: str = field(default="<dict>", compare=False)

    @classmethod
    def from_obj(cls, obj: object, source: str = "<dict>") -> Script:
        """Validate a parsed script; raises ScriptError naming the offending place."""
        if isinstance(obj, Script):
            return obj
        if not isinstance(obj, Mapping):
            raise ScriptError(f"{source}: a script must be a JSON object with 'rules'")
        unknown = set(obj) - {"rules", "default"}
        if unknown:
            raise ScriptError(f"{source}: unknown script keys {sorted(unknown)}")
        raw_rules = obj.get("rules", [])
        if not isinstance(raw_rules, list):
            raise ScriptError(f"{source}: 'rules' must be a list")
        rules = []
        for i, raw in enumerate(raw_rules):
            where = f"{source}: rules[{i}]"
            if not isinstance(raw, Mapping) or "reply" not in raw:
                raise ScriptError(f"{where} must be an object with 'reply' (and optional 'match')")
            if set(raw) - {"match", "reply"}:
                raise ScriptError(f"{where}: unknown keys {sorted(set(raw) - {'match', 'reply'})}")
            rules.append(
                Rule(_parse_match(raw.get("match", {}), where), _parse_reply(raw["reply"], where))
            )
        default = obj.get("default")
        parsed_default = None if default is None else _parse_reply(default, f"{source}: default")
        return cls(tuple(rules), parsed_default, source)

    def reply_for(self, body: dict[str, Any], call_index: int) -> Reply:
        for rule in self.rules:
            if rule.matches(body, call_index):
                return rule.reply
        if self.default is not None:
            return self.default
        return Reply(content=echo_text(body))


def load_script(path: str | Path) -> Script:
    """Read and validate a script file; every failure is a ScriptError with the path in it."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise ScriptError(f"script file not found: {path}") from None
    except OSError as exc:
        raise ScriptError(f"cannot read script file {path}: {exc.strerror or exc}") from None
    try:
        obj = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise ScriptError(f"script file {path} is not valid JSON: {exc}") from None
    return Script.from_obj(obj, source=str(path))


def echo_text(body: dict[str, Any]) -> str:
    last = rq.last_user_text(body).strip()
    if len(last) > 200:
        last = last[:200] + "…"
    return f"stub reply to: {last}" if last else "stub reply"


class ScriptedResponder:
    """Answers each request with the reply of the first matching rule."""

    mode = "scripted"

    def __init__(self, script: Script) -> None:
        self.script = script

    def respond(self, body: dict[str, Any], call_index: int) -> Reply:
        return self.script.reply_for(body, call_index)


def _parse_match(raw: object, where: str) -> dict[str, Any]:
    if not isinstance(raw, Mapping):
        raise ScriptError(f"{where}.match must be an object")
    out = {}
    for key, want in raw.items():
        expected = MATCH_KEYS.get(key)
        if expected is None:
            raise ScriptError(f"{where}.match: unknown key {key!r} (known: {sorted(MATCH_KEYS)})")
        bad_int = expected is int and isinstance(want, bool)
        if not isinstance(want, expected) or bad_int:
            name = expected.__name__ if isinstance(expected, type) else str(expected)
            raise ScriptError(f"{where}.match.{key} must be a {name}, got {want!r}")
        out[key] = want
    return out


def _parse_reply(raw: object, where: str) -> Reply:
    if not isinstance(raw, Mapping):
        raise ScriptError(f"{where}.reply must be an object")
    unknown = set(raw) - REPLY_KEYS
    if unknown:
        raise ScriptError(f"{where}.reply: unknown keys {sorted(unknown)}")
    if "status" in raw or "error" in raw:
        status = raw.get("status", 500)
        if not isinstance(status, int) or isinstance(status, bool) or not 400 <= status <= 599:
            raise ScriptError(f"{where}.reply.status must be an HTTP error status (400-599)")
        message = raw.get("error", f"stub error {status}")
        if not isinstance(message, str):
            raise ScriptError(f"{where}.reply.error must be a string")
        return error_reply(
            status, message, _opt_str(raw, "type", where), _opt_str(raw, "code", where)
        )
    content = raw.get("content")
    if content is not None and not isinstance(content, str):
        raise ScriptError(f"{where}.reply.content must be a string")
    calls = raw.get("tool_calls", [])
    if not isinstance(calls, list):
        raise ScriptError(f"{where}.reply.tool_calls must be a list")
    parsed = tuple(
        _parse_call(call, f"{where}.reply.tool_calls[{i}]") for i, call in enumerate(calls)
    )
    if content is None and not parsed:
        raise ScriptError(f"{where}.reply needs 'content', 'tool_calls' or 'status'/'error'")
    return Reply(content=content, tool_calls=parsed)


def _parse_call(raw: object, where: str) -> ToolCall:
    if not isinstance(raw, Mapping) or not isinstance(raw.get("name"), str) or not raw["name"]:
        raise ScriptError(f"{where} must be an object with a non-empty 'name'")
    if set(raw) - {"name", "arguments"}:
        raise ScriptError(f"{where}: unknown keys {sorted(set(raw) - {'name', 'arguments'})}")
    args = raw.get("arguments", {})
    if isinstance(args, str):
        return ToolCall(raw["name"], args)  # verbatim, so malformed arguments can be scripted
    if not isinstance(args, Mapping):
        raise ScriptError(f"{where}.arguments must be an object or a JSON string")
    return ToolCall(raw["name"], orjson.dumps(dict(args)).decode())


def _opt_str(raw: Mapping[str, Any], key: str, where: str) -> str | None:
    value = raw.get(key)
    if value is not None and not isinstance(value, str):
        raise ScriptError(f"{where}.reply.{key} must be a string")
    return value


def _check(key: str, want: Any, body: dict[str, Any], call_index: int) -> bool:
    if key == "last_user_contains":
        return want in rq.last_user_text(body)
    if key == "any_message_contains":
        return any(want in rq.content_text(m.get("content")) for m in rq.messages(body))
    if key == "has_tools":
        return bool(rq.tools(body)) == want
    if key == "tool_result_present":
        return rq.tool_result_after_last_user(body) == want
    if key == "model":
        return body.get("model") == want
    if key == "call_index":
        return call_index == want
    if key == "agent":
        return want in rq.system_text(body)
    raise AssertionError(key)  # unreachable: keys are validated at load
