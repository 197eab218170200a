"""`attribute` end to end on a failed AG2, CrewAI and AgentChat run, each recorded with
`symtrace record -- python EXAMPLE` against a scripted stub that follows guidance: the
repaired anchor calls the tool right and the run succeeds; the resampled anchor (the same
request) fails again, with its repeated tool call held to the recorded outcome. Every
rollout's child bundle then replays strictly with no request to the endpoint."""

from __future__ import annotations

import re
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from symtrace.diagnosis.attribution_run import FinalMatchOutcome, attribute
from symtrace.process.runner import record_command, replay_bundle

REPO = Path(__file__).resolve().parents[2]


def _tool_call(name: str, **arguments: object) -> dict:
    return {"name": name, "arguments": arguments}


CASES = {
    "ag2": (
        "examples/ag2/tool_error.py", "Use USD", "270.0 USD",
        [{"match": {"tool_result_present": True, "any_message_contains": "EUR = "},
          "reply": {"content": "250 EUR is 270.0 USD. TERMINATE"}},
         {"match": {"tool_result_present": True},
          "reply": {"content": "The converter has no rate for Bitcoin. TERMINATE"}},
         {"match": {"any_message_contains": "Use USD"},
          "reply": {"tool_calls": [_tool_call("convert_currency", amount=250, currency="USD")]}},
         {"match": {"has_tools": True},
          "reply": {"tool_calls": [_tool_call("convert_currency", amount=250, currency="BTC")]}}],
        {"repair": 0, "resample": 1},  # held tool calls per rollout
    ),
    "crewai": (
        "examples/crewai/tool_error.py", "Use USD", "1.08 USD",
        [{"match": {"any_message_contains": "1 EUR = 1.08 USD"},
          "reply": {"content": "1 EUR = 1.08 USD (JPY is unavailable)."}},
         {"match": {"tool_result_present": True},
          "reply": {"content": "No rate is available."}},
         {"match": {"any_message_contains": "Use USD"},
          "reply": {"tool_calls": [_tool_call("exchange_rate", currency="USD")]}},
         {"match": {"has_tools": True},
          "reply": {"tool_calls": [_tool_call("exchange_rate", currency="JPY")]}}],
        {"repair": 0, "resample": 1},
    ),
    "autogen_agentchat": (
        "examples/autogen_agentchat/streaming_tool_error.py", "Use B-200", "being packed",
        [{"match": {"tool_result_present": True, "any_message_contains": "being packed"},
          "reply": {"content": "A-100 has shipped; B-200 is being packed."}},
         {"match": {"tool_result_present": True},
          "reply": {"content": "A-100 has shipped; I could not find Z-999."}},
         {"match": {"any_message_contains": "Use B-200"},
          "reply": {"tool_calls": [_tool_call("lookup_order", order_id="A-100"),
                                   _tool_call("lookup_order", order_id="B-200")]}},
         {"match": {"has_tools": True},
          "reply": {"tool_calls": [_tool_call("lookup_order", order_id="A-100"),
                                   _tool_call("lookup_order", order_id="Z-999")]}}],
        {"repair": 1, "resample": 2},  # A-100 is held in both arms
    ),
}


@pytest.mark.slow
@pytest.mark.parametrize("framework", sorted(CASES))
def test_attribute_finds_the_repairable_step_and_children_replay(framework, tmp_path,
                                                                  stub_llm_factory, monkeypatch):
    program, guidance, success, rules, held = CASES[framework]
    stub = stub_llm_factory(script={"rules": rules, "default": {"content": "TERMINATE"}})
    monkeypatch.setenv("OPENAI_BASE_URL", stub.url)
    monkeypatch.chdir(REPO)
    failed = tmp_path / "failed"
    recorded = record_command(failed, [sys.executable, program], task="t", force=True,
                              quiet=True)
    assert recorded.exit_code == 0

    seen = []
    result = attribute(failed, out=tmp_path / "attr", k=1, budget=1, guidance=guidance,
                       outcome=FinalMatchOutcome(re.compile(success)),
                       set_env={"OPENAI_BASE_URL": stub.url}, jobs=2,
                       on_plan=lambda plan: seen.append(len(plan.rollouts)))
    assert seen == [2]  # the plan came before any rollout
    (node,) = result.nodes
    assert node.candidate.why == "the diagnosis' anchor"
    assert (node.repair.successes, node.resample.successes) == (1, 0)
    assert node.repair_value == 1.0 and node.test.repair_only == 1
    assert result.critical is None  # one pair cannot be significant: said, not guessed
    by_arm = {r.arm: r for r in result.results}
    assert {arm: r.held_tools for arm, r in by_arm.items()} == held

    served = stub.served
    with ThreadPoolExecutor(max_workers=2) as pool:  # every child replays strictly
        replays = list(pool.map(lambda r: replay_bundle(r.child, quiet=True), result.results))
    assert [again.diverged for again in replays] == [False, False], replays
    assert stub.served == served  # and sends nothing
