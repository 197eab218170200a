"""Parallel native tool calls (CrewAI's thread pool) replay without spurious divergence."""

from __future__ import annotations

import pytest

from symtrace.model.events import EventType
from symtrace.session.scheduling_options import SchedulingOptions

from ._support import replay_example, tool_calls, tool_runs

pytestmark = pytest.mark.framework("crewai")
REPLAYS = 20


def test_twenty_back_to_back_strict_replays_of_parallel_tool_calls_never_diverge(record):
    recorded = record("parallel_tools")
    events = recorded.events()
    calls = tool_calls(events)
    assert len(calls) == 4 and len({e.lane for e in calls}) == 4
    results = [e for e in events if e.type is EventType.TOOL_RESULT]
    assert len(results) == 4
    served, ran = recorded.stub.served, tool_runs()

    for attempt in range(REPLAYS):
        replayed = replay_example(recorded.bundle, "parallel_tools")
        assert replayed.transcript == recorded.run.transcript, f"replay {attempt}"
    assert recorded.stub.served == served
    assert tool_runs() == ran


@pytest.mark.parametrize("example", ["trip_flow", "hierarchical"])
def test_replays_without_state_inference(record, example):
    """Releases from facts and declared consumption points only (`infer_from_state=False`):
    the Flow's kickoff is a consumption point (its caller hands on to the Flow's methods,
    which run on other threads), and a delegation tool's begin makes its thread no receiver
    (the coworker's calls are). Without them these replays stopped with SYM-R105."""
    recorded = record(example)
    served = recorded.stub.served
    for attempt in range(4):  # chaos pauses at hand-off points, as the stress script does
        options = SchedulingOptions(5.0, chaos_seed=attempt, infer_from_state=False)
        replayed = replay_example(recorded.bundle, example, scheduling=options)
        assert replayed.transcript == recorded.run.transcript, f"replay {attempt}"
    assert recorded.stub.served == served
