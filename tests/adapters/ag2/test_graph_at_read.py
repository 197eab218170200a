"""AG2 runs recorded with the graph derived at read: the reader derives exactly the parents a
recording derives while it runs (group chats with their speaker selections and causes, tool
calls, nested chats), and the bundle replays strictly."""

from __future__ import annotations

from pathlib import Path

import pytest

import symtrace
from symtrace import load_bundle
from symtrace.model.graph import descendants

from ..._support import EagerAlongside
from ._support import SCENARIOS, Runner

GUIDANCE = "Check the exchange rate date before converting."

pytestmark = pytest.mark.framework("ag2")


@pytest.mark.parametrize("name", SCENARIOS)
def test_the_graph_derived_at_read_is_the_one_derived_while_recording(
    name: str, runner: Runner, endpoint, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spy = EagerAlongside(monkeypatch)
    stub = endpoint(name)
    recorded = runner.record(tmp_path / "b", name)
    assert spy.check(tmp_path / "b") > 0
    served = stub.served
    replayed = runner.replay(tmp_path / "b", name)
    assert stub.served == served, "replay reached the endpoint"
    assert replayed.final == recorded.final


def test_a_selective_replay_of_a_bundle_recorded_at_read(
    runner: Runner, endpoint, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The replay reads the parent's derived graph (what the anchor supersedes, which calls
    go live) and writes its child in format 2, which replays strictly."""
    monkeypatch.setenv("SYMTRACE_GRAPH", "at-read")
    stub = endpoint("two_agent")
    runner.record(tmp_path / "parent", "two_agent")
    parent = load_bundle(tmp_path / "parent")
    assert parent.manifest["format_version"] == 3
    anchor = [e for e in parent.events if e.is_llm][1]
    module, _ = runner.example("two_agent")
    before = stub.served
    with symtrace.replay(tmp_path / "parent", anchor=anchor.id, guidance=GUIDANCE,
                         out=tmp_path / "child", adapters=["ag2"]):
        runner.call(module.main)
    assert stub.requests[before]["messages"][-1] == {"role": "user", "content": GUIDANCE}
    child = load_bundle(tmp_path / "child")
    assert child.manifest["format_version"] == 2
    assert set(child.lineage["superseded_events"]) == {anchor.id} | descendants(
        list(parent.events), anchor.id)
    replayed = {e.id: e.parents for e in child.events if e.id in child.lineage["replayed_events"]}
    assert replayed == {e.id: e.parents for e in parent.events if e.id in replayed}
    served = stub.served
    runner.replay(tmp_path / "child", "two_agent")
    assert stub.served == served
