"""Importing existing logs (chat-message lists, OpenAI request/response logs) as
analysis-only traces, and clear errors on malformed input."""

from __future__ import annotations

import json

import pytest

from symtrace.diagnosis import (
    Category,
    TraceImportError,
    diagnose,
    import_trace,
    load_source,
    plan_repair,
    trace_from_data,
)
from symtrace.errors import BundleNotFound, UnreplayableEvent
from symtrace.model.events import EdgeKind, EventType

TOOL_CALL = {
    "id": "call_a",
    "type": "function",
    "function": {"name": "browse", "arguments": '{"url": "__SHOPPING__"}'},
}
MESSAGES = [
    {"role": "system", "content": "You are a shopping assistant."},
    {"role": "user", "content": "How much refund for February 2023? Return a number only."},
    {"role": "assistant", "name": "shopper", "content": None, "tool_calls": [TOOL_CALL]},
    {
        "role": "tool",
        "tool_call_id": "call_a",
        "name": "browse",
        "content": "MissingSchema: Invalid URL '__SHOPPING__': No scheme supplied.",
    },
    {"role": "assistant", "name": "shopper", "content": "Final answer: 58.99"},
]


def types(bundle):
    return [e.type for e in bundle.events]


class TestMessages:
    def test_graph_and_node_types(self):
        bundle = trace_from_data(MESSAGES)
        assert types(bundle) == [
            EventType.AGENT_ACTION,
            EventType.TOOL_CALL,
            EventType.TOOL_RESULT,
            EventType.AGENT_ACTION,
            EventType.FINAL_RESULT,
        ]
        call, result, second = bundle.events[1], bundle.events[2], bundle.events[3]
        assert call.request == {"tool": "browse", "arguments": {"url": "__SHOPPING__"}}
        assert call.meta == {"call_id": "call_a"}
        assert result.parents[0].source == call.id and result.parents[0].kind is EdgeKind.DATA
        assert result.response["ok"] is False
        assert result.response["error"]["type"] == "MissingSchema"
        assert second.parents[0].source == result.id  # the LLM call reads the result
        assert bundle.events[-1].response["value"] == "Final answer: 58.99"
        assert bundle.manifest["replayable"] is False
        assert bundle.task.startswith("How much refund")
        assert all(e.content_hash for e in bundle.events)

    def test_diagnosis_of_an_imported_trace(self):
        d = diagnose(trace_from_data(MESSAGES))
        assert Category.C3 in d.node("tool_result_0000").confirmed
        assert Category.C1 in d.node("tool_call_0000").confirmed
        assert d.anchor is not None and not d.anchor.replayable

    def test_wrapper_with_task_and_final_output(self):
        data = {
            "task": {"task": "Refund?", "constraints": ["Answer in at most 2 words"]},
            "messages": MESSAGES[1:],
            "final_output": "58.99",
        }
        bundle = trace_from_data(data)
        assert bundle.task["constraints"] == ["Answer in at most 2 words"]
        assert bundle.events[-1].response["value"] == "58.99"

    def test_explicit_task_wins(self):
        assert trace_from_data(MESSAGES, task="T").task == "T"

    def test_tool_results_matched_by_name_and_orphans_keep_no_call(self):
        messages = [
            {"role": "user", "content": "go"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"function": {"name": "search", "arguments": "{}"}}],
            },
            {"role": "tool", "name": "search", "content": '{"hits": 2}'},
            {"role": "function", "name": "clock", "content": "12:00"},
            {"role": "assistant", "content": "done"},
        ]
        bundle = trace_from_data(messages)
        ids = [e.id for e in bundle.events]
        assert ids == [
            "agent_action_0000",
            "tool_call_0000",
            "tool_result_0000",
            "tool_result_0001",
            "agent_action_0001",
            "final_result_0000",
        ]
        assert bundle.events[2].response == {"ok": True, "value": {"hits": 2}}
        orphan = bundle.events[3]
        assert orphan.meta == {"call": "not_in_view", "tool": "clock"}
        data = [p.source for p in orphan.parents if p.kind is EdgeKind.DATA]
        assert data == ["agent_action_0000"]
        assert not any(e.request == {"tool": "clock", "arguments": {}} for e in bundle.events)

    def test_orphan_results_are_not_repeated_actions(self):
        """Negative: results whose call is not in view share no invented `{}` call, so a
        series of them fires no C2; positive: two real identical calls still do."""
        orphans = [{"role": "user", "content": "go"}]
        for minute in ("12:00", "12:01", "12:02"):
            orphans += [
                {"role": "tool", "name": "clock", "content": minute},
                {"role": "assistant", "content": f"It is {minute}."},
            ]
        d = diagnose(trace_from_data(orphans))
        assert not any(Category.C2 in n.proposed for n in d.nodes)
        call = {"function": {"name": "clock", "arguments": '{"tz": "UTC"}'}}
        repeated = [{"role": "user", "content": "go"}]
        for i, minute in enumerate(("12:00", "12:01")):
            repeated += [
                {"role": "assistant", "content": None, "tool_calls": [{"id": f"c{i}", **call}]},
                {"role": "tool", "tool_call_id": f"c{i}", "content": minute},
            ]
        repeated.append({"role": "assistant", "content": "It is 12:01."})
        d = diagnose(trace_from_data(repeated))
        assert Category.C2 in d.node("tool_call_0001").proposed

    def test_explicit_tool_errors(self):
        messages = [
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": "1", "function": {"name": "f", "arguments": "{}"}}],
            },
            {
                "role": "tool",
                "tool_call_id": "1",
                "content": "x",
                "error": {"type": "Timeout", "message": "took too long"},
            },
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": "2", "function": {"name": "f", "arguments": "{}"}}],
            },
            {"role": "tool", "tool_call_id": "2", "content": "bad input", "is_error": True},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": "3", "function": {"name": "f", "arguments": "{}"}}],
            },
            {
                "role": "tool",
                "tool_call_id": "3",
                "content": "requests.exceptions.MissingSchema: Invalid URL '__X__'",
            },
        ]
        results = [e for e in trace_from_data(messages).events if e.type is EventType.TOOL_RESULT]
        assert results[0].response["error"]["type"] == "Timeout"
        assert results[1].response["error"] == {
            "type": "Error",
            "module": None,
            "message": "bad input",
        }
        assert results[2].response["error"] == {
            "type": "MissingSchema",
            "module": "requests.exceptions",
            "message": "Invalid URL '__X__'",
        }


class TestOpenAILog:
    def entries(self):
        first = {"model": "gpt", "messages": MESSAGES[:2]}
        call = {"role": "assistant", "content": None, "tool_calls": [TOOL_CALL]}
        second = {"model": "gpt", "messages": [*MESSAGES[:2], call, MESSAGES[3]]}
        return [
            {"request": first, "response": {"choices": [{"message": call}]}, "agent": "shopper"},
            {
                "request": {"body": second},
                "response": {
                    "status": 200,
                    "body": {
                        "choices": [
                            {"message": {"role": "assistant", "content": "Final answer: 58.99"}}
                        ]
                    },
                },
                "agent": "shopper",
            },
        ]

    def test_graph(self):
        bundle = trace_from_data(self.entries())
        assert types(bundle) == [
            EventType.AGENT_ACTION,
            EventType.TOOL_CALL,
            EventType.TOOL_RESULT,
            EventType.AGENT_ACTION,
            EventType.FINAL_RESULT,
        ]
        assert bundle.events[0].lane == "shopper" and bundle.events[0].agent == "shopper"
        assert bundle.events[0].request["path"] == "/v1/chat/completions"
        assert bundle.events[0].response["status"] == 200
        assert bundle.manifest["config"]["import_format"] == "openai-log"
        assert bundle.events[-1].response["value"] == "Final answer: 58.99"

    def test_error_responses_are_kept(self):
        entries = [
            {
                "request": {"messages": [{"role": "user", "content": "hi"}]},
                "response": {
                    "status": 429,
                    "body": {"error": {"type": "rate_limit_exceeded", "message": "slow"}},
                },
            }
        ]
        d = diagnose(trace_from_data(entries))
        assert Category.C3 in d.node("agent_action_0000").confirmed

    def test_jsonl_file(self, tmp_path):
        path = tmp_path / "log.jsonl"
        path.write_text("\n".join(json.dumps(e) for e in self.entries()) + "\n")
        bundle = import_trace(path)
        assert len(bundle.events) == 5
        assert bundle.manifest["config"]["imported_from"] == str(path)


class TestErrors:
    @pytest.mark.parametrize(
        ("data", "message"),
        [
            ([], "cannot tell the format"),
            ([1, 2], "cannot tell the format"),
            ({"messages": []}, "non-empty list"),
            ([{"role": "user", "content": "x"}], "no assistant message"),
            ([{"role": "wizard", "content": "x"}], "unknown or missing role"),
            ([{"role": "assistant", "tool_calls": [{"function": {}}]}], "no function name"),
            ([{"role": "assistant", "tool_calls": "f"}], "not a list"),
            ({"calls": [{"request": {}, "response": {}}]}, "no 'messages' list"),
            ({"calls": [{"request": {"messages": []}}]}, "both 'request' and 'response'"),
            ({"calls": [{"request": {"messages": []}, "response": {"x": 1}}]}, "neither"),
            ({"calls": [{"request": {"messages": []}, "response": [{}]}]}, "streamed"),
        ],
    )
    def test_malformed(self, data, message):
        with pytest.raises(TraceImportError, match=message):
            trace_from_data(data)

    def test_files(self, tmp_path):
        with pytest.raises(TraceImportError, match="no such file"):
            load_source(tmp_path / "missing.json")
        bad = tmp_path / "bad.json"
        bad.write_text("{not json")
        with pytest.raises(TraceImportError, match="not valid JSON"):
            import_trace(bad)
        lines = tmp_path / "bad.jsonl"
        lines.write_text('{"role": "user"}\n{oops\n')
        with pytest.raises(TraceImportError, match=":2: not valid JSON"):
            import_trace(lines)
        with pytest.raises(BundleNotFound):
            load_source(tmp_path)

    def test_forced_format_mismatch(self):
        with pytest.raises(TraceImportError):
            trace_from_data(MESSAGES, fmt="openai-log")

    def test_imported_traces_cannot_be_repaired(self):
        with pytest.raises(UnreplayableEvent):
            plan_repair(trace_from_data(MESSAGES))
