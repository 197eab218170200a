"""Parallel tool calls replay without spurious divergence, run after run.

AgentChat runs the tool calls of one model response concurrently (`asyncio.gather`; sync
tools on the default thread pool), so their interleaving varies. Each call has its own lane
(`<agent>/tool#<i>`), so strict replay never depends on it.
"""

from __future__ import annotations

import functools
import random
import time

import pytest

import symtrace
from symtrace.bundle import load_bundle
from symtrace.model.events import EventType

pytestmark = [
    pytest.mark.framework("autogen_agentchat"),
    pytest.mark.filterwarnings("ignore:Pydantic serializer warnings"),
]

REPLAYS = 20


@pytest.mark.parametrize("name", ["assistant_tools", "selector"])
def test_twenty_strict_replays_in_a_row(name, scenario, scripted, tmp_path, monkeypatch):
    run = scenario(name)
    stub = scripted(name)
    for tool_name in ("get_weather", "get_exchange_rate", "convert_currency"):
        original = getattr(run.module, tool_name, None)
        if original is not None:  # jitter while recording: the calls finish in any order
            monkeypatch.setattr(run.module, tool_name, _jittered(original))
    recorded = run.record(tmp_path / "run")
    calls = [e for e in load_bundle(tmp_path / "run").events if e.type is EventType.TOOL_CALL]
    assert len({c.lane for c in calls}) >= 2, "the run has parallel tool calls"

    served = stub.served
    divergences = 0
    for _ in range(REPLAYS):
        try:
            assert run.replay(tmp_path / "run") == recorded
        except symtrace.ReplayDivergence:
            divergences += 1
    assert divergences == 0
    assert stub.served == served
    assert run.tool_runs == []


def _jittered(tool):
    @functools.wraps(tool)
    def jittered(*args, **kwargs):
        time.sleep(random.uniform(0, 0.02))
        return tool(*args, **kwargs)

    return jittered
