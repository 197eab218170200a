"""Issue 19, AG2: what reads conversation state written after the anchor is live after it.

`initiate_chats` carries each chat's summary into the next chat; a `reflection_with_llm`
summary is one more LLM call that reads the whole chat. Anchored at a request of the first
chat, the new live answer reaches the summary call and (through the carryover) the next chat:
both must go live, and the child must replay. The server is the unseeded stochastic stub, so
live answers differ from the recorded ones.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from gen_harness import needs

needs("autogen")

import gen_examples  # noqa: E402
from gen_check import Check  # noqa: E402

import symtrace  # noqa: E402
from symtrace.bundle import load_bundle  # noqa: E402

pytestmark = [pytest.mark.framework("ag2"), pytest.mark.slow]


@pytest.fixture(autouse=True)
def _cwd(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # AG2's legacy disk cache would write ./.cache


# A turn triggered by a live message with no content (a tool-call reply, its empty summary) used
# to have no edge from it, so these failed with SYM-R102 on some server answers (chats_async
# most often); the deterministic reproducers are tests/adapters/ag2/test_causes.py.
@pytest.mark.parametrize("example", ["chat_sequence", "chats_async", "nested_chats"])
def test_summary_and_carryover_after_a_live_anchor_go_live(example, stochastic_stub) -> None:
    check = Check(gen_examples.runner("ag2", example), "ag2", stochastic_stub,
                  Path(tempfile.mkdtemp(prefix="symtrace-defect-")), strict_replays=1)
    finding = check(gen_examples.program("ag2", example))
    assert finding.anchors["live"] == finding.llm_requests >= 3


def test_the_reflection_summary_has_a_data_edge_from_the_chat_it_reads(stochastic_stub,
                                                                       tmp_path) -> None:
    with symtrace.record(tmp_path / "b", adapters=["ag2"]):
        gen_examples.runner("ag2", "chat_sequence")(gen_examples.program("ag2", "seq"))
    events = load_bundle(tmp_path / "b").events
    llm = [e for e in events if e.is_llm]
    summary = next(e for e in llm if "Summarise the facts" in str(e.request))
    researcher = [e for e in llm if e.agent == "researcher" and e.position < summary.position]
    assert researcher[-1].id in summary.parent_ids
    writer = next(e for e in llm if e.position > summary.position)
    assert summary.id in writer.parent_ids  # the carryover quotes the summary
