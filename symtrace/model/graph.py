"""The event-dependency graph G: how edges are derived and how it is queried.

Edges are derived from content, never guessed from timing:

* **data** edge u → v when v's request contains a value u produced: an assistant message text
  or tool call an LLM response returned, a tool result, or a tool-call id. Values are matched
  by fingerprint (whitespace-normalised text digest) to the *latest* producer that completed
  before v started, so an edge always points backwards in O.
* **parts** count as values too: frameworks pass on pieces of a reply, not only the whole
  text (CrewAI hands the next task only what follows a ReAct `Final Answer:`; AG2 strips
  `TERMINATE` from a `last_msg` summary before carrying it over; a summary or a ledger quotes
  some sentences). Every line and sentence of a reply (at least MIN_PART characters) that its
  own request did not already contain is a produced part; every line and sentence of a later
  request's messages is a consumed one. A ReAct `Action:` / `Action Input:` in a reply's text
  is a produced tool call, like a structured `tool_calls` entry.
* **one value, several producers**: two concurrent chats (or two teams the program started
  at once) may ask the same tool the same thing and get the same text back. Such a value
  links to the latest producer inside the call's **causal context** (context_of()): its own
  lane and the lanes under it, the lanes it is under, its cause lanes (below) and the lanes
  under them, and the lanes whose turns its own lane caused (an agent it delegated to, and
  theirs in turn); only when no producer is inside does it link to the latest one. Inside,
  a producer in a turn independent of the call's (a concurrent sibling turn of the same
  agent: two `ask()`s under `gather` asking one tool the same thing, replies sharing a
  sentence; events.turns_independent()) is passed over for one in the call's own turn or a
  turn it is ordered after (_related()). A tool
  call links to the reply that asked for it by the provider's call id alone; a quoted text
  found only inside a longer quoted text is that text's content ("... for day" inside "...
  for day plan"), not a quote of its own. A selective replay decides by the same lookup
  whether a call carries a value of the live part of the run (sources(); replay/live.py), so
  the edges that say what a live event supersedes and the values that make a call live agree.
* **control** edge u → v when u is the previous event on v's lane (lane order, skipping the
  calls of turns whose order with v's the recording leaves open: meta `turn`,
  events.turns_independent(), the rule replay's matcher binds turns by), or when u is
  the latest call of a lane that caused v's turn (attribution `dispatched_by`): a group chat
  manager selecting a speaker, or an agent whose message or chat result triggered the turn.
  Content cannot carry every cause: a tool-call message has no content (a framework quotes it
  as "None"), a `last_msg` summary of it is empty, and a short reply quoted inside a longer
  message is below MIN_QUOTED; yet the turn happens, and reads conversation state, because of
  it. The adapter knows who sent what; the edge is derived here (cause_edges()).

Because the derivation is a pure function of the records and their attribution (lane, and
the cause lanes the adapter names, which are not stored: the parents are), a replayed run
rebuilds the same parents for the same events, and a child bundle's live events get parents
the same way.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence
from itertools import chain
from typing import Any

from symtrace.model.dataflow import (
    MEMO_MAX_TEXT,
    call_fp,
    consumed,
    fingerprint,
    message_values,
    normalise,
    produced,
    quoted_texts,
    request_parts,
    text_of,
)
from symtrace.model.events import TURN, Edge, EdgeKind, Event, EventType, turns_independent
from symtrace.model.llm_wire import WireFormat, chat_messages, format_of_request
from symtrace.model.quotes import QuoteIndex

LANE_HISTORY = 64  # a lane's latest calls searched for a turn's predecessor (bounded)
MAX_PRODUCERS = 4  # recent producers kept per value (to tell identical values apart)
MAX_QUOTED_PRODUCERS = 256  # bound the substring scan to the most recent producers
MAX_MESSAGES = 4096  # message texts whose producers are kept resolved (cleared whole beyond)


class _Message:
    """A chat message text and the producers of the values it carries, kept resolved while
    none of those values gets a new producer (a conversation re-sends each message on every
    call: one lookup instead of a fingerprint lookup and a resolution per value)."""

    __slots__ = ("part", "part_set", "several", "single", "values")

    def __init__(self, text: str) -> None:
        _, _, self.values, self.part_set = message_values(text)
        self.part = normalise(text)  # what quote detection reads (request_parts())
        self.single: frozenset[str] | None = None  # None: to resolve (again)
        self.several: tuple[tuple[str, ...], ...] = ()  # producer lists to resolve per call


class GraphBuilder:
    """Derives parents incrementally while a run is recorded (thread-safe)."""

    def __init__(self) -> None:
        self._producers: dict[str, tuple[str, ...]] = {}  # value -> recent producers, oldest first
        self._lane_of: dict[str, str] = {}
        self._turn_of: dict[str, Any] = {}  # event -> its meta TURN (None: no turn)
        self._quoted = QuoteIndex()  # longer produced texts, oldest first
        self._quoted_by: list[str] = []  # the event that produced each of them
        self._lane_last: dict[str, str] = {}
        # lane -> its latest events and their turns (the predecessor of a turn's first call)
        self._lane_turns: dict[str, list[tuple[str, Any]]] = {}
        self._caused: dict[str, set[str]] = {}  # lane -> the lanes whose turns it caused
        self._parents: dict[str, frozenset[str]] = {}
        self._order: dict[str, int] = {}
        self._messages: dict[str, _Message] = {}  # chat message text -> its resolved values
        self._holding: dict[str, list[_Message]] = {}  # value -> the messages carrying it
        # event -> (its request, the parts of its messages): what its reply echoes is known
        # from the messages parents_for() just read (dataflow._request_part_set())
        self._echoes: dict[str, tuple[Any, frozenset[str]]] = {}
        self._lock = threading.Lock()

    def parents_for(
        self, event_id: str, event_type: EventType, lane: str, request: Any, meta: dict[str, Any],
        dispatched_by: Sequence[str] = (),
    ) -> tuple[Edge, ...]:
        """Parents of a new event, from producers completed so far; advances the lane.

        A turn caused by other lanes' calls (attribution `dispatched_by`: a manager's speaker
        selection, the senders of the messages that triggered it) also gets a control edge from
        each of those lanes' latest event (cause_edges()).

        A chat request quotes every earlier reply, so naive data edges grow quadratically.
        Edges already implied by a newer parent (the candidate is that parent's own parent)
        are dropped: reachability, and so descendants and anchors, stay the same.
        """
        with self._lock:
            self._note_turn(lane, dispatched_by)
            candidates = set(self._sources(event_type, lane, request, meta, dispatched_by,
                                           event_id))
            candidates.discard(event_id)
            edges: dict[str, EdgeKind] = {}
            implied: set[str] = set()  # the parents of the kept sources
            order, parents = self._order, self._parents
            try:  # (every source is a registered event: _register() gave it its order)
                newest_first = sorted(candidates, key=order.__getitem__, reverse=True)
            except KeyError:  # (defensive: one without an order goes last, as if -1)
                newest_first = sorted(candidates, key=lambda c: -order.get(c, -1))
            for source in newest_first:
                if source not in implied:
                    edges[source] = EdgeKind.DATA
                    implied.update(parents.get(source, ()))
            previous = self._previous_in_order(lane, meta.get(TURN))
            if previous is not None and previous not in edges and previous not in implied:
                edges[previous] = EdgeKind.CONTROL
            if dispatched_by:  # (a turn the program started names none)
                edges.update(cause_edges(event_id, lane, dispatched_by, self._lane_last,
                                         self._parents, edges))
            self._ordered(lane, event_id, meta.get(TURN))
            self._parents[event_id] = frozenset(edges)
            self._order.setdefault(event_id, len(self._order))
            return tuple(Edge(source, kind) for source, kind in sorted(edges.items()))

    def _previous_in_order(self, lane: str, turn: Any) -> str | None:
        """The event a new call on *lane* in *turn* (meta TURN, or None) follows in lane order:
        the lane's latest call, skipping those of turns whose order the recording leaves open
        (events.turns_independent(): a sibling open when it opened, or opened by another task
        or thread: which of them came first is timing, not a cause)."""
        if not isinstance(turn, dict):
            return self._lane_last.get(lane)
        for event_id, other in reversed(self._lane_turns.get(lane, ())):
            if not isinstance(other, dict) or not turns_independent(turn, other):
                return event_id
        return None

    def _ordered(self, lane: str, event_id: str, turn: Any) -> None:
        self._lane_last[lane] = event_id
        history = self._lane_turns.setdefault(lane, [])
        history.append((event_id, turn))
        if len(history) > LANE_HISTORY:
            del history[: len(history) - LANE_HISTORY]

    def note_turn(self, lane: str, causes: Sequence[str]) -> None:
        """A call on *lane* whose turn the latest calls of *causes* caused: each cause lane
        caused *lane*, so *lane* is in their causal context. Recording learns it from every
        call (parents_for()); a replay also tells it about the calls it serves, which are
        not derived again (replay/live.py)."""
        with self._lock:
            self._note_turn(lane, causes)

    def _note_turn(self, lane: str, causes: Sequence[str]) -> None:
        for cause in causes:
            if cause != lane:
                self._caused.setdefault(cause, set()).add(lane)

    def sources(self, event_type: EventType, lane: str, request: Any, meta: dict[str, Any],
                causes: Sequence[str] = ()) -> dict[str, str]:
        """The earlier events whose values a call carries (the sources of its data edges),
        each with how it carries them: "value" (a value it produced, whole or a part) or
        "quote" (a longer text it produced, quoted inside a message)."""
        with self._lock:
            return self._sources(event_type, lane, request, meta, causes)

    def _sources(self, event_type: EventType, lane: str, request: Any, meta: dict[str, Any],
                 causes: Sequence[str], event_id: str | None = None) -> dict[str, str]:
        turn = meta.get(TURN)
        if event_type is EventType.AGENT_ACTION and _is_chat(request):
            values, parts, part_sets = self._chat_values(request, lane, causes, turn)
            out = dict.fromkeys(values, "value")
            if event_id is not None:
                self._keep_echo(event_id, request, part_sets)
        else:
            out = {}
            fps = consumed(event_type, request, meta)
            if event_type is EventType.TOOL_CALL and fps and fps[0] in self._producers:
                fps = fps[:1]  # the provider's call id names the asking reply exactly
            for fp in fps:
                source = self._producer(fp, lane, causes, turn)
                if source is not None:
                    out.setdefault(source, "value")
            parts = request_parts(request)
        if event_type is EventType.AGENT_ACTION and len(self._quoted):
            # = `text in request_text(request)` for each of the latest producers, without
            # rescanning the re-sent history on every call (symtrace.model.quotes)
            lo = max(0, len(self._quoted) - MAX_QUOTED_PRODUCERS)
            scan = self._quoted.scan(parts, lo)
            inside, maybe = scan[0], scan[1]
            quoted_by = self._quoted_by
            # the quotes add only producers of these texts: when each is a source already
            # (a conversation's earlier replies, re-sent whole: their values found them),
            # they change nothing, and which of them are quoted in their own right need not
            # be settled
            if any(quoted_by[i] not in out for i in chain(inside, maybe)):
                found, near = self._quoted.settle(parts, scan, lo)
                if found:
                    for source in self._quote_sources(found, near, parts, lane, causes,
                                                      turn):
                        out.setdefault(source, "quote")
        return out

    def _chat_values(self, request: dict[str, Any], lane: str, causes: Sequence[str],
                     turn: Any = None) -> tuple[set[str], list[str], list[frozenset[str]]]:
        """The producers of the values a chat request carries (= _producer() of each of
        consumed()), its message parts for quote detection (= request_parts()), and the part
        fingerprints of each message.

        Each message text's producers are kept resolved (_Message) until one of its values
        gets a new producer (_register()); a value produced several times is resolved per
        call, in the call's causal context.
        """
        singles: list[frozenset[str]] = []  # (one union of them all: cheaper than an update each)
        several: list[tuple[str, ...]] = []
        parts: list[str] = []
        part_sets: list[frozenset[str]] = []
        calls: list[str | None] = []
        messages = self._messages
        for message in chat_messages(request):
            content = message.get("content")
            text = content if type(content) is str else text_of(content)  # (inlined: per message)
            if text:
                known = messages.get(text) or self._learn(text)
                if known.single is None:
                    self._resolve(known)
                singles.append(known.single)  # type: ignore[arg-type]  # resolved above
                if known.several:
                    several.extend(known.several)
                if known.part:
                    parts.append(known.part)
                part_sets.append(known.part_set)
            tool_calls = message.get("tool_calls")
            if tool_calls:
                calls.extend(call_fp(call.get("function") or {}) for call in tool_calls)
        for fp in calls:
            producers = self._producers.get(fp) if fp else None
            if producers:
                several.append(producers)
        values: set[str] = set().union(*singles)
        if several:
            values.update(self._latest_related(several, lane, causes, turn))
        return values, parts, part_sets

    def _keep_echo(self, event_id: str, request: Any, part_sets: list[frozenset[str]]) -> None:
        if len(self._echoes) >= MAX_MESSAGES:
            self._echoes.clear()  # calls that never completed (abandoned)
        self._echoes[event_id] = (request, frozenset().union(*part_sets))

    def _learn(self, text: str) -> _Message:
        message = _Message(text)
        if len(text) > MEMO_MAX_TEXT:
            return message  # resolved for this call only
        if len(self._messages) >= MAX_MESSAGES:
            self._messages.clear()  # a new phase of the run: the old texts are rarely re-sent
            self._holding.clear()
        self._messages[text] = message
        for fp in message.values:
            self._holding.setdefault(fp, []).append(message)
        return message

    def _resolve(self, message: _Message) -> None:
        single: set[str] = set()
        several: list[tuple[str, ...]] = []
        for fp in message.values:
            producers = self._producers.get(fp)
            if producers:
                if len(producers) == 1:
                    single.add(producers[0])
                else:
                    several.append(producers)
        message.single, message.several = frozenset(single), tuple(several)

    def _latest_related(self, several: list[tuple[str, ...]], lane: str,
                        causes: Sequence[str], turn: Any = None) -> set[str]:
        """_producer() of values with these producers, the causal context computed once."""
        out = set()
        context: _Context | None = None
        for producers in several:
            if len(producers) > 1 and context is None:
                context = context_of(lane, causes, self._caused)
            related = self._related(producers, lane, causes, context, turn)
            out.add(related[-1] if related else producers[-1])
        return out

    def _producer(self, fp: str, lane: str, causes: Sequence[str], turn: Any = None
                  ) -> str | None:
        """Which earlier event produced the value *fp* a new call on *lane* carries.

        The latest producer; when the value was produced more than once (two concurrent
        chats or teams asking the same tool the same thing), the latest one inside the
        call's causal context (context_of()), so an identical value from an unrelated actor
        draws no edge. A quoted text produced more than once is resolved the same way.
        """
        producers = self._producers.get(fp)
        if not producers:
            return None
        related = self._related(producers, lane, causes, None, turn)
        return related[-1] if related else producers[-1]

    def _quote_sources(self, found: set[int], near: set[int], parts: list[str], lane: str,
                       causes: Sequence[str], turn: Any = None) -> set[str]:
        """The events whose quoted texts (indices *found*; *near*: those whose occurrences
        may overlap another's, QuoteIndex.quoted_apart()) a request contains.

        Longest first: a text found only inside a longer quoted text ("... for day" inside
        "... for day plan") is that text's content, not a quote of its own. A text produced by
        several events is resolved inside the call's causal context (_related()).
        """
        quoted, quoted_by = self._quoted.texts, self._quoted_by
        if not near and self._quoted.marked.isdisjoint(found) and len(
                {quoted[index] for index in found}) == len(found):
            # (usual) no two texts share a zone and none holds the mark own_quotes() writes:
            # each is quoted in its own right (own_quotes()), and each by its one producer
            return {quoted_by[index] for index in found}
        by_text: dict[str, list[str]] = {}  # each text's producers, oldest first
        for index in sorted(found):
            by_text.setdefault(quoted[index], []).append(quoted_by[index])
        texts = own_quotes(quoted, found, near, parts) if len(by_text) > 1 else by_text
        out: set[str] = set()
        for text in texts:
            sources = by_text[text]
            if len(sources) < 2:  # no choice to make (_related() is [])
                out.update(sources)
                continue
            related = self._related(sources, lane, causes, None, turn)
            if not related:
                out.update(sources)
            else:
                # a call that names its causes reads the latest copy inside them; one that
                # names none (a CrewAI manager reading a coworker's answer, which is both
                # the coworker's reply and the delegation's tool result) may have read any
                # copy inside its own context: all of them, never another team's
                out.update(related[-1:] if causes else related)
        return out

    def _related(self, sources: Sequence[str], lane: str, causes: Sequence[str],
                 context: _Context | None = None, turn: Any = None) -> list[str]:
        """The *sources* (several producers of one value) within a call's causal context
        (*context*: context_of() of the call, when the caller has it), or [] when there is
        no choice to make (one source).

        Of those, the ones in the call's own turn and the turns it is ordered after (*turn*:
        its meta TURN): a concurrent sibling turn of the same agent (two `ask()`s under
        `gather` asking one tool the same thing, replies sharing a sentence) is no cause of
        it, though on the same lanes (events.turns_independent()). Only when every producer
        inside the context is in such a turn (the two turns share state: one model context)
        are they all kept."""
        if len(sources) < 2:
            return []
        exact, trees = context or context_of(lane, causes, self._caused)
        related = [source for source in sources
                   if in_context(self._lane_of.get(source, ""), exact, trees)]
        if isinstance(turn, dict) and len(related) > 1:
            turn_of = self._turn_of
            own = [source for source in related
                   if not isinstance(other := turn_of.get(source), dict)
                   or not turns_independent(turn, other)]
            if own:
                return own
        return related

    def completed(self, event: Event) -> None:
        with self._lock:
            self._register(event)

    def follow(self, event: Event) -> None:
        """Account for an event materialised from a recording (replayed, not derived)."""
        with self._lock:
            self._ordered(event.lane, event.id, event.meta.get(TURN))
            self._register(event)

    def _register(self, event: Event) -> None:
        self._order.setdefault(event.id, len(self._order))
        if event.id not in self._parents:  # (a call's event: parents_for() kept them)
            self._parents[event.id] = frozenset(event.parent_ids)
        self._lane_of[event.id] = event.lane
        turn = event.meta.get(TURN)
        if turn is None and event.type is EventType.TOOL_RESULT and event.parents:
            turn = self._turn_of.get(event.parents[0].source)  # its tool call's turn
        self._turn_of[event.id] = turn
        echo = self._echoes.pop(event.id, None)
        # the request read when the call started (the same object), or computed again
        producers, holding, ident = self._producers, self._holding, event.id
        for fp in produced(event, echo[1] if echo and echo[0] is event.request else None):
            known = producers.get(fp, ())
            if ident in known:  # (a value it produced twice: it moves to the end)
                known = tuple(p for p in known if p != ident)
            producers[fp] = (*known[-(MAX_PRODUCERS - 1):], ident)
            messages = holding.get(fp)
            if messages:
                for message in messages:
                    message.single = None  # its producers changed: resolve again when re-sent
        for text in quoted_texts(event):
            self._quoted.add(text)
            self._quoted_by.append(event.id)


_Context = tuple[frozenset[str], frozenset[str]]  # context_of(): (exact, trees)
MAX_CONTEXT_LANES = 256  # bound the walk through delegations (a long-running hub, say)


def own_quotes(quoted: Sequence[str], found: set[int], near: set[int], parts: Sequence[str]
               ) -> set[str]:
    """The texts (indices *found* in *quoted*) a request (its *parts*) quotes in their own
    right, = _unnested() of them all, longest first, in the joined parts.

    One may be inside a longer one, or overlap a longer one's occurrence in the request (the
    end of one message and the start of the next) without being inside it as a text: only
    the request itself tells. A text apart from the others (not *near*: none of its
    occurrences overlaps another's, QuoteIndex.quoted_apart()) need not be asked about: no
    occurrence of it is taken out, so it is found in its own right; nor does it take out
    another's. The near ones are asked among themselves (the texts apart take nothing out
    of their occurrences). A text holding the "\x00" _unnested() writes may be completed
    by a mark: then all are asked.
    """
    texts = {quoted[index] for index in found}
    if any("\x00" in text for text in texts):
        near = found
    if not near:
        return texts
    crowd = {quoted[index] for index in near}
    kept = _unnested(sorted(crowd, key=lambda t: (-len(t), t)), " ".join(parts))
    return (texts - crowd).union(kept)


def _unnested(texts: list[str], joined: str) -> list[str]:
    """The *texts* (longest first) still found in *joined* (= request_text()) once each
    longer one is taken out of it: those quoted in their own right."""
    out = []
    rest = joined
    for text in texts:
        if text in rest:
            out.append(text)
            rest = rest.replace(text, "\x00")
    return out


def _is_chat(request: Any) -> bool:
    return isinstance(request, dict) and (
        (format_of_request(request) or WireFormat.CHAT) is WireFormat.CHAT)


def context_of(lane: str, causes: Iterable[str], caused: dict[str, set[str]]
               ) -> tuple[frozenset[str], frozenset[str]]:
    """The causal context of a call on *lane* whose turn *causes* caused, as two sets of
    lanes: *exact* (a producer on one of them is inside) and *trees* (a producer on one of
    them or on a lane under it, "<lane>/...", is inside).

    Trees: the call's own lane (its tool calls, its sub-tasks), its cause lanes (and their
    tools), and every lane whose turn its lane caused, transitively (an agent it delegated
    to, and the agents that one asked in turn: their replies come back to it). Exact: the
    lanes *lane* is under ("planner" for "planner/tool#0": the reply that asked for the
    tool), but not their other sub-lanes (a sibling tool call is another call). A turn the
    program started names no causes: its context is its own lane and what it caused, so two
    teams started at once never share one.
    """
    parts = lane.split("/")
    exact = frozenset("/".join(parts[:i]) for i in range(1, len(parts)))
    reached = {lane}
    stack = [lane]
    while stack and len(reached) < MAX_CONTEXT_LANES:
        for delegate in sorted(caused.get(stack.pop(), ())):
            if delegate not in reached:
                reached.add(delegate)
                stack.append(delegate)
    return exact, frozenset(reached.union(causes))


def in_context(source_lane: str, exact: frozenset[str], trees: frozenset[str]) -> bool:
    """Whether a producer on *source_lane* is inside a causal context (context_of())."""
    if source_lane in exact or source_lane in trees:
        return True
    parts = source_lane.split("/")
    return any("/".join(parts[:i]) in trees for i in range(1, len(parts)))


def cause_edges(
    event_id: str, lane: str, causes: Iterable[str], lane_last: dict[str, str],
    parents: dict[str, frozenset[str]], kept: dict[str, EdgeKind],
) -> dict[str, EdgeKind]:
    """Control edges from the latest event of each lane in *causes* (the lanes whose calls
    caused this turn) to the new event *event_id* on *lane*.

    The event's own lane is lane order already; a lane with no event yet adds nothing (an agent
    that only relays messages, a user proxy before its first call). A source that is already a
    parent, or a parent of a kept parent, adds no reachability and is left out, as for data edges.
    """
    out: dict[str, EdgeKind] = {}
    for cause in sorted(set(causes) - {lane}):
        source = lane_last.get(cause)
        if source is None or source == event_id or source in kept or source in out:
            continue
        if any(source in parents.get(parent, ()) for parent in (*kept, *out)):
            continue
        out[source] = EdgeKind.CONTROL
    return out


def final_parents(events: Sequence[Event], value: Any,
                  parents: Callable[[Event], tuple[Edge, ...]] | None = None
                  ) -> tuple[Edge, ...]:
    """The parents of a run's final_result after *events*: a control edge from each sink
    event (one without successors), and a data edge from the latest event whose output the
    declared *value* repeats. *parents*: how to read an event's parents (default: its own)."""
    read = parents or _own_parents
    succeeded = {edge.source for event in events for edge in read(event)}
    edges = {e.id: EdgeKind.CONTROL for e in events if e.id not in succeeded}
    target = fingerprint("text", value if isinstance(value, str) else None)
    if target:
        for event in sorted(events, key=_position, reverse=True):
            if target in produced(event):
                edges[event.id] = EdgeKind.DATA
                break
    return tuple(Edge(source, kind) for source, kind in sorted(edges.items()))


def _own_parents(event: Event) -> tuple[Edge, ...]:
    return event.parents


def _position(event: Event) -> int:
    return event.position


def children_index(events: Iterable[Event]) -> dict[str, list[str]]:
    index: dict[str, list[str]] = {}
    for event in events:
        for parent in event.parent_ids:
            index.setdefault(parent, []).append(event.id)
    return index


def descendants(events: Sequence[Event], root: str) -> set[str]:
    """All events causally after *root* (data or control), *root* excluded."""
    index = children_index(events)
    seen: set[str] = set()
    stack = list(index.get(root, []))
    while stack:
        node = stack.pop()
        if node not in seen:
            seen.add(node)
            stack.extend(index.get(node, []))
    return seen


def ancestors(events: Sequence[Event], node: str) -> set[str]:
    by_id = {e.id: e for e in events}
    seen: set[str] = set()
    stack = list(by_id[node].parent_ids) if node in by_id else []
    while stack:
        current = stack.pop()
        if current not in seen:
            seen.add(current)
            stack.extend(by_id[current].parent_ids)
    return seen


def first_dependent_llm(events: Sequence[Event], root: str) -> Event | None:
    """The first LLM event in O that is causally after *root*."""
    after = descendants(events, root)
    for event in sorted(events, key=lambda e: e.position):
        if event.id in after and event.is_llm and not event.meta.get("within"):
            return event
    return None
