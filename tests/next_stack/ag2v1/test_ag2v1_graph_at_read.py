"""AG2 1.x (openai 3 over httpx2) recorded with the graph derived at read: the reader derives
exactly the parents a recording derives while it runs (delegation, sub-tasks fanned out at
once, a Network hub), and the bundle replays strictly."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests._support import EagerAlongside
from tests.next_stack.ag2v1._support import SCENARIOS, Runner


@pytest.mark.parametrize("name", SCENARIOS)
def test_the_graph_derived_at_read_is_the_one_derived_while_recording(
        name: str, runner: Runner, endpoint, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    spy = EagerAlongside(monkeypatch)
    stub = endpoint(name)
    recorded = runner.record(tmp_path / "b", name)
    edges = spy.check(tmp_path / "b")
    # the hub's consulting turn is one call per lane, nothing carried between them
    assert edges > 0 or name == "hub_consulting"
    served = stub.served
    replayed = runner.replay(tmp_path / "b", name)
    assert stub.served == served, "a strict replay sent a request"
    assert replayed.stdout == recorded.stdout
    assert replayed.final == recorded.final
