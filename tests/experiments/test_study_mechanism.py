"""RQ1's mechanism test (App. D.1) on hand-built traces: the source's case-specific evidence,
in canonical form, must be found in the attempt's own live events — the same failing call
reproduces, a same-kind failure of another task does not, a replayed prefix grounds nothing —
and human labels replace the diagnosis."""

from __future__ import annotations

import orjson
import pytest
from symtrace_study.errors import StudyConfigError
from symtrace_study.labels import evidence_facet, load_labels
from symtrace_study.reproduction import (
    Signature,
    find_match,
    label_signature,
    source_signatures,
)

from tests.diagnosis._support import TraceBuilder


def empty_search(task: str, query: str = "", spaced: bool = False):
    """An agent that searches with an empty (skipped) query, then answers."""
    t = TraceBuilder(task)
    args = {"query": "  " if spaced else query}
    t.agent(None, calls=[("wiki_search", args)])
    t.tool("wiki_search", args, value={"status": "ok", "results": []})
    t.agent('FINAL ANSWER: {"title": "unknown"}\nTERMINATE')
    t.final({"title": "unknown"})
    return t.bundle()


def wrong_call(task: str, tool: str):
    t = TraceBuilder(task)
    t.agent(None, calls=[(tool, {"query": ""})])
    t.tool(tool, {"query": ""}, value={"status": "ok", "results": []})
    t.agent('FINAL ANSWER: {"title": "unknown"}\nTERMINATE')
    t.final({"title": "unknown"})
    return t.bundle()


def every(bundle) -> set[str]:
    return {e.id for e in bundle.events}


def test_the_signature_keeps_the_failing_call_in_canonical_form():
    [sig] = source_signatures(empty_search("Find the article on apples."))
    assert sig.kind == "call"
    assert 'call:wiki_search:{"query":""}' in sig.facets
    assert Signature.from_json(sig.to_json()) == sig


def test_the_same_failing_call_reproduces_whatever_its_rendering():
    sigs = source_signatures(empty_search("Find the article on apples."))
    again = empty_search("Find the article on apples.", spaced=True)  # "  " folds to ""
    match = find_match(sigs, again, every(again))
    assert match is not None and match.category == sigs[0].category


def test_a_same_kind_failure_of_another_call_is_not_this_failure():
    sigs = source_signatures(empty_search("Find the article on apples."))
    other = wrong_call("Find the route to Harlow Falls.", "route_search")
    assert [s.category for s in source_signatures(other)] == [sigs[0].category]  # same kind
    assert find_match(sigs, other, every(other)) is None  # another mechanism: no match


def test_replayed_prefix_events_ground_nothing():
    sigs = source_signatures(empty_search("Find the article on apples."))
    again = empty_search("Find the article on apples.")
    live = {e.id for e in again.events if e.type.value == "final_result"}
    assert find_match(sigs, again, live) is None


def test_signatures_of_older_rows_without_facets_never_match():
    sigs = source_signatures(empty_search("Find the article on apples."))
    bare = [Signature(s.category, s.rules, s.node_type, s.agent, s.evidence, s.event)
            for s in sigs]
    again = empty_search("Find the article on apples.")
    assert find_match(bare, again, every(again)) is None


def _labels(tmp_path, labels) -> object:
    path = tmp_path / "labels.json"
    path.write_bytes(orjson.dumps({"labels": labels}))
    return path


def test_a_label_replaces_the_diagnosis(tmp_path):
    source = empty_search("Find the article on apples.")
    path = _labels(tmp_path, {"plain/wiki-005/s0": {
        "target": "tool_call_0000", "category": "C1",
        "evidence": ['wiki_search({"query": ""})'], "note": "empty query"}})
    label = load_labels(path)["plain/wiki-005/s0"]
    sig = label_signature(label, source)
    assert sig.rules == () and sig.node_type == "*" and sig.category == "C1"
    assert sig.facets == ('call:wiki_search:{"query":""}',)
    again = empty_search("Find the article on apples.", spaced=True)
    assert find_match([sig], again, every(again)) is not None
    other = wrong_call("Find the route.", "route_search")
    assert find_match([sig], other, every(other)) is None


def test_a_text_label_must_occur_in_the_attempts_live_evidence(tmp_path):
    source = empty_search("Find the article on apples.")
    path = _labels(tmp_path, {"c": {"target": "agent_action_0000", "category": "C1",
                                    "evidence": ["nothing like this occurs"]}})
    sig = label_signature(load_labels(path)["c"], source)
    assert sig.kind == "text"
    assert find_match([sig], source, every(source)) is None
    assert evidence_facet('wiki_search({"query": "  A  "})') == 'call:wiki_search:{"query":"a"}'
    assert evidence_facet("Some Quoted  Fault") == "text:some quoted fault"


@pytest.mark.parametrize(("labels", "needle"), [
    ({"c": {"category": "C1"}}, "target"),
    ({"c": {"target": "x", "category": "C9"}}, "category"),
    ({"c": {"target": "x", "category": "C1", "evidence": "one"}}, "evidence"),
    ({"c": {"target": "x", "category": "C1", "colour": 1}}, "a label has"),
])
def test_malformed_labels_are_config_errors(tmp_path, labels, needle):
    with pytest.raises(StudyConfigError, match=needle):
        load_labels(_labels(tmp_path, labels))
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(StudyConfigError, match="JSON"):
        load_labels(tmp_path / "bad.json")
