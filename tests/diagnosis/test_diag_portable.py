"""Issue 36, point 4: final-answer extraction and tool-error recognition on the formats each
framework really produces (≥ 2 layouts per framework), not only the stub's `\\n\\nTERMINATE`.

A passing answer must not be flagged C1; a tool failure the framework hands back as text or
as a stringified dict must be C3; a provider 429 the SDK retried is no symptom at all."""

from __future__ import annotations

import pytest

from symtrace.diagnosis import diagnose
from symtrace.diagnosis.view import PROVIDER_RETRY, build_context, structured_text
from symtrace.model.events import EventType
from tests.diagnosis._support import TraceBuilder

TASK = {"text": "Which is cheaper, apple or pear? Return a JSON object with key cheaper.",
        "output": {"kind": "json", "keys": ["cheaper"]}}
ANSWER = {"cheaper": "apple"}

FINAL_LAYOUTS = {
    # AG2 (classic autogen and ag2 1.x group chats): the assistant's closing turn
    "ag2 single newline": 'FINAL ANSWER: {"cheaper": "apple"}\nTERMINATE',
    "ag2 blank line": 'FINAL ANSWER: {"cheaper": "apple"}\n\nTERMINATE',
    "ag2 trailing spaces": 'FINAL ANSWER: {"cheaper": "apple"}  \n  TERMINATE  ',
    # CrewAI's ReAct answer (researcher) and a pretty-printed one
    "crewai react": 'Thought: I now know the final answer\nFinal Answer: {"cheaper": "apple"}',
    "crewai pretty": 'Thought: done\nFinal Answer: {\n  "cheaper": "apple"\n}\n',
    # AgentChat / Magentic-One: one line, a code fence, prose after
    "agentchat same line": 'FINAL ANSWER: {"cheaper": "apple"} TERMINATE',
    "agentchat fenced": 'FINAL ANSWER:\n```json\n{"cheaper": "apple"}\n```\nTERMINATE',
    "agentchat prose after": 'FINAL ANSWER: {"cheaper": "apple"}\nThe shop lists apple at 1.2.',
}


def _final_trace(text: str):
    t = TraceBuilder(TASK)
    t.agent(None, calls=[("shop_price", {"item": "apple"})])
    t.tool("shop_price", {"item": "apple"}, value={"item": "apple", "price": 1.2})
    t.agent(text)
    t.final(ANSWER)
    return t.bundle()


@pytest.mark.parametrize("layout", sorted(FINAL_LAYOUTS))
def test_a_correct_final_answer_is_read_whole_and_not_flagged(layout):
    bundle = _final_trace(FINAL_LAYOUTS[layout])
    ctx = build_context(bundle)
    [view] = [v for v in ctx.views if v.type is EventType.AGENT_ACTION and v.final_style]
    assert view.output == ANSWER, layout
    flagged = {e.rule for n in diagnose(bundle).nodes for e in n.confirmed_evidence
               if e.category is not None and e.category.value == "C1"}
    assert not flagged, (layout, flagged)


def test_a_prose_final_answer_is_still_flagged_c1():
    bundle = _final_trace("FINAL ANSWER: apple is cheaper\nTERMINATE")
    assert any(e.category is not None and e.category.value == "C1"
               for n in diagnose(bundle).nodes for e in n.confirmed_evidence)


TOOL_ERRORS = {
    # AG2 stringifies a tool's dict return (str(dict)) and wraps a raising tool
    "ag2 str(dict)": "{'status': 'error', 'error': {'message': 'query must not be empty'}}",
    "ag2 raised": "Error: query must not be empty",
    # CrewAI: its tool_usage_exception sentence, and a JSON string return
    "crewai raised": ("I encountered an error while trying to use the tool. This was the "
                      "error: query must not be empty.\n Tool wiki_search accepts these "
                      "inputs: query"),
    "crewai json text": '{"status": "error", "error": {"message": "query must not be empty"}}',
    # AgentChat: FunctionExecutionResult content of a raising tool, and a dict return
    "agentchat raised": "Error: query must not be empty",
    "agentchat dict": {"status": "error", "error": {"message": "query must not be empty"}},
}


@pytest.mark.parametrize("layout", sorted(TOOL_ERRORS))
def test_a_tool_failure_in_each_frameworks_format_is_c3(layout):
    t = TraceBuilder("Find the article about apples.")
    t.agent(None, calls=[("wiki_search", {"query": ""})])
    _, result = t.tool("wiki_search", {"query": ""}, value=TOOL_ERRORS[layout])
    t.agent('FINAL ANSWER: {"title": "Apple"}\nTERMINATE')
    bundle = t.bundle()
    view = build_context(bundle).by_id[result]
    assert view.error is not None and "empty" in view.error.render(), layout
    rules = {e.rule for n in diagnose(bundle).nodes for e in n.confirmed_evidence
             if e.category is not None and e.category.value == "C3"}
    assert rules, layout


@pytest.mark.parametrize("value", [
    "{'status': 'ok', 'items': [1, 2]}", '{"status": "ok"}', "Errors are rare here.",
    "{'unbalanced': ", {"status": "ok"}, "plain text"])
def test_successful_results_are_not_errors(value):
    t = TraceBuilder("Find it.")
    t.agent(None, calls=[("wiki_search", {"query": "x"})])
    _, result = t.tool("wiki_search", {"query": "x"}, value=value)
    assert build_context(t.bundle()).by_id[result].error is None


def test_structured_text_reads_json_and_python_literals_only_when_they_are_dicts():
    assert structured_text("{'a': 1}") == {"a": 1}
    assert structured_text('{"a": 1}') == {"a": 1}
    assert structured_text("[1, 2]") == "[1, 2]"
    assert structured_text("{__import__('os')}") == "{__import__('os')}"  # never evaluated
    assert structured_text(3) == 3


def test_a_retried_provider_error_is_control_not_a_symptom():
    t = TraceBuilder(TASK)
    refused = t.agent(None, status=429, error={"type": "rate_limit_exceeded",
                                                "message": "slow down"})
    t.agent('FINAL ANSWER: {"cheaper": "apple"}\nTERMINATE')
    t.final(ANSWER)
    bundle = t.bundle()
    view = build_context(bundle).by_id[refused]
    assert view.reason == PROVIDER_RETRY and view.control
    assert not any(n.confirmed for n in diagnose(bundle).nodes)
    # an LLM error nobody retried stays a failure (C3)
    t = TraceBuilder(TASK)
    failed = t.agent(None, status=500)
    t.final(None, exit_code=1)
    assert build_context(t.bundle()).by_id[failed].reason is None
