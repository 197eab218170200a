"""Parallel native tool calls (CrewAI's thread pool) replay without spurious divergence."""

from __future__ import annotations

import pytest

from symtrace.model.events import EventType

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
