"""AG2 runs recorded with the graph derived at read: the reader derives exactly the parents a
recording derives while it runs (group chats with their speaker selections and causes, tool
calls, nested chats), and the bundle replays strictly."""

from __future__ import annotations

from pathlib import Path

import pytest

from ..._support import EagerAlongside
from ._support import SCENARIOS, Runner

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
