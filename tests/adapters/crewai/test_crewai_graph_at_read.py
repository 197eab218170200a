"""CrewAI crews recorded with the graph derived at read: the reader derives exactly the parents
a recording derives while it runs (delegations to coworkers, parallel tool calls), and the
bundle replays strictly."""

from __future__ import annotations

import pytest

from ..._support import EagerAlongside
from ._support import SCENARIOS, replay_example

pytestmark = pytest.mark.framework("crewai")


@pytest.mark.parametrize("name", SCENARIOS)
def test_the_graph_derived_at_read_is_the_one_derived_while_recording(
    name, record, monkeypatch
):
    spy = EagerAlongside(monkeypatch)
    recorded = record(name)
    assert spy.check(recorded.bundle) > 0
    served = recorded.stub.served
    replayed = replay_example(recorded.bundle, name)
    assert recorded.stub.served == served, "replay reached the endpoint"
    assert replayed.final == recorded.run.final
