"""Generated AG2 1.x programs (module `ag2`) pass the differential replay check: strict
replays identical with no request and no tool body run, a changed prompt diverging at that
agent's first request, a selective replay at every agent request going live (or refused,
typed, before any live call) with a child that replays strictly."""

from __future__ import annotations

import pytest
from gen_harness import check_topology
from gen_spec import TOPOLOGIES

FRAMEWORK = "ag2v1"


@pytest.mark.parametrize("topology", sorted(TOPOLOGIES[FRAMEWORK]))
def test_generated_programs_replay(topology: str, stochastic_stub, tmp_path, monkeypatch
                                   ) -> None:
    import gen_ag2v1

    monkeypatch.chdir(tmp_path)
    check_topology(FRAMEWORK, topology, gen_ag2v1.run, gen_ag2v1.ADAPTER, stochastic_stub)


def test_the_transcript_lists_each_responses_tool_results_in_call_order() -> None:
    """Found by the long run: a delegation (`as_tool`, run on replay) and a plain tool in one
    message completed in either order, with other events between the results; the transcript
    must not depend on it (the model is shown call order)."""
    from types import SimpleNamespace

    from gen_ag2v1 import in_call_order

    class ModelResponse(SimpleNamespace):
        pass

    class ToolResultEvent(SimpleNamespace):
        pass

    class ToolCallEvent(SimpleNamespace):
        pass

    asked = ModelResponse(tool_calls=SimpleNamespace(calls=[SimpleNamespace(id="a"),
                                                            SimpleNamespace(id="b")]))
    answer = ModelResponse(tool_calls=None)
    b, a = ToolResultEvent(parent_id="b"), ToolResultEvent(parent_id="a")
    between = ToolCallEvent()
    assert in_call_order([asked, b, between, a, answer]) == [asked, between, a, b, answer]
    assert in_call_order([asked, a, between, b]) == [asked, between, a, b]
