"""Framework dialects in imported logs: control turns carry a reason and fire no decision rule;
code-executor failures are failed results of the code the previous turn wrote (issue 10)."""

from __future__ import annotations

import pytest

from symtrace.diagnosis import diagnose
from symtrace.diagnosis.anchors import decisions
from symtrace.diagnosis.dialects import TurnKind, base_agent, classify_turn
from symtrace.diagnosis.errors import TraceImportError
from symtrace.diagnosis.importers import ImportFormat, detect_format, trace_from_data
from symtrace.diagnosis.symptoms import Category
from symtrace.diagnosis.view import build_context
from symtrace.model.events import EventType

NO_CODE = (
    "There is no code from the last 1 message for me to execute. Group chat manager should let "
    "other participants to continue the conversation."
)
CODE = "Let me compute it.\n```python\nprint(total)\n```"
FAILED = (
    "exitcode: 1 (execution failed)\nCode output: Traceback (most recent call last):\n"
    "  File \"x.py\", line 1, in <module>\nNameError: name 'total' is not defined\n"
)


def steps(*turns: tuple[str, str], question: str = "What is the total?") -> dict:
    trajectory = [{"step": i, "agent_name": a, "content": c} for i, (a, c) in enumerate(turns)]
    return {"question": question, "trajectory": trajectory, "mistake_step": 0,
            "mistake_agent": "nobody"}  # fmt: skip


@pytest.mark.parametrize(
    ("name", "text", "kind", "reason"),
    [
        ("Computer_terminal", NO_CODE, TurnKind.CONTROL, "no_code_to_execute"),
        ("Verifier", "TERMINATE", TurnKind.CONTROL, "termination"),
        ("Orchestrator (thought)", "Next speaker WebSurfer", TurnKind.CONTROL, "speaker_selection"),
        ("Orchestrator (thought)", 'Updated Ledger:\n{"is_request_satisfied": {}}',
         TurnKind.CONTROL, "progress_ledger"),
        ("Orchestrator (thought)", "Initial plan:\n\n1. search", TurnKind.DECISION, "planning"),
        ("Orchestrator (thought)", "New plan:\n\n1. retry", TurnKind.DECISION, "replanning"),
        ("Orchestrator (-> WebSurfer)", "Search for X.", TurnKind.DECISION, None),
        ("Orchestrator (final answer)", "42", TurnKind.DECISION, "final_answer"),
        ("Computer_terminal", FAILED, TurnKind.EXEC_RESULT, None),
        # Negative: an agent's own words that merely mention the stock phrases stay decisions.
        ("Verifier", "All checks pass. TERMINATE", TurnKind.DECISION, None),
        ("Planner", "Next speaker should be whoever can search.", TurnKind.DECISION, None),
        ("Coder", "There is no code yet; I will write it next.", TurnKind.DECISION, None),
    ],
)  # fmt: skip
def test_classify_turn(name, text, kind, reason):
    turn = classify_turn(name, text)
    assert (turn.kind, turn.reason) == (kind, reason)
    assert turn.agent == base_agent(name)


def test_exec_failure_and_success():
    failed = classify_turn("Computer_terminal", FAILED)
    assert failed.failed and failed.exit_code == 1 and failed.error_type == "NameError"
    ok = classify_turn("Computer_terminal", "exitcode: 0 (execution succeeded)\nCode output: 42")
    assert not ok.failed and ok.output == "42"
    m1 = classify_turn("ComputerTerminal", "The script ran, then exited with an error (POSIX "
                       "exit code: 1)\nIts output was:\nValueError: bad")  # fmt: skip
    assert m1.kind is TurnKind.EXEC_RESULT and m1.failed and m1.error_type == "ValueError"


class TestAG2CodeExecutor:
    def test_failed_execution_is_a_failed_result_of_the_code_and_fires_c3(self):
        bundle = trace_from_data(steps(("Coder", CODE), ("Computer_terminal", FAILED)))
        by_type = [e.type for e in bundle.events]
        assert by_type == [EventType.AGENT_ACTION, EventType.TOOL_CALL, EventType.TOOL_RESULT,
                           EventType.FINAL_RESULT]  # fmt: skip
        call, result = bundle.events[1], bundle.events[2]
        assert call.request == {
            "tool": "execute_code",
            "arguments": {"code": "print(total)", "language": "python"},
        }
        assert result.response["ok"] is False and result.response["error"]["type"] == "NameError"
        assert result.meta == {"step": 1}
        d = diagnose(bundle)
        assert Category.C3 in d.node(result.id).proposed
        # The code's author is where the failure was introduced.
        assert d.anchor.anchor == "agent_action_0000" and d.anchor.symptom == result.id

    def test_successful_execution_fires_no_c3(self):
        ok = "exitcode: 0 (execution succeeded)\nCode output: 42\n"
        d = diagnose(trace_from_data(steps(("Coder", CODE), ("Computer_terminal", ok))))
        assert not any(Category.C3 in n.proposed for n in d.nodes)

    def test_no_code_and_terminate_are_control_and_fire_no_c2(self):
        data = steps(("Coder", "The answer is 42."), ("Computer_terminal", NO_CODE),
                     ("Coder", "The answer is 42, final answer: 42"),
                     ("Computer_terminal", NO_CODE), ("Verifier", "TERMINATE"),
                     ("Verifier", "TERMINATE"))  # fmt: skip
        bundle = trace_from_data(data)
        d = diagnose(bundle)
        reasons = [e.reason for e in bundle.events if e.type is EventType.AGENT_ACTION]
        assert reasons == [None, "no_code_to_execute", None, "no_code_to_execute",
                           "termination", "termination"]  # fmt: skip
        assert not any(Category.C2 in n.proposed for n in d.nodes)
        assert [v.agent for v in decisions(d.context)] == ["Coder", "Coder"]

    def test_real_repeated_finals_still_fire_c2(self):
        """Positive control: two agent answers with no action between are still C2."""
        data = steps(("Coder", "Final answer: 42"), ("Verifier", "Final answer: 42"))
        d = diagnose(trace_from_data(data))
        assert Category.C2 in d.node("agent_action_0001").proposed


class TestMagenticOne:
    def test_ledgers_and_speaker_choice_are_control_the_plan_is_a_decision(self):
        data = steps(
            ("human", "How far is Porto from Lisbon?"),
            ("Orchestrator (thought)", "Initial plan:\n\n1. WebSurfer searches the distance."),
            ("Orchestrator (thought)", 'Updated Ledger:\n{"is_request_satisfied": {}}'),
            ("Orchestrator (-> WebSurfer)", "Search the distance from Porto to Lisbon."),
            ("Orchestrator (thought)", "Next speaker WebSurfer"),
            ("WebSurfer", "I typed 'Porto Lisbon distance' into the search bar."),
            ("Orchestrator (thought)", 'Updated Ledger:\n{"is_request_satisfied": {}}'),
            ("Orchestrator (thought)", "Next speaker WebSurfer"),
            question="Distance Porto–Lisbon?",
        )
        bundle = trace_from_data(data)
        assert bundle.task == "Distance Porto–Lisbon?"
        ctx = build_context(bundle)
        assert [(v.agent, v.step) for v in decisions(ctx)] == [
            ("Orchestrator", 1),
            ("Orchestrator", 3),
            ("WebSurfer", 5),
        ]
        d = diagnose(bundle)
        assert not any(Category.C2 in n.proposed for n in d.nodes)  # repeated ledgers are fine


class TestCrewAIObservations:
    def test_stock_tool_error_observation_is_a_failed_result(self):
        messages = [
            {"role": "user", "content": "Quote 100 EUR in JPY."},
            {"role": "assistant", "name": "Analyst", "content": None,
             "tool_calls": [{"id": "c1", "function": {"name": "rate",
                                                      "arguments": '{"currency": "JPY"}'}}]},
            {"role": "tool", "tool_call_id": "c1", "content":
             "I encountered an error while trying to use the tool. This was the error: no EUR "
             "rate for 'JPY'.\n Tool rate accepts these inputs: currency"},
            {"role": "assistant", "name": "Analyst", "content": "JPY is unavailable."},
        ]  # fmt: skip
        bundle = trace_from_data(messages)
        result = next(e for e in bundle.events if e.type is EventType.TOOL_RESULT)
        assert result.response == {
            "ok": False,
            "error": {"type": "ToolError", "module": None, "message": "no EUR rate for 'JPY'"},
        }
        assert Category.C3 in diagnose(bundle).node(result.id).proposed

    def test_an_agent_saying_it_hit_an_error_is_not_a_tool_result(self):
        messages = [
            {"role": "user", "content": "Quote 100 EUR in JPY."},
            {"role": "assistant", "name": "Analyst", "content": "I encountered an error: none."},
        ]
        bundle = trace_from_data(messages)
        assert [e.type for e in bundle.events] == [EventType.AGENT_ACTION, EventType.FINAL_RESULT]


class TestStepsFormat:
    def test_detected_and_labels_are_not_read(self):
        data = steps(("Coder", "Final answer: 42"))
        data["mistake_reason"] = "SECRET-REASON"
        assert detect_format(data) is ImportFormat.STEPS
        bundle = trace_from_data(data)
        assert "SECRET-REASON" not in str(bundle.manifest) + str([e.request for e in bundle.events])
        assert bundle.task == "What is the total?"

    @pytest.mark.parametrize(
        ("trajectory", "message"),
        [
            ([{"step": 0, "content": "x"}], "needs agent_name"),
            ([{"step": "a", "agent_name": "x", "content": "y"}], "step is not an integer"),
            ([], "non-empty list"),
        ],
    )
    def test_malformed(self, trajectory, message):
        with pytest.raises(TraceImportError, match=message):
            trace_from_data({"question": "q", "trajectory": trajectory})
