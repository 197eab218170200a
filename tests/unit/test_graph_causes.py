"""Cause edges: a turn caused by other lanes' calls follows them, whatever its request quotes.

A tool-call reply has no content; the next agent may read it as "Review this draft: None",
or a chat summary of it may be empty. The adapter names the lanes that caused the turn
(attribution `dispatched_by`); the graph draws a control edge from each one's latest event
(model/graph.py cause_edges) and a selective replay runs the turn live once one of those
lanes went live (replay/live.py), naming the lane in its reason.
"""

from __future__ import annotations

from symtrace.bundle.completion import complete_bundle
from symtrace.model.events import EdgeKind
from symtrace.model.graph import GraphBuilder, cause_edges
from symtrace.replay.live import LiveFrontier
from symtrace.session.context import Attribution, current, dispatched_by
from symtrace.session.core import LLM, BoundaryCall

from ._support import chat_request, chat_response, llm_call, recorder, run
from .test_graph_parts import edges, record

CALL = [{"id": "call_1", "type": "function",
         "function": {"name": "lookup", "arguments": '{"city": "Porto"}'}}]
REVIEW = "Review this draft:\n\nNone"


def caused(request: dict, lane: str, *causes: str) -> BoundaryCall:
    return BoundaryCall.make(LLM, request, {}, Attribution(lane, lane, None, causes))


def test_a_content_less_trigger_has_no_data_edge_but_its_cause_edge(tmp_path):
    """Without the cause the reviewer's turn is unconnected: nothing of the reply is quoted."""
    events = record(tmp_path, [
        (llm_call(chat_request("Write a note."), lane="writer"), chat_response(None, CALL)),
        (llm_call(chat_request(REVIEW), lane="reviewer"), chat_response("Looks fine.")),
        (caused(chat_request(REVIEW), "reviewer@2", "writer"), chat_response("Looks fine.")),
    ])
    assert edges(events[1]) == set()
    assert edges(events[2]) == {("agent_action_0000", EdgeKind.CONTROL)}


def test_each_cause_lane_gives_its_latest_event_once(tmp_path):
    session, writer = recorder(tmp_path / "b")
    run(session, llm_call(chat_request("a1"), lane="a"), chat_response("first from a"))
    run(session, llm_call(chat_request("a2"), lane="a"), chat_response("second from a"))
    run(session, llm_call(chat_request("b1"), lane="b"), chat_response("only from b"))
    # own lane, a lane without events, and the same lane twice add nothing
    run(session, caused(chat_request("go"), "c", "a", "b", "c", "relay", "a"),
        chat_response("done"))
    complete_bundle(writer, exit_code=0, value=None, status="ok")
    from symtrace.bundle import load_bundle

    last = [e for e in load_bundle(tmp_path / "b").events if e.is_llm][-1]
    assert edges(last) == {("agent_action_0001", EdgeKind.CONTROL),
                           ("agent_action_0002", EdgeKind.CONTROL)}


def test_a_cause_already_reachable_through_a_kept_parent_is_left_out():
    lane_last = {"a": "e1", "b": "e2"}
    parents = {"e2": frozenset({"e1"}), "e1": frozenset()}
    kept = {"e2": EdgeKind.DATA}  # e2 quotes e1 already
    assert cause_edges("e3", "c", ("a", "b"), lane_last, parents, kept) == {}
    assert cause_edges("e3", "c", ("a", "b"), lane_last, parents, {}) == {
        "e1": EdgeKind.CONTROL, "e2": EdgeKind.CONTROL}
    assert cause_edges("e1", "x", ("a",), lane_last, parents, {}) == {}  # never itself


def test_dispatched_by_takes_one_lane_or_many_and_keeps_them_sorted():
    with dispatched_by("manager"):
        assert current().dispatched_by == ("manager",)
    with dispatched_by(["writer", "critic", "writer"]):
        assert current().dispatched_by == ("critic", "writer")
    with dispatched_by(None):
        assert current().dispatched_by == ()


def test_the_frontier_runs_a_turn_live_when_a_cause_lane_went_live_and_says_why():
    frontier = LiveFrontier(GraphBuilder())
    frontier.started = True
    anchor = llm_call(chat_request("Write a note."), lane="writer")
    frontier.went_live(anchor, "agent_action_0007", "the anchor")
    assert frontier.follows(caused(chat_request(REVIEW), "reviewer", "critic")) is None
    reason = frontier.follows(caused(chat_request(REVIEW), "reviewer", "critic", "writer"))
    assert reason is not None
    assert "caused by lane writer" in reason and "agent_action_0007" in reason


def _tool(name: str, lane: str, call_id: str) -> BoundaryCall:
    from ._support import tool_call

    return tool_call(name, {"city": "Porto"}, lane=lane, call_id=call_id)


def test_an_identical_value_from_an_unrelated_chat_draws_no_edge(tmp_path):
    """Two concurrent chats ask the same tool the same thing: each agent's next request
    carries its own chat's call and result, not the other chat's identical ones."""
    lookup = {"name": "lookup", "arguments": '{"city": "Porto"}'}
    ask = {"a": [{"id": "call_a", "type": "function", "function": lookup}],
           "b": [{"id": "call_b", "type": "function", "function": lookup}]}
    result = "Porto: 16 degrees and drizzle all afternoon."
    session, writer = recorder(tmp_path / "b")
    for chat in ("a", "b"):
        run(session, llm_call(chat_request("Weather?"), lane=f"agent_{chat}"),
            chat_response(None, ask[chat]))
    for chat in ("a", "b"):
        run(session, _tool("lookup", f"proxy_{chat}/tool#0", f"call_{chat}"), {"value": result})
    follow_up = {chat: chat_request("Weather?", result) for chat in ("a", "b")}
    follow_up["a"]["body"]["messages"].insert(1, {"role": "assistant", "content": None,
                                                  "tool_calls": ask["a"]})
    run(session, caused(follow_up["a"], "agent_a", "proxy_a"), chat_response("Mild."))
    complete_bundle(writer, exit_code=0, value=None, status="ok")
    from symtrace.bundle import load_bundle

    events = load_bundle(tmp_path / "b").events
    by_id = {e.id: e for e in events}
    tool_a = next(e for e in events if e.type.value == "tool_call" and e.lane == "proxy_a/tool#0")
    assert [by_id[p].lane for p in tool_a.parent_ids] == ["agent_a"]  # by call id, not args
    last = [e for e in events if e.is_llm][-1]
    lanes = {by_id[p].lane for p in last.parent_ids}
    assert "agent_b" not in lanes and "proxy_b/tool#0" not in lanes
    assert "proxy_a/tool#0" in lanes


def test_a_text_found_only_inside_a_longer_quoted_text_is_not_a_quote_of_its_own(tmp_path):
    """ "... for day" (another chat's tool error) inside "... for day plan" (this chat's)."""
    short, long = "lookup is unavailable for day", "lookup is unavailable for day plan"
    session, writer = recorder(tmp_path / "b")
    run(session, _tool("lookup", "proxy_a/tool#0", "call_a"),
        {"ok": False, "error": {"message": long, "type": "ToolFailure"}})
    run(session, _tool("lookup", "proxy_b/tool#0", "call_b"),
        {"ok": False, "error": {"message": short, "type": "ToolFailure"}})
    run(session, llm_call(chat_request(f"Error: {long}"), lane="agent_a"), chat_response("Ok."))
    run(session, llm_call(chat_request(f"Error: {short}"), lane="agent_b"), chat_response("Ok."))
    complete_bundle(writer, exit_code=0, value=None, status="ok")
    from symtrace.bundle import load_bundle

    events = load_bundle(tmp_path / "b").events
    by_id = {e.id: e for e in events}
    agent_a, agent_b = (e for e in events if e.is_llm)
    assert {by_id[p].lane for p in agent_a.parent_ids} == {"proxy_a/tool#0"}
    assert {by_id[p].lane for p in agent_b.parent_ids} == {"proxy_b/tool#0"}
