"""Edges come from content: data edges for reused values, control edges for lane order."""

from __future__ import annotations

from symtrace.bundle import load_bundle
from symtrace.bundle.completion import complete_bundle
from symtrace.model.events import EdgeKind
from symtrace.model.graph import ancestors, descendants, first_dependent_llm

from ._support import chat_request, chat_response, llm_call, recorder, run, tool_call


def edges(event):
    return {(e.source, e.kind) for e in event.parents}


def test_tool_call_result_and_next_llm_are_linked(tmp_path):
    session, writer = recorder(tmp_path / "b")
    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "lookup", "arguments": '{"city": "Lisbon"}'},
    }
    run(session, llm_call(chat_request("weather?")), chat_response(None, [call]))
    run(
        session,
        tool_call("lookup", {"city": "Lisbon"}, call_id="call_1", lane="thread:x"),
        {"ok": True, "value": "Lisbon is sunny today"},
    )
    request = chat_request("weather?")
    request["body"]["messages"] += [
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_1", "content": "Lisbon is sunny today"},
    ]
    run(session, llm_call(request), chat_response("It is sunny in Lisbon."))
    complete_bundle(writer, exit_code=0, value="It is sunny in Lisbon.", status="ok")
    b = load_bundle(tmp_path / "b")
    _a0, tc, tr, a1, final = b.events
    assert edges(tc) == {("agent_action_0000", EdgeKind.DATA)}
    assert edges(tr) == {("tool_call_0000", EdgeKind.DATA)}
    assert edges(a1) == {("agent_action_0000", EdgeKind.DATA), ("tool_result_0000", EdgeKind.DATA)}
    assert ("agent_action_0001", EdgeKind.DATA) in edges(final)
    assert descendants(b.events, "tool_result_0000") == {"agent_action_0001", "final_result_0000"}
    assert first_dependent_llm(b.events, "tool_result_0000").id == "agent_action_0001"
    assert ancestors(b.events, "agent_action_0001") == {
        "agent_action_0000",
        "tool_call_0000",
        "tool_result_0000",
    }


def test_quoted_output_inside_a_longer_prompt_is_a_data_edge(tmp_path):
    session, writer = recorder(tmp_path / "b")
    run(
        session,
        llm_call(chat_request("plan"), lane="planner"),
        chat_response("Visit the castle, then the river."),
    )
    run(
        session,
        llm_call(chat_request("Plan: Visit the castle, then the river.\nGo."), lane="researcher"),
        chat_response("ok"),
    )
    complete_bundle(writer, exit_code=0, status="ok")
    b = load_bundle(tmp_path / "b")
    assert edges(b.events[1]) == {("agent_action_0000", EdgeKind.DATA)}


def test_lane_order_is_a_control_edge(tmp_path):
    session, writer = recorder(tmp_path / "b")
    run(session, llm_call(chat_request("one")), chat_response("first answer"))
    run(session, llm_call(chat_request("two")), chat_response("second answer"))
    complete_bundle(writer, exit_code=0, status="ok")
    b = load_bundle(tmp_path / "b")
    assert edges(b.events[1]) == {("agent_action_0000", EdgeKind.CONTROL)}
