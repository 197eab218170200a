"""Data edges from parts of a reply: what frameworks pass on is often not the whole text.

CrewAI hands the next task only what follows a ReAct `Final Answer:`; AG2 strips TERMINATE
from a `last_msg` summary before carrying it over; ReAct tool calls are `Action:` text.
"""

from __future__ import annotations

from symtrace.bundle import load_bundle
from symtrace.bundle.completion import complete_bundle
from symtrace.model.dataflow import part_fps, react_actions
from symtrace.model.events import EdgeKind

from ._support import chat_request, chat_response, llm_call, recorder, run, tool_call

FINAL = "Thought: I now know the final answer.\nFinal Answer: The tram museum opens at ten."


def edges(event):
    return {(e.source, e.kind) for e in event.parents}


def record(tmp_path, steps):
    session, writer = recorder(tmp_path / "b")
    for call, response in steps:
        run(session, call, response)
    complete_bundle(writer, exit_code=0, value=None, status="ok")
    return load_bundle(tmp_path / "b").events


def test_a_react_final_answer_handed_on_alone_is_a_data_edge(tmp_path):
    context = "This is the context you're working with:\nThe tram museum opens at ten.\n"
    events = record(tmp_path, [
        (llm_call(chat_request("research"), lane="researcher"), chat_response(FINAL)),
        (llm_call(chat_request(context + "Write."), lane="writer"), chat_response("Done.")),
    ])
    assert edges(events[1]) == {("agent_action_0000", EdgeKind.DATA)}


def test_a_summary_without_its_terminate_is_a_data_edge(tmp_path):
    reply = "Lisbon has mild winters and long summers. Trams run all night. TERMINATE"
    carried = "Step 2.\nContext: \nLisbon has mild winters and long summers. Trams run all night. "
    events = record(tmp_path, [
        (llm_call(chat_request("facts"), lane="researcher"), chat_response(reply)),
        (llm_call(chat_request(carried), lane="writer"), chat_response("Noted.")),
    ])
    assert edges(events[1]) == {("agent_action_0000", EdgeKind.DATA)}


def test_a_sentence_the_reply_only_echoed_from_its_prompt_is_no_edge(tmp_path):
    shared = "Always answer in the metric system."
    events = record(tmp_path, [
        (llm_call(chat_request(shared + " Plan."), lane="a"), chat_response(shared + " Okay!")),
        (llm_call(chat_request(shared + " Write."), lane="b"), chat_response("Fine.")),
    ])
    assert edges(events[1]) == set()  # the sentence came from the prompt, not from the reply


def test_short_parts_link_nothing():
    assert part_fps("Yes.\nOK then.") == []
    assert len(part_fps("The tram museum opens at ten.")) == 2  # the line and its sentence


def test_a_react_action_is_the_tool_calls_data_parent(tmp_path):
    action = 'Thought: look it up\nAction: museum_hours\nAction Input: {"city": "Lisbon"}'
    events = record(tmp_path, [
        (llm_call(chat_request("hours?"), lane="researcher"), chat_response(action)),
        (tool_call("museum_hours", {"city": "Lisbon"}, lane="researcher/tool"),
         {"ok": True, "value": "ten to six"}),
    ])
    assert ("agent_action_0000", EdgeKind.DATA) in edges(events[1])


def test_react_actions_are_parsed_with_their_input():
    text = ('Thought: a\nAction: one\nAction Input: {"x": 1}\nObservation: ok\n'
            'Thought: b\nAction: two\nAction Input: ```{"y": 2}```')
    assert react_actions(text) == [{"name": "one", "arguments": '{"x": 1}'},
                                   {"name": "two", "arguments": '{"y": 2}'}]
    assert react_actions("Final Answer: no action here") == []


def test_a_turn_chosen_by_a_manager_gets_a_control_edge_from_its_choice(tmp_path):
    from symtrace.session.context import Attribution
    from symtrace.session.core import LLM, BoundaryCall

    chosen = BoundaryCall.make(LLM, chat_request("your turn"), {},
                               Attribution("writer", "writer", None, dispatched_by=("manager",)))
    events = record(tmp_path, [
        (llm_call(chat_request("who speaks?"), lane="manager"), chat_response("writer")),
        (chosen, chat_response("A draft.")),
    ])
    assert edges(events[1]) == {("agent_action_0000", EdgeKind.CONTROL)}
