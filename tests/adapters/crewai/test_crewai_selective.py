"""Selective replay from a mid-run anchor: recorded prefix, anchor + guidance live, the rest
live where it depends on the anchor, and a child bundle that replays strictly."""

from __future__ import annotations

import pytest

import symtrace

from ._support import llm_events, replay_example, tool_calls, tool_runs

pytestmark = pytest.mark.framework("crewai")
GUIDANCE = "Check the rain before you recommend anything."


def live_llm_ids(child: symtrace.Bundle) -> list[str]:
    live = set(child.lineage["live_events"])
    return [e.id for e in child.events if e.is_llm and e.id in live]


def assert_exactly_live(stub, served_before: int, child: symtrace.Bundle, anchor_id: str
                        ) -> list[dict]:
    """The endpoint served the anchor first, with guidance, then only the other live calls."""
    requests = stub.requests[served_before:]
    assert len(requests) == len(live_llm_ids(child)) >= 1
    assert requests[0]["messages"][-1] == {"role": "user", "content": GUIDANCE}
    assert child.lineage["intervention"]["event_id"] == anchor_id
    assert child.lineage["anchor"] is not None
    return requests


def test_sequential_anchor_in_the_researcher_makes_the_writer_live(record, use_stub, tmp_path):
    recorded = record("sequential")
    researcher_2, writer = llm_events(recorded.events())[1:]
    ran = tool_runs()

    stub = use_stub(mode="stochastic")
    child_path = tmp_path / "child"
    replay_example(recorded.bundle, "sequential", anchor=researcher_2.id, guidance=GUIDANCE,
                   out=child_path)
    child = symtrace.load_bundle(child_path)
    assert_exactly_live(stub, 0, child, child.lineage["intervention"]["event_id"])
    assert researcher_2.id in child.lineage["superseded_events"]
    assert writer.id in child.lineage["superseded_events"], "the writer quotes the anchor"
    assert [e.agent for e in llm_events(child.events)][-1] == "Writer"
    prefix = llm_events(recorded.events())[0].id
    assert prefix in child.lineage["replayed_events"]
    live_tools = [e for e in tool_calls(child.events) if e.id in child.lineage["live_events"]
                  and e.meta.get("tool") != "crewai.current_date"]
    assert sum(tool_runs().values()) - sum(ran.values()) == len(live_tools), \
        "only live tool calls ran their bodies"

    served = stub.served
    strict = replay_example(child_path, "sequential")
    assert stub.served == served
    assert strict.final == str(child.final_result().response["value"])


def test_hierarchical_anchor_in_one_coworker_leaves_the_other_recorded(record, use_stub,
                                                                       tmp_path):
    recorded = record("hierarchical")
    manager_1, *coworkers, manager_2 = llm_events(recorded.events())
    anchor = next(e for e in coworkers if e.agent == "Researcher")
    other = next(e for e in coworkers if e.agent == "Writer")

    stub = use_stub("hierarchical")  # scripted: the live part is deterministic too
    child_path = tmp_path / "child"
    replay_example(recorded.bundle, "hierarchical", anchor=anchor.id, guidance=GUIDANCE,
                   out=child_path)
    child = symtrace.load_bundle(child_path)
    requests = assert_exactly_live(stub, 0, child, child.lineage["intervention"]["event_id"])
    assert len(requests) == 2, "the researcher (anchor) and the manager's last call"
    assert other.id in child.lineage["replayed_events"], "independent coworker stays recorded"
    assert manager_1.id in child.lineage["replayed_events"]
    assert manager_2.id in child.lineage["superseded_events"]

    served = stub.served
    replay_example(child_path, "hierarchical")
    assert stub.served == served
