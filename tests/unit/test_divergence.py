"""The divergence report is a value: JSON round trip, pinned rendering, first differing paths."""

from __future__ import annotations

from symtrace.model.divergence import (
    Candidate,
    DivergenceKind,
    DivergenceReport,
    json_differences,
)

REPORT = DivergenceReport(
    kind=DivergenceKind.REQUEST_MISMATCH,
    bundle="bundles/run1",
    bundle_digest="sha256:" + "ab" * 32,
    position=3,
    event_id="agent_action_0002",
    lane="writer",
    agent="writer",
    boundary="llm",
    matched_before=3,
    expected={"body": {"messages": [{"role": "user", "content": "extract quotes from text"}]}},
    actual={"body": {"messages": [{"role": "user", "content": "extract quotes from the text"}]}},
    expected_hash="sha256:" + "11" * 32,
    actual_hash="sha256:" + "22" * 32,
    differences=json_differences(
        {"body": {"messages": [{"role": "user", "content": "extract quotes from text"}]}},
        {"body": {"messages": [{"role": "user", "content": "extract quotes from the text"}]}},
    ),
    nearest=(Candidate("agent_action_0002", 3, "agent_action", "writer", "writer",
                       "user: extract quotes from text"),),
    causal_parents=("tool_result_0001",),
    rules=("sort-keys",),
    warnings=("openai was 2.54.0 when recorded, is 2.60.0 now",),
    hint="the prompt changed upstream of this call",
)


def test_json_round_trip():
    assert DivergenceReport.from_json(REPORT.to_json()) == REPORT


def test_rendering_is_pinned():
    assert REPORT.render() == (
        "[SYM-R101] request does not match the recording at agent_action_0002\n"
        "  lane writer; recorded position 3; 3 boundary calls matched before it\n"
        "  bundle bundles/run1 (events digest sha256:abababababab); request hash 11111111 → "
        "22222222\n"
        "  /body/messages/0/content (message 0, user) differs:\n"
        "  expected llm request: 'extract quotes from text'\n"
        "  actual   llm request: 'extract quotes from the text'\n"
        "  causal parents of the expected event: tool_result_0001\n"
        "  warning: openai was 2.54.0 when recorded, is 2.60.0 now\n"
        "  hint: the prompt changed upstream of this call"
    )


def test_differences_report_missing_and_extra_keys_and_items():
    diffs = json_differences({"a": [1, 2], "b": 1}, {"a": [1], "c": 2})
    assert [(d.path, d.expected, d.actual) for d in diffs] == [
        ("/a/1", 2, "<absent>"), ("/b", 1, "<absent>"), ("/c", "<absent>", 2)]
    assert json_differences({"x": 1}, {"x": 1.5})[0].path == "/x"
    assert json_differences({"a/b": 1}, {"a/b": 2})[0].path == "/a~1b"
