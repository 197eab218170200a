"""Issue 38: after symtrace refuses a call, the program's retries of it (CrewAI logs "Failed
to connect to OpenAI API: Connection error." per attempt, with tracebacks) are summarised in
one line under the divergence report instead of reading as network attempts; the program's
last traceback is still shown above the report, and --report-json keeps what was left out."""

from __future__ import annotations

import orjson
import pytest

from symtrace.process.held_stderr import Held

from .conftest import PROGRAMS, run_cli

LOGGED = (
    "ERROR:root:Failed to connect to OpenAI API: Connection error.\n"
    "Traceback (most recent call last):\n"
    '  File "app.py", line 3, in ask\n'
    "    client.create()\n"
    "openai.APIConnectionError: Connection error.\n"
)
LAST = (
    "Traceback (most recent call last):\n"
    '  File "app.py", line 9, in ask\n'
    "openai.APIConnectionError: Connection error.\n"
    "\n"
    "The above exception was the direct cause of the following exception:\n"
    "\n"
    "Traceback (most recent call last):\n"
    '  File "app.py", line 12, in <module>\n'
    "ConnectionError: Failed to connect to OpenAI API: Connection error.\n"
)


def test_the_last_traceback_chain_is_kept_and_the_retries_before_it_left_out():
    held = Held.split(LOGGED * 3 + LAST)
    assert held.kept == LAST  # the whole chain, from its first "Traceback"
    assert held.left_out == LOGGED * 3
    summary = held.summary()
    assert summary is not None and "\n" not in summary
    assert "left out 15 lines" in summary and "3 tracebacks" in summary
    assert "3× 'ERROR:root:Failed to connect to OpenAI API: Connection error.'" in summary
    assert "--report-json" in summary


def test_without_a_traceback_everything_is_kept():
    text = "ERROR:root:Failed to connect\nERROR:root:giving up\n"
    held = Held.split(text)
    assert (held.kept, held.left_out, held.summary()) == (text, "", None)


def test_a_traceback_raised_while_handling_another_is_one_chain():
    chained = LAST.replace("The above exception was the direct cause of the following exception:",
                           "During handling of the above exception, another exception occurred:")
    assert Held.split(LOGGED + chained).kept == chained


@pytest.mark.slow
def test_a_refused_call_retried_three_times_is_one_line_under_the_report(endpoint, tmp_path):
    program = str(PROGRAMS / "retrying.py")
    bundle = tmp_path / "b"
    done = run_cli("record", "-o", str(bundle), "--", "python", program, env=endpoint)
    assert done.returncode == 0, done.stderr
    report_json = tmp_path / "report.json"
    done = run_cli("replay", str(bundle), "--report-json", str(report_json),
                   env={**endpoint, "PROMPT_GOAL": "Be verbose."})
    assert done.returncode == 90, done.stderr[-3000:]
    err = done.stderr
    report_at = err.rindex("[SYM-R101]")
    # one traceback, the program's last, above the report; no retry reads as a new attempt
    assert err.count("Traceback (most recent call last)") == 1
    assert err.index("Traceback (most recent call last)") < report_at
    assert err.count("ERROR:root:Failed to connect") == 1  # inside the summary only
    summary = err[err.rindex("symtrace: left out"):]
    assert "3×" in summary and "3 tracebacks" in summary
    assert err.index("symtrace: left out") > report_at  # under the report
    left_out = orjson.loads(report_json.read_bytes())["stderr_left_out"]
    assert left_out.count("ERROR:root:Failed to connect to OpenAI API") == 3


def test_a_chained_traceback_counts_once():
    summary = Held.split(LAST * 2 + LAST).summary()
    assert summary is not None and "2 tracebacks" in summary
