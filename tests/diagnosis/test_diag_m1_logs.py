"""Magentic-One logs as captured by a benchmark harness (the Who&When "hand-crafted" shape):
console lines inside messages, WebSurfer/FileSurfer turns that carry a tool run and its page,
a runtime traceback after a message. Each reading has a positive and a negative case; all text
here is synthetic."""

from __future__ import annotations

import pytest

from symtrace.diagnosis import diagnose
from symtrace.diagnosis.anchors import decisions
from symtrace.diagnosis.dialects import TurnKind, classify_turn, observed_tool, split_console
from symtrace.diagnosis.importers import trace_from_data
from symtrace.diagnosis.symptoms import Category
from symtrace.diagnosis.view import build_context
from symtrace.model.events import EventType

WARNING = (
    "/opt/py/site-packages/magentic/orchestrator.py:88: UserWarning: model alias differs.\n"
    "  reply = await self._client.create("
)
RUNTIME = (
    "Error processing publish message\nTraceback (most recent call last):\n"
    '  File "/opt/py/site-packages/runtime/core.py", line 12, in deliver\n'
    "    await handler(message)\n"
    "llmclient.BadRequestError: Error code: 400 - {'error': 'prompt rejected'}"
)
END = "FINAL ANSWER: Lisbon\nSCENARIO.PY COMPLETE !#!#\nRUN.SH COMPLETE !#!#"
PAGE = (
    "\n\nHere is a screenshot of [Maps - Search](https://search.example/q?x=porto). The viewport "
    "shows 40% of the webpage, and is positioned at the top of the page.\nResults: Porto 313 km"
)


def steps(*turns: tuple[str, str]) -> dict:
    trajectory = [{"step": i, "agent_name": a, "content": c} for i, (a, c) in enumerate(turns)]
    return {"question": "How far is Porto from Lisbon?", "trajectory": trajectory}


def by_type(bundle, type_):
    return [e for e in bundle.events if e.type is type_]


class TestConsoleLines:
    def test_a_warning_after_next_speaker_keeps_it_control(self):
        text = f"Next speaker FileSurfer\n{WARNING}"
        console = split_console(text)
        assert console.text == "Next speaker FileSurfer" and console.failures == ()
        turn = classify_turn("Orchestrator (thought)", console.text)
        assert (turn.kind, turn.reason) == (TurnKind.CONTROL, "speaker_selection")

    def test_text_without_console_lines_is_unchanged(self):
        text = "The file ends at line 88: UserWarning is a class name we can ignore.\n  indented"
        assert split_console(text).text == text

    def test_end_of_run_final_answer_is_the_runs_output_not_the_agents_claim(self):
        data = steps(("human", "How far?"), ("Orchestrator (-> WebSurfer)", "Find the distance."),
                     ("WebSurfer", f"Porto is 313 km away.\n{WARNING}\n{END}"))  # fmt: skip
        bundle = trace_from_data(data)
        final = by_type(bundle, EventType.FINAL_RESULT)[0]
        assert final.response["value"] == "Lisbon"
        surfer = by_type(bundle, EventType.AGENT_ACTION)[-1]
        content = surfer.response["body"]["choices"][0]["message"]["content"]
        assert content == "Porto is 313 km away."
        view = build_context(bundle).by_id[surfer.id]
        assert not view.final_style  # the harness's FINAL ANSWER is not WebSurfer's claim

    def test_an_agents_own_final_answer_line_stays_its_text(self):
        """Negative: without the harness's end-of-run marker, FINAL ANSWER is agent content."""
        data = steps(("human", "How far?"), ("Assistant", "FINAL ANSWER: 313 km"))
        bundle = trace_from_data(data)
        assert by_type(bundle, EventType.FINAL_RESULT)[0].response["value"] == (
            "FINAL ANSWER: 313 km"
        )
        assert split_console("FINAL ANSWER: 313 km").final_answer is None

    def test_runtime_traceback_is_a_failed_control_call_after_the_message(self):
        data = steps(("human", "How far?"), ("Orchestrator (-> WebSurfer)", "Find the distance."),
                     ("WebSurfer", f"Porto is 313 km away.\n{RUNTIME}"),
                     ("Orchestrator (thought)", "Next speaker WebSurfer"))  # fmt: skip
        bundle = trace_from_data(data)
        actions = by_type(bundle, EventType.AGENT_ACTION)
        failure = actions[2]
        assert (failure.agent, failure.reason) == ("runtime", "runtime_error")
        assert failure.response["status"] == 400
        assert failure.response["body"]["error"]["type"] == "BadRequestError"
        assert failure.meta == {"step": 2}
        content = actions[1].response["body"]["choices"][0]["message"]["content"]
        assert content == "Porto is 313 km away."
        d = diagnose(bundle)
        assert Category.C3 in d.node(failure.id).proposed
        assert failure.id not in [v.id for v in decisions(d.context)]  # never an anchor itself

    def test_a_runtime_traceback_after_a_terminal_reply_is_kept_too(self):
        code = "Run it:\n```python\nprint(313)\n```"
        data = steps(("human", "How far?"), ("Assistant", code),
                     ("ComputerTerminal", "The script ran, then exited with Unix exit code: 0"
                      f"\nIts output was:\n313\n{RUNTIME}"))  # fmt: skip
        bundle = trace_from_data(data)
        result = by_type(bundle, EventType.TOOL_RESULT)[0]
        assert result.response == {"ok": True, "value": "Its output was:\n313"}
        failure = by_type(bundle, EventType.AGENT_ACTION)[-1]
        assert (failure.reason, failure.response["status"]) == ("runtime_error", 400)

    def test_an_exec_traceback_is_not_a_runtime_failure(self):
        """Negative: a traceback in a program's output (no runtime header) stays content."""
        text = RUNTIME.split("\n", 1)[1]
        console = split_console(text)
        assert console.failures == () and console.text == text


class TestWebSurfer:
    def test_action_and_page_become_a_call_and_its_result(self):
        data = steps(
            ("human", "How far?"),
            ("Orchestrator (-> WebSurfer)", "Search it."),
            ("WebSurfer", "I typed 'porto lisbon km' into the browser search bar." + PAGE),
        )
        bundle = trace_from_data(data)
        call = by_type(bundle, EventType.TOOL_CALL)[0]
        result = by_type(bundle, EventType.TOOL_RESULT)[0]
        assert call.request == {"tool": "web_search", "arguments": {"query": "porto lisbon km"}}
        assert call.agent == "WebSurfer" and call.meta.get("step") is None
        assert result.response["ok"] is True
        assert result.response["value"]["url"] == "https://search.example/q?x=porto"
        assert result.response["value"]["page"].endswith("Results: Porto 313 km")
        assert result.meta == {"step": 2}
        ctx = build_context(bundle)
        assert [(v.agent, v.step) for v in decisions(ctx)] == [("Orchestrator", 1),
                                                               ("WebSurfer", 2)]  # fmt: skip

    def test_the_same_click_twice_is_a_repeated_action(self):
        click = "I clicked 'Distance table'." + PAGE
        data = steps(("human", "How far?"), ("Orchestrator (-> WebSurfer)", "Open the table."),
                     ("WebSurfer", click), ("Orchestrator (-> WebSurfer)", "Open the table."),
                     ("WebSurfer", click))  # fmt: skip
        bundle = trace_from_data(data)
        d = diagnose(bundle)
        second = by_type(bundle, EventType.TOOL_CALL)[1]
        assert Category.C2 in d.node(second.id).proposed

    def test_different_clicks_to_different_pages_are_not_repeats(self):
        # (The same page URL twice is a repeated action URL by Table 10's C2, even for
        # different clicks: so the negative case lands on a different page.)
        other = PAGE.replace("q?x=porto", "trains")
        data = steps(("human", "How far?"), ("WebSurfer", "I clicked 'Distance table'." + PAGE),
                     ("WebSurfer", "I clicked 'Train times'." + other))  # fmt: skip
        d = diagnose(trace_from_data(data))
        assert not any(Category.C2 in n.proposed for n in d.nodes)

    @pytest.mark.parametrize(
        "text",
        [
            "I typed 'porto lisbon km' into the search bar.",  # no page block: a plain report
            "I think the distance is 313 km." + PAGE,  # prose, not an action description
        ],
    )
    def test_other_websurfer_text_stays_a_plain_decision(self, text):
        assert observed_tool(text) is None
        bundle = trace_from_data(steps(("human", "How far?"), ("WebSurfer", text)))
        assert by_type(bundle, EventType.TOOL_CALL) == []


class TestFileSurfer:
    MISSING = ("Address: file:///work/report.pdf\nTitle: Error 404\nViewport position: Showing "
               "page 1 of 1.\n=======================\n## Error 404\n\nFile not found: "
               "/work/report.pdf")  # fmt: skip
    FOUND = ("Address: file:///work/notes.txt\nTitle: notes.txt\nViewport position: Showing "
             "page 1 of 2.\n=======================\nPorto - Lisbon: 313 km")  # fmt: skip

    def test_missing_file_is_a_failed_result_and_a_retry_is_c2(self):
        data = steps(("human", "How far?"), ("Orchestrator (-> FileSurfer)", "Open the report."),
                     ("FileSurfer", self.MISSING), ("Orchestrator (-> FileSurfer)", "Again."),
                     ("FileSurfer", self.MISSING))  # fmt: skip
        bundle = trace_from_data(data)
        results = by_type(bundle, EventType.TOOL_RESULT)
        assert results[0].response["ok"] is False
        assert results[0].response["error"]["message"] == "File not found: /work/report.pdf"
        d = diagnose(bundle)
        assert Category.C3 in d.node(results[0].id).proposed
        second_call = by_type(bundle, EventType.TOOL_CALL)[1]
        assert Category.C2 in d.node(second_call.id).proposed
        assert d.anchor is not None

    def test_a_file_address_is_the_tools_local_path(self):
        # The failure quotes the path the call was given, so the trace-back reaches the
        # FileSurfer decision that asked for the missing file.
        data = steps(("human", "How far?"), ("FileSurfer", self.MISSING),
                     ("Orchestrator (-> FileSurfer)", "Try the report again."))  # fmt: skip
        bundle = trace_from_data(data)
        call = by_type(bundle, EventType.TOOL_CALL)[0]
        assert call.request["arguments"] == {"path": "/work/report.pdf", "page": "1"}
        # Without the trace-back the handler downstream is anchored; with it, the caller.
        assert diagnose(bundle, trace_back=False).anchor.anchor == "agent_action_0001"
        assert diagnose(bundle).anchor.anchor == "agent_action_0000"
        web = self.FOUND.replace("file:///work/notes.txt", "https://site.example/a%20b")
        other = observed_tool(web)
        assert other is not None and other.arguments["path"] == "https://site.example/a%20b"

    def test_a_revisited_page_is_read_too(self):
        revisit = self.FOUND.replace("\nViewport", "\nYou previously visited this page 4 seconds "
                                     "ago.\nViewport")  # fmt: skip
        again = observed_tool(revisit)
        assert again is not None and again.value["page"] == "Porto - Lisbon: 313 km"
        other = self.FOUND.replace("\nViewport", "\nSome other line.\nViewport")
        assert observed_tool(other) is None  # an unknown header line is not guessed at

    def test_a_page_that_opened_is_an_ok_result(self):
        bundle = trace_from_data(steps(("human", "How far?"), ("FileSurfer", self.FOUND)))
        result = by_type(bundle, EventType.TOOL_RESULT)[0]
        assert result.response["ok"] is True
        assert result.response["value"]["page"] == "Porto - Lisbon: 313 km"
        d = diagnose(bundle)
        assert not any(Category.C3 in n.proposed for n in d.nodes)


class TestStockPhrases:
    @pytest.mark.parametrize(
        ("name", "text", "kind", "reason"),
        [
            ("Orchestrator (thought)", "Request satisfied.", TurnKind.CONTROL, "request_satisfied"),
            ("Orchestrator (thought)", "Stalled.... Replanning...", TurnKind.CONTROL,
             "stall_notice"),
            ("ComputerTerminal", "No code block detected in the messages. Please provide a "
             "markdown-encoded code block to execute.", TurnKind.CONTROL, "no_code_to_execute"),
            # Negative: agent prose that merely starts alike stays a decision.
            ("Assistant", "Request satisfied. The distance is 313 km.", TurnKind.DECISION, None),
            ("Assistant", "Stalled progress means we should replan.", TurnKind.DECISION, None),
            ("Assistant", "No code block detected yet, so I write one.", TurnKind.DECISION, None),
        ],
    )  # fmt: skip
    def test_orchestrator_and_terminal_notes(self, name, text, kind, reason):
        turn = classify_turn(name, text)
        assert (turn.kind, turn.reason) == (kind, reason)

    def test_older_terminal_wording_is_an_exec_result(self):
        failed = classify_turn("ComputerTerminal", "The script ran, then exited with Unix exit "
                               "code: 2\nIts output was:\nKeyError: 'km'")  # fmt: skip
        assert failed.kind is TurnKind.EXEC_RESULT and failed.failed and failed.exit_code == 2
        assert failed.error_type == "KeyError"
        ok = classify_turn("ComputerTerminal", "The script ran, then exited with Unix exit "
                           "code: 0\nIts output was:\n313")  # fmt: skip
        assert ok.kind is TurnKind.EXEC_RESULT and not ok.failed
        prose = classify_turn("Assistant", "The script ran fine on my side; exit code 0.")
        assert prose.kind is TurnKind.DECISION

    def test_file_surfer_argument_error_is_a_failed_result(self):
        text = "File surfer encountered an error decoding JSON arguments: Expecting value"
        bundle = trace_from_data(steps(("human", "How far?"), ("FileSurfer", text)))
        result = by_type(bundle, EventType.TOOL_RESULT)[0]
        assert result.response["ok"] is False
        assert result.response["error"]["message"] == text
        assert observed_tool("File surfer reports the table has 3 rows.") is None
