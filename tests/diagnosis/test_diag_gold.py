"""The four gold examples of App. G, rebuilt as small traces: each raises the paper's category
at the paper's node, and the pipeline produces a replayable anchor for it."""

from __future__ import annotations

import pytest

from symtrace.diagnosis import Category, build_guidance, diagnose

from ._support import gold_c1, gold_c2, gold_c3, gold_c4

GOLD = [
    # (builder, paper's node, paper's category, a word the evidence must quote)
    (gold_c1, "final_result_0000", Category.C1, "browse"),
    (gold_c2, "tool_result_0002", Category.C2, "Stephen_King"),
    (gold_c3, "tool_result_0000", Category.C3, "MissingSchema"),
    (gold_c4, "agent_action_0000", Category.C4, "obtain the actual data"),
]


@pytest.mark.parametrize(
    ("build", "node_id", "category", "quoted"), GOLD, ids=["C1", "C2", "C3", "C4"]
)
def test_gold_category_at_gold_node(build, node_id, category, quoted):
    diagnosis = diagnose(build())
    node = diagnosis.node(node_id)
    assert category in node.proposed and category in node.confirmed
    quotes = " ".join(e.quote for e in node.confirmed_evidence if e.category is category)
    assert quoted in quotes
    assert node.scores is not None and node.scores.c_f >= diagnosis.config.theta
    assert node.boundary is not None  # there is an LLM call to intervene at


def test_gold_c1_anchor_is_the_decision_that_emitted_the_browse_action():
    d = diagnose(gold_c1())
    final = d.node("final_result_0000")
    assert final.boundary.event_id == "agent_action_0002"
    assert final.boundary.relation == "producer"
    assert d.anchor.anchor == "agent_action_0002"


def test_gold_c2_repetition_evidence_points_at_the_first_fetch():
    node = diagnose(gold_c2()).node("tool_result_0002")
    ev = next(e for e in node.evidence if e.rule == "c2_repeated_action")
    assert ev.event_ids == ("tool_result_0002", "tool_result_0000")
    assert "identical content" in ev.note
    assert node.boundary.event_id == "agent_action_0003"
    assert node.boundary.relation == "downstream"


def test_gold_c3_error_chain_and_final_answer():
    d = diagnose(gold_c3())
    assert Category.C3 in d.node("tool_result_0001").confirmed
    final = d.node("final_result_0000")
    assert Category.C3 in final.proposed  # proceeds to 58.99 past unresolved errors
    prop = next(e for e in final.evidence if e.rule == "c3_final_despite_error")
    assert prop.event_ids[1:] == ("tool_result_0000", "tool_result_0001")
    # The earliest eligible node is the decision that chose the placeholder URL.
    assert d.anchor.target == "agent_action_0000"
    assert set(d.anchor.categories) == {Category.C1, Category.C4}


def test_gold_c4_guidance_never_leaks_the_evaluator():
    """The task object carries the evaluator's expected products; neither the diagnosis nor
    Δ may mention them."""
    d = diagnose(gold_c4())
    delta = build_guidance(d.anchor)
    assert "agent_action_0000" in delta and "C4" in delta
    assert "Ida Workout" not in delta
    assert "Ida Workout" not in str(d.to_json())
