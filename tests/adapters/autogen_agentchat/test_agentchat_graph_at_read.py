"""AgentChat teams (Magentic-One included) recorded with the graph derived at read: the reader
derives exactly the parents a recording derives while it runs, and the bundle replays
strictly."""

from __future__ import annotations

import pytest

from ..._support import EagerAlongside
from ._support import SCENARIOS

pytestmark = [
    pytest.mark.framework("autogen_agentchat"),
    pytest.mark.filterwarnings("ignore:Pydantic serializer warnings"),
]


@pytest.mark.parametrize("name", SCENARIOS)
def test_the_graph_derived_at_read_is_the_one_derived_while_recording(
    name, scenario, scripted, tmp_path, monkeypatch
):
    spy = EagerAlongside(monkeypatch)
    run, stub = scenario(name), scripted(name)
    recorded = run.record(tmp_path / name)
    assert spy.check(tmp_path / name) > 0
    served = stub.served
    assert run.replay(tmp_path / name) == recorded
    assert stub.served == served, "a strict replay must not reach the endpoint"
