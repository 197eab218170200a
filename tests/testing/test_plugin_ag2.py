"""@pytest.mark.symtrace end to end through a real AG2 two-agent chat (tools included)
against the embedded endpoint, in every mode, run as inner pytest sessions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.testing.inner import run_inner

pytest.importorskip("autogen")  # imported once here; inner runs reuse it

pytest_plugins = ["pytester"]  # in the module: a non-root conftest may not

INNER = '''
import json
from pathlib import Path

import pytest
from autogen import AssistantAgent, UserProxyAgent, register_function

PROMPT = "{prompt}"
SCRIPT = {{
    "rules": [
        {{"match": {{"tool_result_present": True}},
          "reply": {{"content": "Lisbon is 21 degrees. TERMINATE"}}}},
        {{"match": {{"has_tools": True}},
          "reply": {{"tool_calls": [{{"name": "lookup_weather",
                                      "arguments": {{"city": "Lisbon"}}}}]}}}},
    ],
    "default": {{"content": "TERMINATE"}},
}}
BODY_RUNS = []


def lookup_weather(city: str) -> str:
    BODY_RUNS.append(city)
    return city + ": 21 degrees"


@pytest.mark.symtrace
def test_chat(stub_llm_factory, symtrace_bundle):
    stub = stub_llm_factory(script=SCRIPT)
    config = {{"config_list": [{{"model": "stub-model", "base_url": stub.url,
                                "api_key": "sk-test", "price": [0.0, 0.0]}}],
               "cache_seed": None}}
    assistant = AssistantAgent("assistant", system_message=PROMPT, llm_config=config)
    user = UserProxyAgent("user_proxy", human_input_mode="NEVER", code_execution_config=False,
                          max_consecutive_auto_reply=4,
                          is_termination_msg=lambda m: "TERMINATE" in str(m.get("content")))
    register_function(lookup_weather, caller=assistant, executor=user,
                      description="Weather for a city")
    result = user.initiate_chat(assistant, message="Weather in Lisbon?", silent=True)
    with Path("runs.jsonl").open("a") as fh:
        fh.write(json.dumps({{"action": symtrace_bundle.action.value,
                             "stub_requests": stub.served,
                             "tool_bodies": len(BODY_RUNS)}}) + "\\n")
    assert "TERMINATE" in str(result.chat_history[-1]["content"])
'''
BUNDLE = Path("bundles") / "test_chat" / "test_chat"


def write_test(pytester: pytest.Pytester, prompt: str = "You are a weather assistant.") -> None:
    pytester.makepyfile(test_chat=INNER.format(prompt=prompt))


def runs(pytester: pytest.Pytester) -> list[dict[str, object]]:
    lines = (pytester.path / "runs.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def seed_of(pytester: pytest.Pytester) -> int:
    manifest = json.loads((pytester.path / BUNDLE / "manifest.json").read_text())
    return manifest["initial_state"]["random_seed"]


@pytest.fixture
def recorded(pytester: pytest.Pytester) -> pytest.Pytester:
    """An inner project whose test_chat has been recorded once (mode once, CI unset)."""
    write_test(pytester)
    result = run_inner(pytester)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["symtrace: mode once (from default)*",
                                 "symtrace: recorded 1 bundle(s), replayed 0*"])
    assert runs(pytester) == [{"action": "record", "stub_requests": 2, "tool_bodies": 1}]
    assert (pytester.path / BUNDLE / "manifest.json").is_file()
    return pytester


def test_once_and_none_replay_without_touching_the_endpoint(recorded: pytest.Pytester):
    result = run_inner(recorded)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["symtrace: recorded 0 bundle(s), replayed 1*"])
    assert runs(recorded)[-1] == {"action": "replay", "stub_requests": 0, "tool_bodies": 0}
    result = run_inner(recorded, "--symtrace-mode=none")
    result.assert_outcomes(passed=1)
    assert runs(recorded)[-1] == {"action": "replay", "stub_requests": 0, "tool_bodies": 0}


def test_changed_prompt_fails_with_the_divergence_report_not_a_traceback(
    recorded: pytest.Pytester,
):
    write_test(recorded, prompt="You are a terse weather assistant.")
    result = run_inner(recorded)
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    result.stdout.fnmatch_lines([
        "*symtrace: the test's run diverged from its recorded bundle (mode once from default)",
        "*[[]SYM-R101] request does not match the recording at agent_action_0000",
        "*lane assistant; recorded position 0*",
        "*/body/messages/0/content (message 0, system) differs*",
        "*expected llm request: 'You are a weather assistant.'",
        "*actual   llm request: 'You are a terse weather assistant.'",
        '*re-record it: pytest --symtrace-mode=rewrite "test_chat.py::test_chat"',
    ])
    section = out[out.index("_ test_chat _"):out.index("short test summary")]
    assert "Traceback" not in section and "site-packages" not in section
    assert "Connection error" not in section and "During handling" not in section
    assert len(section.splitlines()) < 30, section
    assert len(runs(recorded)) == 1  # the replayed chat stopped at its first LLM call


def test_mode_none_with_a_missing_bundle_fails_clearly(pytester: pytest.Pytester,
                                                       monkeypatch: pytest.MonkeyPatch):
    write_test(pytester)
    monkeypatch.setenv("CI", "true")
    result = run_inner(pytester)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "symtrace: mode none (from $CI)",
        "*symtrace: no bundle for this test at *test_chat*",
        "*mode none (from $CI) replays only and never records*",
    ])
    assert not (pytester.path / "runs.jsonl").exists()  # the body never ran
    assert not (pytester.path / BUNDLE).exists()


def test_rewrite_re_records_and_new_re_records_only_changed_tests(recorded: pytest.Pytester):
    first_seed = seed_of(recorded)
    result = run_inner(recorded, "--symtrace-mode=rewrite")
    result.assert_outcomes(passed=1)
    assert runs(recorded)[-1] == {"action": "record", "stub_requests": 2, "tool_bodies": 1}
    assert seed_of(recorded) != first_seed  # a fresh recording, not the old bundle

    result = run_inner(recorded, "--symtrace-mode=new")
    result.assert_outcomes(passed=1)
    assert runs(recorded)[-1]["action"] == "replay"

    write_test(recorded, prompt="You are a terse weather assistant.")
    result = run_inner(recorded, "--symtrace-mode=new")
    result.assert_outcomes(passed=1)
    assert runs(recorded)[-1] == {"action": "record", "stub_requests": 2, "tool_bodies": 1}
    result = run_inner(recorded, "--symtrace-mode=none")
    result.assert_outcomes(passed=1)  # the re-recorded bundle matches the changed test
    assert runs(recorded)[-1]["stub_requests"] == 0
