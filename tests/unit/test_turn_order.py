"""One rule for the order of one agent's turns (issue 33): the graph's lane order and its
producer lookup, replay's binding and a selective replay's live frontier all ask
`events.turns_independent()` over what the recording says of each turn (session/context.py)."""

from __future__ import annotations

import asyncio
import threading

from symtrace.bundle import load_bundle
from symtrace.bundle.completion import complete_bundle
from symtrace.model.events import TURN, EdgeKind, siblings_independent, turns_independent
from symtrace.replay.live import ran_at_once
from symtrace.replay.matching import Matcher, Mismatch
from symtrace.session import context

from ._support import chat_request, chat_response, llm_call, recorder, run, tool_call

RESULT = "Porto: 19 degrees and sunny all afternoon."


def _info(key: str, *, parent: dict | None = None, with_: tuple[str, ...] = (),
          fork: bool = False) -> dict:
    return {"key": key, "lane": "r", "ordinal": 0, "fork": fork, "with": list(with_),
            "opener": 0, "parent": parent}


class TestRule:
    def test_decided_where_the_ancestries_part(self):
        a, b = _info(">r#0"), _info(">r#1", with_=(">r#0",))
        fork_a, fork_b = _info(">r#0~0", parent=a, fork=True), _info(">r#1~0", parent=b,
                                                                       fork=True)
        # forks of two turns that overlapped: AgentChat's model calls of two runs at once
        assert turns_independent(fork_a, fork_b) and turns_independent(fork_b, fork_a)
        assert not turns_independent(fork_a, a)  # a turn and a fork of it
        later = _info(">r#0~1", parent=a, fork=True)
        assert not turns_independent(fork_a, later)  # forks that did not overlap
        assert siblings_independent(_info(">r#0~1", parent=a, fork=True, with_=(">r#0~0",)),
                                    fork_a)
        assert not turns_independent(a, _info(">r#2"))  # one after the other

    def test_thread_turns_that_did_not_overlap_are_unordered_one_threads_are_ordered(self):
        """Bug 2: turns of two threads that happened not to overlap (the first closed before
        the second opened) are unordered for the graph, the matcher and the live frontier
        alike (before, the graph and the frontier ordered them while the matcher let them
        swap); turns one thread opened one after the other are ordered."""
        context.reset_turns()
        turns: dict[str, context.Turn] = {}
        first_closed = threading.Event()

        def first() -> None:
            with context.agent("r"):
                turns["first"] = context.current_turn()  # type: ignore[assignment]
            first_closed.set()

        def second() -> None:
            first_closed.wait(5)
            with context.agent("r"):
                turns["second"] = context.current_turn()  # type: ignore[assignment]
            with context.agent("r"):
                turns["third"] = context.current_turn()  # type: ignore[assignment]

        threads = [threading.Thread(target=first), threading.Thread(target=second)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(5)
        info = {name: turn.info for name, turn in turns.items()}
        assert info["second"]["with"] == []  # they did not overlap
        assert turns_independent(info["first"], info["second"])
        assert ran_at_once(turns["first"], turns["second"])
        assert not turns_independent(info["second"], info["third"])
        assert not ran_at_once(turns["second"], turns["third"])


    def test_turns_an_object_runs_one_at_a_time_in_tasks_of_their_own_are_ordered(self):
        """AgentChat hands each message to a task of its own; a team container handles one at
        a time. Opened with `serial=container` its turns are one opener's (ordered); without,
        two tasks' (independent)."""
        context.reset_turns()
        turns: list[context.Turn] = []
        container = object()

        async def handle(serial: object) -> None:
            with context.agent("writer", serial=serial):
                turns.append(context.current_turn())  # type: ignore[arg-type]

        async def program(serial: object) -> None:
            await asyncio.create_task(handle(serial))
            await asyncio.create_task(handle(serial))

        asyncio.run(program(container))
        asyncio.run(program(None))
        served, free = turns[:2], turns[2:]
        assert not turns_independent(served[0].info, served[1].info)
        assert not ran_at_once(served[0], served[1])
        assert turns_independent(free[0].info, free[1].info)


def _record_siblings_sharing_a_tool_result(path):
    """Two `gather`ed turns of `researcher` each look Porto up (one text back for both); the
    second turn's lookup completes last, then the first turn asks with its result."""
    context.reset_turns()
    session, writer = recorder(path)
    calls: dict[str, list] = {}

    async def turn(name: str) -> None:
        with context.agent("researcher"):
            ask = llm_call(chat_request(f"Plan {name}."), lane="researcher")
            with context.lane("researcher/tool#0"):
                lookup = tool_call("lookup", {"city": "Porto"}, lane="researcher/tool#0")
            await asyncio.sleep(0.01)
            follow = llm_call(chat_request(f"Plan {name}.", RESULT), lane="researcher")
        calls[name] = [ask, lookup, follow]

    async def program() -> None:
        await asyncio.gather(turn("a"), turn("b"))

    asyncio.run(program())
    for name in ("a", "b"):
        run(session, calls[name][0], chat_response(f"Looking {name} up."))
    for name in ("a", "b"):
        run(session, calls[name][1], {"value": RESULT})
    for name in ("a", "b"):
        run(session, calls[name][2], chat_response(f"Porto for {name}."))
    complete_bundle(writer, exit_code=0, status="ok")
    return load_bundle(path).events


def test_a_value_both_sibling_turns_produced_links_within_the_consumers_turn(tmp_path):
    """Bug 1: turn a's request carries the lookup text both turns got back; its producer is
    a's own lookup, not b's later identical one (before: the latest producer on the lane)."""
    events = _record_siblings_sharing_a_tool_result(tmp_path / "b")
    results = [e for e in events if e.type.value == "tool_result"]
    follow_a = [e for e in events if e.is_llm][2]
    lookups = [e for e in events if e.type.value == "tool_call"]
    assert follow_a.meta[TURN]["key"] == lookups[0].meta[TURN]["parent"]["key"]
    parents = {p.source: p.kind for p in follow_a.parents}
    assert parents.get(results[0].id) is EdgeKind.DATA, parents
    assert results[1].id not in parents
    follow_b = [e for e in events if e.is_llm][3]
    assert results[1].id in {p.source for p in follow_b.parents}
    assert results[0].id not in {p.source for p in follow_b.parents}


def test_forks_that_did_not_overlap_bind_in_order_and_overlapping_ones_either_way(tmp_path):
    """A fork's `with` says whether its task started while another fork's still ran: the
    matcher lets overlapping forks (a `gather` inside a block) bind in either order and keeps
    forks one after the other (AgentChat's model call tasks) in order, as the graph does."""
    context.reset_turns()
    session, writer = recorder(tmp_path / "b")

    async def program(concurrent: bool, order: tuple[str, ...]) -> list:
        calls: list = []

        async def call(text: str) -> None:
            await asyncio.sleep(0.01 * order.index(text))
            calls.append(llm_call(chat_request(text), lane="r"))
            await asyncio.sleep(0.03)  # under a gather, the other fork starts meanwhile

        with context.agent("r"):
            if concurrent:
                await asyncio.gather(call("a"), call("b"))
            else:
                for text in order:
                    await asyncio.create_task(call(text))
        return calls

    recorded = asyncio.run(program(True, ("a", "b"))) + asyncio.run(
        program(False, ("c", "d")))
    for call in recorded:
        run(session, call, chat_response("r-" + str(call.request)))
    complete_bundle(writer, exit_code=0, status="ok")
    bundle = load_bundle(tmp_path / "b")
    forks = [e.meta[TURN] for e in bundle.events if e.is_llm]
    assert [bool(f["with"]) for f in forks] == [False, True, False, False]
    context.reset_turns()
    matcher = Matcher(bundle.events, None)
    for call in asyncio.run(program(True, ("b", "a"))):  # "b" first this time
        found = matcher.match(call)
        assert not isinstance(found, Mismatch)
        matcher.consume(found)
    swapped = asyncio.run(program(False, ("d", "c")))
    found = matcher.match(swapped[0])
    assert isinstance(found, Mismatch)


def test_the_graph_draws_no_lane_order_between_thread_turns_that_did_not_overlap(tmp_path):
    """Bug 2 in the graph: the second thread's turn opened after the first's closed; its call
    gets no control edge from the first's (before: a lane-order edge, while the matcher let
    the two swap, so a selective replay anchored in the first met the second asking first).
    A second turn of the same thread stays ordered after its first."""
    context.reset_turns()
    session, writer = recorder(tmp_path / "b")
    calls: dict[str, object] = {}
    first_closed = threading.Event()

    def first() -> None:
        with context.agent("r"):
            calls["first"] = llm_call(chat_request("Falcon?"), lane="r")
        first_closed.set()

    def second() -> None:
        first_closed.wait(5)
        with context.agent("r"):
            calls["second"] = llm_call(chat_request("Orca?"), lane="r")
        with context.agent("r"):
            calls["third"] = llm_call(chat_request("Both?"), lane="r")

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(5)
    for name in ("first", "second", "third"):
        run(session, calls[name], chat_response(f"answer {name}"))  # type: ignore[arg-type]
    complete_bundle(writer, exit_code=0, status="ok")
    first_event, second_event, third_event = [
        e for e in load_bundle(tmp_path / "b").events if e.is_llm]
    assert first_event.id not in {p.source for p in second_event.parents}
    assert {p.source: p.kind for p in third_event.parents} == {
        second_event.id: EdgeKind.CONTROL}


def test_an_independent_live_turn_of_the_own_lane_named_as_a_cause_does_not_make_a_call_live():
    """Classic AG2 names the replying agent among its turn's causes. Anchored in one chat's
    turn, the other chat's (an independent sibling's) next call stayed served by the lane
    rule but went live as "caused by lane planner": the first live request was sometimes not
    the guided anchor (generated_stress, classic AG2 shared_agent). The own lane is the lane
    rule's, as in the graph's cause edges; another cause lane still makes it live."""
    from symtrace.model.graph import GraphBuilder
    from symtrace.replay.live import LiveFrontier
    from symtrace.session.context import Attribution
    from symtrace.session.core import LLM, BoundaryCall

    context.reset_turns()
    calls: dict[str, BoundaryCall] = {}

    async def chat(name: str, causes: tuple[str, ...]) -> None:
        with context.agent("planner"):
            await asyncio.sleep(0.01)
            calls[name] = BoundaryCall.make(LLM, chat_request(name), {},
                                            Attribution("planner", "planner", None, causes))

    async def program() -> None:
        await asyncio.gather(chat("a", ("customer_0", "planner")),
                             chat("b", ("customer_1", "planner")))
        await chat("c", ("customer_0",))

    asyncio.run(program())
    frontier = LiveFrontier(GraphBuilder())
    frontier.started = True
    frontier.went_live(calls["a"], "agent_action_0004", "the anchor")
    assert frontier.follows(calls["b"]) is None
    frontier.went_live(BoundaryCall.make(LLM, chat_request("x"), {}, Attribution(
        "customer_0", "customer_0", None)), "agent_action_0005", "live")
    assert "customer_0" in (frontier.follows(calls["c"]) or "")
