"""Selective replay: the recorded prefix is served, the anchor goes live with guidance, and
everything causally after it runs live; the child bundle then replays strictly."""

from __future__ import annotations

import pytest

import symtrace
from symtrace.bundle import load_bundle

pytestmark = [
    pytest.mark.framework("autogen_agentchat"),
    pytest.mark.filterwarnings("ignore:Pydantic serializer warnings"),
]

GUIDANCE = "Before choosing the next speaker, check that the figures were looked up."


def llm_from(bundle, anchor):
    events = [e for e in bundle.events if e.is_llm]
    start = next(i for i, e in enumerate(events) if e.id == anchor)
    return events[start:]


def test_from_a_progress_ledger_anchor(scenario, scripted, tmp_path):
    run = scenario("magentic_one")
    stub = scripted("magentic_one")
    recorded = run.record(tmp_path / "run")
    parent = load_bundle(tmp_path / "run")
    anchor = next(e for e in parent.events if e.reason == "progress_ledger")
    expected_live = llm_from(parent, anchor.id)

    stub.reset()
    run.tool_runs.clear()
    with symtrace.replay(tmp_path / "run", anchor=anchor.id, guidance=GUIDANCE,
                                       placement="system", out=tmp_path / "child"):
        repaired = run.run()

    # The endpoint saw exactly the anchor and what followed it, the anchor with guidance.
    assert stub.served == len(expected_live)
    first = stub.requests[0]["messages"]
    assert first[0] == {"role": "system", "content": GUIDANCE}
    assert all(GUIDANCE not in str(r["messages"]) for r in stub.requests[1:])
    # The researcher's turn depends on the ledger's instruction: it ran live, tools too.
    # (its two tools run on a thread pool under asyncio.gather: in no promised order)
    assert sorted(run.tool_runs) == ["get_area(Lisbon)", "get_population(Lisbon)"]
    assert repaired == recorded  # the scripted endpoint answers the same

    child = load_bundle(tmp_path / "child")
    lineage = child.lineage
    assert lineage["anchor"] == anchor.id
    assert len(lineage["replayed_events"]) == 2  # facts and plan
    assert lineage["not_reached_events"] == []
    served = stub.served
    assert run.replay(tmp_path / "child") == repaired
    assert stub.served == served
    assert run.tool_runs == []


def test_from_an_agent_anchor_with_user_guidance(scenario, scripted, tmp_path):
    run = scenario("round_robin")
    stub = scripted("round_robin")
    run.record(tmp_path / "run")
    parent = load_bundle(tmp_path / "run")
    critic = [e for e in parent.events if e.agent == "critic"]
    anchor = critic[0]

    stub.reset()
    guidance = "Mention the Tagus river and the trams; keep it to one sentence."
    with symtrace.replay(tmp_path / "run", anchor=anchor.id, guidance=guidance,
                                       out=tmp_path / "child"):
        repaired = run.run()
    assert stub.served == len(llm_from(parent, anchor.id))
    assert stub.requests[0]["messages"][-1] == {"role": "user", "content": guidance}
    assert repaired[-1].startswith("FINAL: ")
    served = stub.served
    assert run.replay(tmp_path / "child") == repaired
    assert stub.served == served
