"""Record -> strict replay for every scenario: same transcript, no request, no tool body.

Also what each scenario must show in its bundle: who made each call (agent, lane, reason),
tool calls as tool_call/tool_result pairs on per-call lanes, data edges along the run.
"""

from __future__ import annotations

import pytest

from symtrace.bundle import load_bundle
from symtrace.model.events import EventType

from ._support import SCENARIOS

pytestmark = [
    pytest.mark.framework("autogen_agentchat"),
    pytest.mark.filterwarnings("ignore:Pydantic serializer warnings"),
]


@pytest.mark.parametrize("name", SCENARIOS)
def test_record_then_strict_replay_reproduces_the_run(name, scenario, scripted, tmp_path):
    run, stub = scenario(name), scripted(name)
    recorded = run.record(tmp_path / name)
    assert stub.served > 0
    ran_live = list(run.tool_runs)

    served = stub.served
    replayed = run.replay(tmp_path / name)

    assert replayed == recorded
    assert stub.served == served, "a strict replay must not reach the endpoint"
    assert run.tool_runs == [], "a strict replay must not run tool bodies"
    bundle = load_bundle(tmp_path / name)
    llm = [e for e in bundle.events if e.is_llm]
    assert len(llm) == served, "every request the endpoint served is an agent_action"
    assert all(e.agent for e in llm), "every model call is attributed to an agent"
    calls = [e for e in bundle.events if e.type is EventType.TOOL_CALL]
    assert len(calls) == len(ran_live)
    final = bundle.final_result().response
    assert final["value"] == recorded[-1].removeprefix("FINAL: ")



def test_an_in_process_recording_picks_the_adapter_up_by_itself(scenario, scripted, tmp_path):
    run = scenario("selector")
    scripted("selector")
    recorded = run.record(tmp_path / "run", adapters=None)  # every installed adapter
    bundle = load_bundle(tmp_path / "run")
    assert "autogen_agentchat" in bundle.config["adapters"]
    assert all(e.agent for e in bundle.events if e.is_llm)
    assert run.replay(tmp_path / "run") == recorded
