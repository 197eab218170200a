"""Reading the text and JSON inside messages, for the diagnostic view and the importers: a
message's text, an action written as JSON in it, the URLs a value names, JSON that arrives as
text, and one way to render any value as text."""

from __future__ import annotations

import json
import re
from typing import Any

from symtrace.model.canonical import JSONValue, canonical_bytes

URL_KEYS = frozenset({"url", "uri", "href", "link", "start_url", "page", "address"})
ACTION_KEYS = ("action", "tool", "tool_name", "function")
_URL = re.compile(r"\b(?:https?|view-source):[^\s\"'<>)\]]+")


def content_text(content: object) -> str:
    """Text of a chat message `content`: a string or the text parts of a list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(part.get("text", "")) if isinstance(part, dict) else str(part) for part in content
        )
    return ""


def find_action(text: str) -> dict[str, Any] | None:
    """The first JSON object in *text* that names an action (`{"action": "browse", …}`)."""
    decoder = json.JSONDecoder()
    start = text.find("{")
    attempts = 0
    while start >= 0 and attempts < 20:
        attempts += 1
        try:
            value, _ = decoder.raw_decode(text, start)
        except ValueError:
            value = None
        if is_action(value):
            return value
        start = text.find("{", start + 1)
    return None


def is_action(value: object) -> bool:
    return isinstance(value, dict) and any(isinstance(value.get(k), str) for k in ACTION_KEYS)


def urls_in(value: JSONValue, key: str | None = None) -> list[str]:
    if isinstance(value, str):
        if key is not None and key.lower() in URL_KEYS and value.strip():
            return [value.strip()]
        return _URL.findall(value)
    if isinstance(value, dict):
        return [url for k, v in value.items() for url in urls_in(v, str(k))]
    if isinstance(value, list):
        return [url for item in value for url in urls_in(item, key)]
    return []


def normalize_url(url: str) -> str:
    url = url.strip().split("#", 1)[0]
    scheme, sep, rest = url.partition("://")
    if sep:
        host, slash, path = rest.partition("/")
        url = f"{scheme.lower()}://{host.lower()}{slash}{path}"
    return url.rstrip("/")


def normalize_value(value: JSONValue) -> JSONValue:
    if isinstance(value, str):
        text = " ".join(value.split())
        return normalize_url(text).lower() if _URL.fullmatch(text) else text.lower()
    if isinstance(value, dict):
        return {str(k): normalize_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [normalize_value(v) for v in value]
    return value


def parse_json(value: object) -> JSONValue:
    """A JSON string parsed, or the value itself (tool arguments are often JSON text)."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def render(value: JSONValue) -> str:
    """A value as text: strings as they are, everything else as sorted compact JSON."""
    if isinstance(value, str):
        return value
    try:
        return canonical_bytes(value).decode()
    except TypeError:
        return repr(value)


def is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
