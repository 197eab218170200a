"""Issue 21, points 1, 2 and 5: a divergence report a person can read.

The excerpt is around the first differing character of the differing field, both sides, word
by word, on one screen at 80 and 120 columns; the `expected`/`actual` lines quote the message
that differs; the report ends the output and says that the program's traceback above is its
consequence; a replay of another command says so and never prints "position None".
"""

from __future__ import annotations

import pytest

from symtrace.model.divergence import Candidate, DivergenceKind, DivergenceReport, json_differences

from .conftest import ANSI, PROMPTED, run_cli, too_wide

PREFIX = (
    "You are the travel researcher of a small agency. You help customers plan trips in "
    "southern Europe: you look up prices, convert currencies and check opening hours. Be "
    "brief, precise and polite; never invent numbers; say so when a tool fails. "
)
OLD = "Always answer in euros and cite the rate."
NEW = "Always answer in dollars and cite the rate."


def request(goal: str) -> dict:
    return {"body": {"model": "stub-model", "messages": [
        {"role": "system", "content": PREFIX + goal},
        {"role": "user", "content": "What do 300 EUR make in GBP?"},
    ]}, "method": "POST", "url": "http://127.0.0.1:1/v1/chat/completions"}


def mismatch(expected: dict, actual: dict) -> DivergenceReport:
    return DivergenceReport(
        kind=DivergenceKind.REQUEST_MISMATCH, bundle="/tmp/some/where/bundles/run1",
        bundle_digest="sha256:" + "ab" * 32, position=0, event_id="agent_action_0000",
        lane="main", agent=None, boundary="llm", matched_before=0,
        expected=expected, actual=actual, expected_hash="sha256:" + "11" * 32,
        actual_hash="sha256:" + "22" * 32, differences=json_differences(expected, actual),
        nearest=(Candidate("agent_action_0000", 0, "agent_action", "main", None,
                           "user: What do 300 EUR make in GBP?"),),
        hint="the request changed upstream of this call",
    )


def side(text: str, label: str) -> str:
    (line,) = [ln for ln in text.splitlines() if ln.lstrip().startswith(label)]
    return line


@pytest.mark.parametrize("width", [80, 120])
def test_change_at_the_end_of_a_long_prompt_is_shown_on_both_sides(width):
    text = mismatch(request(OLD), request(NEW)).render(width=width)
    assert not too_wide(text, width), text
    expected, actual = side(text, "expected"), side(text, "actual")
    assert "euros" in expected and "dollars" not in expected
    assert "dollars" in actual and "euros" not in actual
    assert expected.split("llm", 1)[1] != actual.split("llm", 1)[1]
    assert "/body/messages/0/content" in text
    assert "system" in text  # which message differs, in words
    assert not ANSI.search(text)


def test_word_level_marks_and_context_without_color():
    text = mismatch(request(OLD), request(NEW)).render(width=100)
    assert "[-euros-]" in side(text, "expected") and "{+dollars+}" in side(text, "actual")
    # the words around the change are shown, the long start of the prompt is not
    assert "Always answer in" in side(text, "expected")
    assert "You are the travel researcher" not in side(text, "expected")


def test_color_marks_the_change_instead_of_brackets():
    text = mismatch(request(OLD), request(NEW)).render(width=100, color=True)
    assert ANSI.search(text) and "[-euros-]" not in text
    assert "euros" in ANSI.sub("", side(text, "expected"))


def test_the_differing_message_is_quoted_not_the_last_one():
    a, b = request(OLD), request(NEW)
    for req in (a, b):
        req["body"]["messages"].append({"role": "user", "content": "the same last message"})
    text = mismatch(a, b).render(width=80)
    assert "the same last message" not in side(text, "expected")
    assert side(text, "expected") != side(text, "actual")


def test_a_non_text_difference_shows_both_values():
    a, b = request(OLD), request(OLD)
    b["body"]["model"] = "stub-model-old"
    text = mismatch(a, b).render(width=80)
    assert "/body/model" in text
    assert "stub-model" in side(text, "expected")
    assert "stub-model-old" in side(text, "actual")


def test_unexpected_call_with_records_left_is_not_the_end_of_the_recording():
    report = DivergenceReport(
        kind=DivergenceKind.UNEXPECTED_CALL, bundle="b", bundle_digest="sha256:" + "ab" * 32,
        position=None, event_id=None, lane="task:Task-15", agent=None, boundary="llm",
        matched_before=0, actual=request(NEW), actual_hash="sha256:" + "22" * 32,
        nearest=(Candidate("agent_action_0000", 0, "agent_action", "main", None, "user: hi"),),
        hint="the recording has no calls on lane 'task:Task-15'",
    )
    text = report.render(width=80)
    assert "None" not in text
    assert "end of recording" not in text
    assert "agent_action_0000" in text  # what the recording expected instead


def test_unexpected_call_after_the_last_record_says_so():
    report = DivergenceReport(
        kind=DivergenceKind.UNEXPECTED_CALL, bundle="b", bundle_digest="sha256:" + "ab" * 32,
        position=None, event_id=None, lane="main", agent=None, boundary="llm",
        matched_before=4, actual=request(NEW), actual_hash="sha256:" + "22" * 32,
    )
    text = report.render(width=80)
    assert "None" not in text
    assert "after the last recorded call" in " ".join(text.split())


def test_command_change_round_trips_and_is_rendered():
    report = mismatch(request(OLD), request(NEW))
    from dataclasses import replace

    changed = replace(report, recorded_command=("python", "app.py"),
                      replayed_command=("python", "other.py"))
    assert DivergenceReport.from_json(changed.to_json()) == changed
    text = changed.render(width=80)
    assert "differs from the recorded one" in text
    assert "app.py" in text and "other.py" in text


# -- end to end: a real program, a real replay ---------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("width", [80, 120])
def test_edited_prompt_report_ends_the_output(prompted_bundle, width):
    done = run_cli("replay", str(prompted_bundle), columns=width,
                   env={"PROMPT_GOAL": "Always answer in dollars and cite the exchange rate "
                        "you used."})
    assert done.returncode == 90, done.stderr[-3000:]
    err = done.stderr
    assert not ANSI.search(err) and not ANSI.search(done.stdout)
    start = err.rindex("[SYM-R101]")
    report = err[start:]
    assert "Traceback" in err[:start]  # the SDK's retries of the refused call come first
    assert "Traceback" not in report  # and the report is the last thing printed
    # the program's traceback names the divergence in one line; the full report is printed
    # once, at the end, not inside every retry's traceback
    assert err.count("/body/messages/0/content") == 1
    assert not too_wide(report, width), report
    assert "euros" in side(report, "expected") and "dollars" in side(report, "actual")
    consequence = [ln for ln in report.splitlines() if "consequence" in ln]
    assert len(consequence) == 1 and "above" in consequence[0]
    assert report.rstrip().splitlines()[-1].strip()  # ends on the report, not a blank tail


@pytest.mark.slow
def test_replaying_another_program_says_the_command_differs(prompted_bundle, tmp_path):
    other = tmp_path / "other.py"
    other.write_text(
        "from openai import OpenAI\n"
        "OpenAI(max_retries=0).chat.completions.create(model='m', messages=[\n"
        "    {'role': 'user', 'content': 'a different program'}])\n"
    )
    report_json = tmp_path / "report.json"
    done = run_cli("replay", str(prompted_bundle), "--report-json", str(report_json), "--",
                   "python", str(other))
    assert done.returncode == 90, done.stderr[-3000:]
    err = done.stderr
    assert "position None" not in err and "None" not in err[err.rindex("[SYM-R"):]
    assert "end of recording" not in err
    assert "differs from the recorded one" in err
    assert "other.py" in err and "prompted.py" in err
    import orjson

    data = orjson.loads(report_json.read_bytes())["report"]
    assert data["replayed_command"][-1] == str(other)
    assert data["recorded_command"][-1] == PROMPTED
