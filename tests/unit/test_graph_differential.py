"""The graph's caches derive exactly what the plain definition does (model/graph.py docstring).

GraphBuilder keeps each chat message's producers resolved until one of its values gets a new
producer, and finds quoted texts with a per-message index (model/quotes.py). `PlainGraph` below
derives parents the plain way: every consumed value looked up on every call, every quoted text
searched for in the whole request text. Random runs with repeated values on several lanes,
causes, tool calls, texts quoted inside (or across) messages, and replies completing out of
order must give identical parents and sources; a cache left stale would make them differ.
"""

from __future__ import annotations

import hashlib
import random
import re
from collections.abc import Sequence
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from symtrace.model import dataflow
from symtrace.model import graph as graph_module
from symtrace.model.canonical import canonical_http_request
from symtrace.model.dataflow import consumed, produced, quoted_texts, request_text
from symtrace.model.events import Edge, EdgeKind, Event, EventType
from symtrace.model.graph import (
    MAX_PRODUCERS,
    GraphBuilder,
    cause_edges,
    context_of,
    in_context,
)
from symtrace.model.quotes import QuoteIndex

from ._support import chat_request, chat_response


class PlainGraph:
    """Parents by the definition: no memo, no index, a scan of the request per quoted text."""

    def __init__(self, max_quoted: int) -> None:
        self.max_quoted = max_quoted
        self.producers: dict[str, list[str]] = {}
        self.lane_of: dict[str, str] = {}
        self.quoted: list[tuple[str, str]] = []  # (text, the event that produced it)
        self.lane_last: dict[str, str] = {}
        self.caused: dict[str, set[str]] = {}
        self.parents: dict[str, frozenset[str]] = {}
        self.order: dict[str, int] = {}

    def in_context_of(self, lane: str, causes: Sequence[str], sources: list[str]) -> list[str]:
        exact, trees = context_of(lane, causes, self.caused)
        return [s for s in sources if in_context(self.lane_of.get(s, ""), exact, trees)]

    def sources(self, kind: EventType, lane: str, request: Any, meta: dict[str, Any],
                causes: Sequence[str]) -> dict[str, str]:
        out: dict[str, str] = {}
        fps = consumed(kind, request, meta)
        if kind is EventType.TOOL_CALL and fps and fps[0] in self.producers:
            fps = fps[:1]
        for fp in fps:
            producers = self.producers.get(fp, [])
            related = self.in_context_of(lane, causes, producers) if len(producers) > 1 else []
            if producers:
                out.setdefault((related or producers)[-1], "value")
        if kind is EventType.AGENT_ACTION:
            whole = request_text(request)
            window = self.quoted[max(0, len(self.quoted) - self.max_quoted):]
            by_text: dict[str, list[str]] = {}
            for text, source in window:
                if text in whole:
                    by_text.setdefault(text, []).append(source)
            for text in sorted(by_text, key=lambda t: (-len(t), t)):
                if text not in whole:
                    continue  # only inside a longer quoted text: its content
                whole = whole.replace(text, "\x00")
                copies = by_text[text]
                related = self.in_context_of(lane, causes, copies) if len(copies) > 1 else []
                for source in (related[-1:] if causes else related) if related else copies:
                    out.setdefault(source, "quote")
        return out

    def parents_for(self, event_id: str, kind: EventType, lane: str, request: Any,
                    meta: dict[str, Any], causes: Sequence[str]) -> tuple[Edge, ...]:
        for cause in causes:
            if cause != lane:
                self.caused.setdefault(cause, set()).add(lane)
        newest_first = sorted(set(self.sources(kind, lane, request, meta, causes)) - {event_id},
                              key=lambda c: -self.order.get(c, -1))
        edges: dict[str, EdgeKind] = {}
        for source in newest_first:
            if all(source not in self.parents.get(kept, ()) for kept in edges):
                edges[source] = EdgeKind.DATA
        previous = self.lane_last.get(lane)
        if previous and previous not in edges and all(
                previous not in self.parents.get(kept, ()) for kept in edges):
            edges[previous] = EdgeKind.CONTROL
        edges.update(cause_edges(event_id, lane, causes, self.lane_last, self.parents, edges))
        self.lane_last[lane] = event_id
        self.parents[event_id] = frozenset(edges)
        self.order.setdefault(event_id, len(self.order))
        return tuple(Edge(source, kind) for source, kind in sorted(edges.items()))

    def completed(self, event: Event) -> None:
        self.order.setdefault(event.id, len(self.order))
        self.parents.setdefault(event.id, frozenset(event.parent_ids))
        self.lane_of[event.id] = event.lane
        for fp in produced(event):
            kept = [p for p in self.producers.get(fp, []) if p != event.id]
            self.producers[fp] = [*kept, event.id][-MAX_PRODUCERS:]
        self.quoted.extend((text, event.id) for text in quoted_texts(event))


# -- random runs: few distinct sentences, so values repeat, nest and cross message bounds ----
SENTENCES = [
    "The museum opens at ten.", "Porto has a tram line!", "Check the quarterly figures?",
    "The museum opens at ten. Porto has a tram line!", "ok", "Final Answer: ten o'clock.",
    '{"plan": "Porto has a tram line!", "next": "writer"}',
    "Porto\x00 has a tram line!",  # the mark own_quotes() writes, inside a produced text
]
LANES = ["a", "b", "a/tool#0", "c", "c/sub"]
CALL_IDS = ["call_1", "call_2", "call_3"]

text = st.lists(st.sampled_from(SENTENCES), min_size=1, max_size=3).flatmap(
    lambda parts: st.sampled_from([" ", "\n", "  "]).map(lambda sep: sep.join(parts)))
# a message: new text, an earlier produced text whole, or inside a longer message, or split
# in two messages at a space (a quote covering the space between them)
message = st.one_of(
    text.map(lambda t: ("text", t)),
    st.integers(0, 99).map(lambda k: ("echo", k)),
    st.tuples(st.integers(0, 99), text).map(lambda kt: ("inside", kt)),
    st.tuples(st.integers(0, 99), st.integers(0, 99)).map(lambda kc: ("split", kc)),
    st.sampled_from(CALL_IDS).map(lambda c: ("calls", c)),  # an assistant tool-call message
)
step = st.fixed_dictionaries({
    "kind": st.sampled_from(["llm", "llm", "llm", "tool"]),
    "lane": st.sampled_from(LANES),
    "causes": st.lists(st.sampled_from(LANES), max_size=2),
    "messages": st.lists(message, max_size=5),
    "reply": st.one_of(st.none(), text, st.integers(0, 99)),
    "call": st.one_of(st.none(), st.sampled_from(CALL_IDS)),
    "deferred": st.booleans(),  # completes after the next call started (concurrent calls)
})


def tool_calls(call_id: str) -> list[dict[str, Any]]:
    return [{"id": call_id, "type": "function",
             "function": {"name": "lookup", "arguments": f'{{"q": "{call_id}"}}'}}]


def request_of(items: list[tuple[str, Any]], produced_texts: list[str]) -> dict[str, Any]:
    messages: list[dict[str, Any]] = []
    for item in messages_of(items, produced_texts):
        if isinstance(item, tuple):
            messages.append({"role": "assistant", "content": None,
                             "tool_calls": tool_calls(item[1])})
        else:
            messages.append({"role": "user", "content": item})
    return canonical_http_request("POST", "/v1/chat/completions", "",
                                  {"model": "m", "messages": messages})


def messages_of(items: list[tuple[str, Any]], produced_texts: list[str]) -> list[Any]:
    out: list[Any] = []
    for kind, value in items:
        if kind == "calls":
            out.append((kind, value))
        elif kind == "text":
            out.append(value)
        elif produced_texts and kind == "echo":
            out.append(produced_texts[value % len(produced_texts)])
        elif produced_texts and kind == "inside":
            out.append(f"Earlier: {produced_texts[value[0] % len(produced_texts)]} {value[1]}")
        elif produced_texts and kind == "split":
            words = produced_texts[value[0] % len(produced_texts)].split(" ")
            cut = value[1] % len(words)
            out.extend(m for m in (" ".join(words[:cut]), " ".join(words[cut:])) if m)
    return out


def reply_of(spec: dict[str, Any], produced_texts: list[str]) -> dict[str, Any]:
    reply = spec["reply"]
    if isinstance(reply, int):
        reply = produced_texts[reply % len(produced_texts)] if produced_texts else None
    return chat_response(reply, tool_calls(spec["call"]) if spec["call"] else None)


def drive(steps: list[dict[str, Any]], max_quoted: int) -> None:
    """Run both derivations side by side over *steps*, asserting equal answers throughout."""
    graph, plain = GraphBuilder(), PlainGraph(max_quoted)
    produced_texts: list[str] = []
    pending: list[Event] = []
    for n, spec in enumerate(steps):
        lane, causes = spec["lane"], tuple(spec["causes"])
        if spec["kind"] == "tool":
            kind, request = EventType.TOOL_CALL, {"tool": "lookup",
                                                  "arguments": {"q": spec["call"]}}
            meta = {"tool": "lookup", "call_id": spec["call"]} if spec["call"] else {}
        else:
            kind, meta = EventType.AGENT_ACTION, {}
            request = request_of(spec["messages"], produced_texts)
        assert graph.sources(kind, lane, request, meta, causes) == plain.sources(
            kind, lane, request, meta, causes)
        ident = f"e{n:03d}"
        edges = graph.parents_for(ident, kind, lane, request, meta, causes)
        assert edges == plain.parents_for(ident, kind, lane, request, meta, causes), n
        events = [Event(id=ident, position=n, type=kind, lane=lane, parents=edges,
                        request=request, meta=meta)]
        if kind is EventType.AGENT_ACTION:
            events[0] = Event(id=ident, position=n, type=kind, lane=lane, parents=edges,
                              request=request, response=reply_of(spec, produced_texts))
        else:
            value = spec["reply"] if isinstance(spec["reply"], str) else "Porto has a tram line!"
            events.append(Event(id=f"r{n:03d}", position=n, type=EventType.TOOL_RESULT,
                                lane=lane, parents=(Edge(ident, EdgeKind.CONTROL),),
                                request=request, response={"value": value}))
        ready, pending = (pending, events) if spec["deferred"] else ([*pending, *events], [])
        for event in ready:
            graph.completed(event)
            plain.completed(event)
            produced_texts.extend(quoted_texts(event))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(step, min_size=1, max_size=25))
def test_cached_derivation_equals_the_plain_one(steps):
    drive(steps, max_quoted=256)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(step, min_size=5, max_size=25))
def test_cached_derivation_equals_the_plain_one_with_a_short_quote_window(steps):
    saved = graph_module.MAX_QUOTED_PRODUCERS
    graph_module.MAX_QUOTED_PRODUCERS = 3  # old texts leave the window (`lo` moves)
    try:
        drive(steps, max_quoted=3)
    finally:
        graph_module.MAX_QUOTED_PRODUCERS = saved


def test_a_resent_message_follows_a_new_producer_of_its_value():
    """A message resolved once is resolved again when one of its values gets a producer."""
    graph = GraphBuilder()
    request = chat_request("The museum opens at ten.")
    assert graph.parents_for("e0", EventType.AGENT_ACTION, "a", request, {}) == ()
    for n, lane in enumerate(["b", "b"], start=1):
        graph.completed(Event(id=f"e{n}", position=n, type=EventType.AGENT_ACTION, lane=lane,
                              request=chat_request("q"),
                              response=chat_response("The museum opens at ten.")))
        edges = graph.parents_for(f"x{n}", EventType.AGENT_ACTION, "a", request, {})
        assert Edge(f"e{n}", EdgeKind.DATA) in edges  # the latest producer, not a cached one


_PLAIN_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def _sha(kind: str, flat: str) -> str:
    return kind + ":" + hashlib.sha256(flat.encode()).hexdigest()[:32]


@given(st.one_of(
    st.lists(st.sampled_from([*SENTENCES, "a. b", "x?! y", "\n", " . ", "Final Answer:"]),
             max_size=6).map("".join),
    st.text(alphabet="ab .!?\t\u00a0\n\u2028", max_size=40)))
def test_part_fingerprints_equal_the_plain_definition(text):
    assert dataflow.sentences(text) == _PLAIN_SENTENCE_END.split(text)
    pieces = [text.split("Final Answer:", 1)[1]] if "Final Answer:" in text else []
    for line in text.splitlines():
        pieces += [line, *_PLAIN_SENTENCE_END.split(line)]
    flat = [" ".join(piece.split()) for piece in pieces]
    expected = [_sha("part", f) for f in flat if len(f) >= dataflow.MIN_PART]
    assert dataflow._part_fps(text) == expected
    whole = " ".join(text.split())  # (asked just before its parts, as message_values() does)
    assert dataflow.fingerprint("text", text) == (
        _sha("text", whole) if len(whole) >= dataflow.MIN_TEXT else None)
    assert dataflow._part_fps(text) == expected
    request = chat_request(text, "The museum opens at ten.")
    assert dataflow._request_part_set(request) == set(dataflow._request_parts(request))


def test_a_quoted_text_overlapping_a_longer_ones_occurrence_is_its_content():
    """Found by the random runs above: the request's messages are "The museum opens at ten." and
    an earlier reply "The museum opens at ten. Check the quarterly figures?". Another reply,
    "The museum opens at ten. The museum opens at ten.", occurs across the two messages but
    overlaps the longer reply's occurrence without being inside it as a text: it is that
    reply's content, not a quote of its own (a shortcut that unnested only texts inside
    other texts drew a quote edge to it)."""
    def llm(messages: list[tuple[str, Any]], reply: str | None) -> dict[str, Any]:
        return {"kind": "llm", "lane": "a", "causes": [], "messages": messages,
                "reply": reply, "call": None, "deferred": False}

    museum = SENTENCES[0]
    steps = [
        llm([], None), llm([], None),
        llm([], f"{museum} Check the quarterly figures?"),
        llm([("text", museum)], f"{museum} {museum}"),
        llm([("text", museum), ("echo", 0)], None),
    ]
    drive(steps, max_quoted=256)
    drive(steps, max_quoted=3)


# -- unnesting: texts apart from the others are kept without asking the request -------------
# few short words (and the mark _unnested() writes): texts nest, overlap inside a message and
# across the space between two, and have equal lengths
QUOTE_WORD = st.sampled_from(["a", "ab", "b", "ba", "aba", "c", "a\x00"])
QUOTE_TEXT = st.lists(QUOTE_WORD, min_size=1, max_size=5).map(" ".join)


def _parts_of(pieces: list[str]) -> list[str]:
    return [part for part in (" ".join(piece.split()) for piece in pieces) if part]


@settings(max_examples=400, deadline=None)
@given(st.lists(QUOTE_TEXT, min_size=1, max_size=12), st.lists(st.tuples(
    st.lists(QUOTE_TEXT, min_size=1, max_size=6), st.integers(0, 6), st.integers(0, 40)),
    min_size=1, max_size=4))
def test_own_quotes_equal_unnesting_all_found_texts(produced_texts, asks):
    """own_quotes() (texts apart kept without a search) = _unnested() of every text found,
    the plain definition, on parts built from the texts themselves, cut anywhere."""
    index = QuoteIndex()
    for text in produced_texts:
        index.add(text)
    for pieces, lo, cut in asks:
        joined = " ".join(pieces)
        parts = _parts_of([joined[:cut], joined[cut:], *pieces[1:]] if cut % 3 else pieces)
        if not parts:
            continue
        found, near = index.quoted_apart(parts, lo)
        texts = {index.texts[i] for i in found}
        plain = set(graph_module._unnested(sorted(texts, key=lambda t: (-len(t), t)),
                                           " ".join(parts)))
        assert graph_module.own_quotes(index.texts, found, near, parts) == plain
        assert near <= found


def test_own_quotes_equal_unnesting_on_seeded_random_requests():
    """As above, with longer requests: texts are cut from the request's own running text (so
    they overlap each other and cover the space between messages), some added twice."""
    rng = random.Random(20)
    words = ["ab", "a", "b", "ba", "abab", "c", "ca"]
    for _ in range(300):
        running = " ".join(rng.choice(words) for _ in range(rng.randint(4, 40)))
        index = QuoteIndex()
        for _ in range(rng.randint(1, 14)):
            start = rng.randrange(len(running))
            piece = " ".join(running[start:start + rng.randint(1, 25)].split())
            index.add(piece or "a")
            if rng.random() < 0.2:
                index.add(index.texts[rng.randrange(len(index))])  # a text produced again
        cuts = sorted(rng.sample(range(1, len(running)), min(len(running) - 1, rng.randint(0, 8))))
        parts = _parts_of([running[i:j] for i, j in zip([0, *cuts], [*cuts, len(running)],
                                                          strict=True)])
        lo = rng.choice([0, 0, 1, len(index) // 2])
        found, near = index.quoted_apart(parts, lo)
        texts = {index.texts[i] for i in found}
        plain = set(graph_module._unnested(sorted(texts, key=lambda t: (-len(t), t)),
                                           " ".join(parts)))
        assert graph_module.own_quotes(index.texts, found, near, parts) == plain


def test_a_text_holding_the_unnesting_mark_is_asked_with_all_the_others():
    """_unnested() writes "\\x00" where it takes a text out: a text holding that character
    may occur again across a mark. Here "\\x00 zz" occurs only inside the longer "yy \\x00 zz
    yy", yet once that one and "qq qq qq" (apart from both) are taken out, the marks read
    "\\x00 zz": the plain definition keeps it, so own_quotes() must ask with all texts."""
    index = QuoteIndex()
    for text in ("yy \x00 zz yy", "qq qq qq", "\x00 zz"):
        index.add(text)
    parts = ["qq qq qq zz", "ww yy \x00 zz yy"]
    found, near = index.quoted_apart(parts)
    assert found == {0, 1, 2}
    assert 1 not in near  # "qq qq qq" is apart
    assert graph_module.own_quotes(index.texts, found, near, parts) == set(index.texts)


@given(st.lists(st.sampled_from(
    ["a", "b", ".", " ", "  ", "\t", "\n", "\x0b", "\x0c", "\r", "\x1c", "\x1d", "\x1e", "\x1f",
     "\x85", "\u00a0", "\u2028", "\u3000", "\x00", "é"]), max_size=30).map("".join))
def test_normalise_equals_splitting_and_joining(text):
    """normalise() skips splitting an ASCII text already single-spaced inside: the same."""
    dataflow._normalised.clear()
    assert dataflow.normalise(text) == " ".join(text.split())
    assert dataflow.normalise(text) == " ".join(text.split())  # memoised


def test_normalise_equals_splitting_and_joining_for_every_character():
    """Every character up to U+3000 (all whitespace str.split() knows is below it), alone
    between two words, at either end, and doubled."""
    for code in range(0x3001):
        for text in (f"a{chr(code)}b", f"{chr(code)}a b", f"a b{chr(code)}",
                     f"a{chr(code) * 2}b"):
            dataflow._normalised.clear()
            assert dataflow.normalise(text) == " ".join(text.split()), hex(code)


def test_sentences_equal_the_plain_split_on_seeded_random_lines():
    """sentences() splits a single-spaced ASCII line without "!" or "?" at ". " itself: the
    same as the plain pattern, for lines with and without those, spaced any way."""
    rng = random.Random(21)
    alphabet = ["a", "b", ".", " ", ".", " ", "!", "?", "\t", "\x0b", "\x1f", "\x85", "..", ". "]
    for _ in range(20_000):
        line = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 14)))
        assert dataflow.sentences(line) == _PLAIN_SENTENCE_END.split(line), repr(line)
