"""What an event puts into a run and what a request takes from it: the values data edges are
made of (graph.py links them).

An LLM reply produces its message texts, its tool calls, every line and sentence it adds
(frameworks pass on pieces of a reply: a ReAct `Final Answer:`, a summary quoting a sentence)
and ReAct `Action:` calls written as text; a tool result produces its value. A later request
consumes the same kinds of values from its messages. Values are compared by fingerprint
(whitespace-normalised text digest), memoised by content because a conversation re-sends every
earlier message on every call.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any, NamedTuple

import orjson

from symtrace.model.canonical import canonical_bytes
from symtrace.model.events import Event, EventType
from symtrace.model.llm_wire import (
    WireFormat,
    chat_messages,
    format_of_request,
    reply_messages,
)

MIN_TEXT = 4  # shorter texts ("ok", "") are too common to mean a dependency


# A conversation re-sends every earlier message on every call: the same texts are normalised
# and fingerprinted again and again. Both are pure, so they are memoised by content, bounded
# (entry count, and only texts up to MEMO_MAX_TEXT characters are kept).
MEMO_ENTRIES = 4096
MEMO_MAX_TEXT = 32_768
class MessageValues(NamedTuple):
    """What one message text carries (memoised by content: a conversation re-sends it)."""

    whole: str | None  # the fingerprint of the whole text
    parts: list[str]  # the fingerprints of its parts, as part_fps()
    values: tuple[str, ...]  # both, each once (what the graph looks up)
    part_set: frozenset[str]  # its parts, to tell what a reply echoes


_normalised: dict[str, str] = {}
_text_fingerprints: dict[tuple[str, str], str | None] = {}
_part_fingerprints: dict[str, list[str]] = {}
_message_fingerprints: dict[str, MessageValues] = {}
_MISSING = object()


def normalise(text: str) -> str:
    """*text* with every run of whitespace collapsed to one space, trimmed."""
    found = _normalised.get(text)
    if found is None:
        found = _collapsed(text)
        _remember(_normalised, text, found)
    return found


def _collapsed(text: str) -> str:
    """`" ".join(text.split())`; an ASCII text single-spaced inside is that already once
    trimmed (found by a few character searches, not by splitting it into words and joining
    them again: most texts are so)."""
    flat = text.strip()
    return flat if _single_spaced(flat) else " ".join(text.split())


def _single_spaced(text: str) -> bool:
    """Whether *text* is ASCII and its only whitespace is single spaces (the ASCII characters
    str.split() splits at, searched for one by one: each search is a fast C scan)."""
    return text.isascii() and not (
        "\n" in text or "\t" in text or "\r" in text or "\x0b" in text or "\x0c" in text
        or "\x1c" in text or "\x1d" in text or "\x1e" in text or "\x1f" in text
        or "  " in text)



def fingerprint(kind: str, value: object) -> str | None:
    if value is None:  # an absent value (null content, no call id) links nothing
        return None
    if isinstance(value, str):
        key = (kind, value)
        known = _text_fingerprints.get(key, _MISSING)
        if known is not _MISSING:
            return known  # str or None, as computed below
        text = normalise(value)
        found = None if len(text) < MIN_TEXT else kind + ":" + _digest(text)
        _remember(_text_fingerprints, key, found, value)
        return found
    return kind + ":" + hashlib.sha256(canonical_bytes(value)).hexdigest()[:32]


def _digest(flat: str) -> str:
    """The digest a fingerprint of the normalised text *flat* is made of. The last one is
    kept: a text's fingerprint is asked for just before its parts' (part_fps()), and a text
    of one line and one sentence (most replies) is its own part, so the part's digest is the
    text's."""
    global _last_digest
    last = _last_digest
    if last[0] == flat:
        return last[1]
    digest = hashlib.sha256(flat.encode()).hexdigest()[:32]
    _last_digest = (flat, digest)  # (one tuple: a reader in another thread sees a pair)
    return digest


_last_digest = ("", hashlib.sha256(b"").hexdigest()[:32])


def _remember(memo: dict[Any, Any], key: Any, value: Any, text: str | None = None) -> None:
    if len(text if text is not None else key) > MEMO_MAX_TEXT:
        return
    if len(memo) >= MEMO_ENTRIES:
        memo.clear()  # a new phase of the run: the old texts are rarely re-sent
    memo[key] = value


def produced(event: Event, echoed: frozenset[str] | None = None) -> list[str]:
    """Fingerprints of the values *event* hands to later events (*echoed*: the part
    fingerprints of its request's messages, when the caller has them already)."""
    out: list[str | None] = []
    texts: list[str] = []  # reply texts whose parts are values too
    if event.type is EventType.AGENT_ACTION:
        body = (event.response or {}).get("body") if isinstance(event.response, dict) else None
        for message in reply_messages(body):
            text = text_of(message.get("content"))
            out.append(fingerprint("text", text))
            leaves = _json_leaves(message.get("content"))
            out.extend(fingerprint("text", leaf) for leaf in leaves)
            for call in message.get("tool_calls") or []:
                out.append(fingerprint("id", call.get("id")))
                out.append(call_fp(call.get("function") or {}))
            if text:
                texts.append(text)
                out.extend(call_fp(action) for action in react_actions(text))
            texts.extend(leaves)
    elif event.type is EventType.TOOL_RESULT and isinstance(event.response, dict):
        value = event.response.get("value")
        out.append(fingerprint("text", value if isinstance(value, str) else _json_text(value)))
        if isinstance(value, str):
            texts.append(value)
        error = event.response.get("error")
        if isinstance(error, dict):
            out.append(fingerprint("text", error.get("message")))
    if texts:
        if not event.is_llm:
            echoed = frozenset()
        elif echoed is None:
            echoed = _request_part_set(event.request)
        out.extend(fp for text in texts for fp in part_fps(text) if fp not in echoed)
    return [fp for fp in out if fp]


MIN_PART = 16  # a shorter line or sentence ("Thank you.") is too common to mean a dependency
# a sentence ends at . ! or ? followed by whitespace (split keeping the mark with its sentence:
# a look-behind split, `(?<=[.!?])\s+`, is the same and 2-3x slower: it tries every position)
_SENTENCE_END = re.compile(r"([.!?])\s+")
FINAL_ANSWER = "Final Answer:"
_REACT_ACTION = re.compile(
    r"^\s*Action\s*:\s*(?P<name>[^\n]+?)\s*\n\s*Action\s*Input\s*:\s*(?P<input>.*?)"
    r"\s*(?=\n\s*(?:Observation|Thought|Action)\s*:|\Z)",
    re.MULTILINE | re.DOTALL,
)


def part_fps(text: str) -> list[str]:
    """Fingerprints of the pieces of *text* a framework may pass on alone: what follows a
    ReAct `Final Answer:`, and every line and every sentence (memoised like fingerprint())."""
    known = _part_fingerprints.get(text)
    if known is None:
        known = _part_fps(text)
        _remember(_part_fingerprints, text, known)
    return known


def _part_fps(text: str) -> list[str]:
    pieces = [text.split(FINAL_ANSWER, 1)[1]] if FINAL_ANSWER in text else []
    if _single_spaced(text):  # (usual) ASCII, no line break: one line, asked about once
        lines = [(text, True)] if text else []
    else:
        lines = [(line, _single_spaced(line)) for line in text.splitlines()]
    for line, single_spaced in lines:
        pieces.append(line)
        pieces.extend(_sentences(line, single_spaced))
    out = []
    done: dict[str, str | None] = {}  # a text repeats its sentences (a line is one, too)
    for piece in pieces:
        found = done.get(piece, _MISSING)
        if found is _MISSING:
            flat = normalise(piece)
            found = done[piece] = "part:" + _digest(flat) if len(flat) >= MIN_PART else None
        if found is not None:
            out.append(found)
    return out


def sentences(line: str) -> list[str]:
    """*line* split after each sentence mark followed by whitespace (the whitespace dropped)."""
    return _sentences(line, _single_spaced(line))


def _sentences(line: str, single_spaced: bool) -> list[str]:
    """sentences(), told whether *line* is _single_spaced()."""
    if single_spaced and "!" not in line and "?" not in line:
        # the only sentence ends are ". " (one space: the whole run of whitespace): split
        # at them in one search, not by the pattern (~5x faster; most lines are so)
        cut = line.split(". ")
        last = cut.pop()
        return [*(text + "." for text in cut), last]
    cut = _SENTENCE_END.split(line)  # [text, mark, text, mark, ..., text]
    if len(cut) == 1:
        return cut
    out = [text + mark for text, mark in zip(cut[:-1:2], cut[1::2], strict=True)]
    out.append(cut[-1])
    return out


def react_actions(text: str) -> list[dict[str, Any]]:
    """The `Action:` / `Action Input:` tool calls of a ReAct reply, as function dicts."""
    actions: list[dict[str, Any]] = []
    if "Action" not in text:  # (the pattern's first word: most replies have none)
        return actions
    for match in _REACT_ACTION.finditer(text):
        raw = match.group("input").strip().strip("`").strip()
        actions.append({"name": match.group("name").strip(), "arguments": raw})
    return actions


def _request_parts(request: Any) -> list[str]:
    """Part fingerprints of every message text of a chat request."""
    if not isinstance(request, dict) or not isinstance(request.get("body"), dict):
        return []
    out: list[str] = []
    for message in request["body"].get("messages") or []:
        if isinstance(message, dict):
            text = text_of(message.get("content"))
            if text:
                out.extend(part_fps(text))
    return out


def _request_part_set(request: Any) -> frozenset[str]:
    """The set of _request_parts() (a union of memoised sets: no fingerprint is looked up
    again for a re-sent message)."""
    if not isinstance(request, dict) or not isinstance(request.get("body"), dict):
        return frozenset()
    sets = []
    for message in request["body"].get("messages") or []:
        if isinstance(message, dict):
            text = text_of(message.get("content"))
            if text:
                sets.append(message_values(text).part_set)
    return frozenset().union(*sets)


def message_values(text: str) -> MessageValues:
    """The text fingerprint and the part fingerprints of one message text (one memo lookup
    for all: every call of a conversation asks for every re-sent message)."""
    known = _message_fingerprints.get(text)
    if known is None:
        whole, parts = fingerprint("text", text), part_fps(text)
        # (part_fps() holds no None; the whole text's fingerprint is None when it is short)
        values = tuple(dict.fromkeys((whole, *parts) if whole else parts))
        known = MessageValues(whole, parts, values, frozenset(parts))
        _remember(_message_fingerprints, text, known)
    return known


def consumed(event_type: EventType, request: Any, meta: dict[str, Any]) -> list[str]:
    """Fingerprints of earlier values a request of this type carries, each once, in order:
    message texts and tool calls first, then the parts of the message texts."""
    out: list[str | None] = []
    if event_type is EventType.AGENT_ACTION and isinstance(request, dict):
        # chat requests: the messages the parts are taken from are these very messages
        chat = (format_of_request(request) or WireFormat.CHAT) is WireFormat.CHAT
        parts: list[str] = []
        for message in chat_messages(request):
            text = text_of(message.get("content"))
            if chat and text:
                whole, pieces, _, _ = message_values(text)
                out.append(whole)
                parts.extend(pieces)
            else:
                out.append(fingerprint("text", text))
            for call in message.get("tool_calls") or []:
                out.append(call_fp(call.get("function") or {}))
        out.extend(parts if chat else _request_parts(request))
    elif event_type is EventType.TOOL_CALL:
        out.append(fingerprint("id", meta.get("call_id")))
        if isinstance(request, dict):
            out.append(fingerprint("call", [request.get("tool"), request.get("arguments")]))
    return list(dict.fromkeys(fp for fp in out if fp))


MIN_QUOTED = 16  # a produced text this long, quoted inside a later message, is a dependency


def quoted_texts(event: Event) -> list[str]:
    """Longer texts *event* produced that a later prompt may quote inside a larger message."""
    out = []
    if event.type is EventType.AGENT_ACTION and isinstance(event.response, dict):
        for message in reply_messages(event.response.get("body")):
            content = message.get("content")
            text = text_of(content)
            if text:
                out.append(normalise(text))
            out.extend(normalise(leaf) for leaf in _json_leaves(content))
    elif event.type is EventType.TOOL_RESULT and isinstance(event.response, dict):
        value = event.response.get("value")
        if isinstance(value, str):
            out.append(normalise(value))
        error = event.response.get("error")  # frameworks show it wrapped ("Error: <message>")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            out.append(normalise(error["message"]))
    return [text for text in out if len(text) >= MIN_QUOTED]


def request_text(request: Any) -> str:
    """All message text of a chat request, whitespace-normalised, for quote detection."""
    return " ".join(request_parts(request))  # = the whole text normalised at once


def request_parts(request: Any) -> list[str]:
    """The non-empty whitespace-normalised message texts of a chat request (memoised)."""
    parts = []
    for message in chat_messages(request):
        part = normalise(text_of(message.get("content")) or "")
        if part:
            parts.append(part)
    return parts


def call_fp(function: dict[str, Any]) -> str | None:
    arguments = function.get("arguments")
    if isinstance(arguments, str):
        try:
            arguments = orjson.loads(arguments)
        except orjson.JSONDecodeError:
            pass
    return fingerprint("call", [function.get("name"), arguments])


def text_of(content: Any) -> str | None:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(p.get("text", "") for p in content if isinstance(p, dict))
    return None


MAX_JSON_LEAVES = 64


def _json_leaves(content: Any) -> list[str]:
    """String values inside a JSON object/array reply (a structured output, e.g. a ledger).

    A framework may parse such a reply and hand one field on as a message of its own
    (Magentic-One's progress ledger -> the next speaker's instruction): that is a dependency.
    """
    if not isinstance(content, str) or not content.lstrip().startswith(("{", "[")):
        return []
    try:
        value = orjson.loads(content)
    except orjson.JSONDecodeError:
        return []
    leaves: list[str] = []
    stack = [value]
    while stack and len(leaves) < MAX_JSON_LEAVES:
        item = stack.pop()
        if isinstance(item, str):
            leaves.append(item)
        elif isinstance(item, dict):
            stack.extend(reversed(list(item.values())))
        elif isinstance(item, list):
            stack.extend(reversed(item))
    return leaves


def _json_text(value: Any) -> str | None:
    if value is None:
        return None
    try:
        return canonical_bytes(value).decode()
    except TypeError:
        return None
