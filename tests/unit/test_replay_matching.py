"""The replay matcher's cursors and indexes, and completion ranks on large graphs.

The matcher keeps a cursor per strict lane and an index of pooled records by request hash;
these tests pin the cases where a cursor or a bucket must look past its front: superseded
records, a same-hash record not yet enabled, the anchor of a child bundle on a pooled lane.
"""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

from symtrace.bundle import load_bundle
from symtrace.errors import SessionError
from symtrace.model.divergence import DivergenceKind
from symtrace.model.events import Edge, EdgeKind, Event, EventType
from symtrace.model.graph import children_index
from symtrace.model.hashing import digest
from symtrace.model.intervention import Intervention
from symtrace.model.redaction import Redactor
from symtrace.replay.matching import Matcher, Mismatch
from symtrace.replay.replayer import Replayer
from symtrace.session import scheduling
from symtrace.session.scheduling import NEVER

from ._support import chat_request, chat_response, llm_call, recorder, run, tool_call


def record(ident: str, position: int, call, parents: tuple[Edge, ...] = ()) -> Event:
    """A record matching *call* (same type, lane and request hash)."""
    return Event(
        id=ident,
        position=position,
        type=call.event_type,
        lane=call.attribution.lane,
        parents=parents,
        request=call.request,
        request_hash=call.request_hash,
    )


def data(source: str) -> tuple[Edge, ...]:
    return (Edge(source, EdgeKind.DATA),)


class TestMatcher:
    def test_strict_lane_cursor_skips_superseded_and_consumed_records(self):
        calls = [llm_call(chat_request(t), lane="alice") for t in ("a0", "a1", "a2")]
        records = [record(f"agent_action_000{i}", i, c) for i, c in enumerate(calls)]
        matcher = Matcher(records, None)
        assert matcher.match(calls[0]) is records[0]
        matcher.consume(records[0])
        matcher.supersede({records[1].id})
        assert matcher.match(calls[2]) is records[2]
        mismatch = matcher.match(calls[1])  # a1 was superseded: the lane now expects a2
        assert isinstance(mismatch, Mismatch)
        assert mismatch.expected is records[2]

    def test_pooled_same_hash_takes_the_earliest_enabled_record(self):
        call = tool_call("weather", {"city": "Lisbon"}, lane="thread:w0")
        waiting = record("tool_call_0000", 0, call, data("agent_action_0009"))
        ready = record("tool_call_0001", 1, call)
        matcher = Matcher([waiting, ready], None)
        assert matcher.match(call) is ready  # the earlier one still waits for its input
        matcher.consume(ready)
        assert isinstance(matcher.match(call), Mismatch)
        matcher.consume(Event("agent_action_0009", 9, EventType.AGENT_ACTION, "main"))
        assert matcher.match(call) is waiting

    def test_pooled_match_prefers_the_earlier_of_two_enabled_records(self):
        call = tool_call("weather", {"city": "Porto"}, lane="thread:w1")
        first, second = record("tool_call_0000", 0, call), record("tool_call_0001", 1, call)
        matcher = Matcher([first, second], None)
        assert matcher.match(call) is first
        matcher.consume(first)
        assert matcher.match(call) is second

    def test_child_anchor_on_a_pooled_lane_matches_with_its_guidance(self):
        call = llm_call(chat_request("plan"), lane="task:t1")
        recorded = Intervention("agent_action_0000", "Check twice.")
        anchor = Event(
            id="agent_action_0000",
            position=0,
            type=EventType.AGENT_ACTION,
            lane="task:t0",
            request=recorded.apply(call.request),
            request_hash=digest(recorded.apply(call.request)),
        )
        same_as_sent = record("agent_action_0001", 1, call)
        matcher = Matcher([anchor, same_as_sent], recorded)
        assert matcher.match(call) is anchor  # earlier, and matched as q ⊕ Δ
        matcher.consume(anchor)
        assert matcher.match(call) is same_as_sent

    def test_unknown_lane_and_exhausted_lane_are_unexpected_calls(self):
        call = llm_call(chat_request("a0"), lane="alice")
        only = record("agent_action_0000", 0, call)
        matcher = Matcher([only], None)
        matcher.consume(only)
        done = matcher.match(call)
        unknown = matcher.match(llm_call(chat_request("z"), lane="zoe"))
        assert isinstance(done, Mismatch) and isinstance(unknown, Mismatch)
        assert done.kind is unknown.kind is DivergenceKind.UNEXPECTED_CALL
        assert "already consumed" in done.hint
        assert "no calls on lane 'zoe'" in unknown.hint


def test_a_strict_replay_has_no_lineage(tmp_path):
    session, writer = recorder(tmp_path / "b")
    run(session, llm_call(chat_request("q")), chat_response("a"))
    writer.finalize()
    with pytest.raises(SessionError):
        Replayer(load_bundle(tmp_path / "b"), Redactor()).lineage("parent")


# -- completion ranks: one pass over G, the same answer as a search per tool call ------------
def _reference_bodies_that_replay(events: list[Event], ranks: dict[str, int]) -> set[str]:
    """The former definition: a depth-first search from every tool call."""
    index = children_index(events)
    out: set[str] = set()
    for event in events:
        own = ranks.get(event.id, NEVER)
        if event.type is not EventType.TOOL_CALL or own == NEVER:
            continue
        stack, seen = list(index.get(event.id, ())), set()
        while stack:
            node = stack.pop()
            if node in seen:
                continue
            seen.add(node)
            if NEVER != ranks.get(node, NEVER) < own:
                out.add(event.id)
                break
            stack.extend(index.get(node, ()))
    return out


def _random_run(rng: random.Random, size: int) -> tuple[list[Event], dict[str, int]]:
    """Events with random earlier parents (a DAG, as G is), and random completion ranks."""
    events: list[Event] = []
    for position in range(size):
        parents = tuple(
            Edge(events[k].id, rng.choice((EdgeKind.DATA, EdgeKind.CONTROL)))
            for k in sorted(rng.sample(range(position), min(position, rng.randint(0, 3))))
        )
        kind = rng.choice((EventType.TOOL_CALL, EventType.TOOL_RESULT, EventType.AGENT_ACTION))
        events.append(Event(f"{kind.value}_{position:04d}", position, kind, "main",
                            parents=parents))
    ranks = list(range(size))
    rng.shuffle(ranks)
    ranked = {
        e.id: (NEVER if rng.random() < 0.15 else rank)
        for e, rank in zip(events, ranks, strict=True)
        if rng.random() < 0.8
    }
    return events, ranked


@pytest.mark.parametrize("seed", range(60))
def test_bodies_that_replay_match_a_search_per_tool_call(seed):
    rng = random.Random(seed)
    events, ranks = _random_run(rng, rng.randint(2, 80))
    if seed % 3 == 1:  # events in any order: the pass orders them itself
        rng.shuffle(events)
    if seed % 3 == 2:  # edges pointing forward in O (positions reversed): the graph walk
        events = [replace(e, position=len(events) - 1 - e.position) for e in events]
    expected = _reference_bodies_that_replay(events, ranks)
    assert scheduling._bodies_that_replay(events, ranks) == expected
