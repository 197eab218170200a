"""`symtrace diff` on a selective replay's child of two AgentChat teams run at once (twin
teams, issue 33): the first difference is the anchor, not the position where the two teams'
calls happen to interleave differently."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import symtrace
from tests.diff_checks import assert_diff_names_the_anchor

from ._support import load_example


def test_diff_names_the_anchor_of_a_child_of_twin_teams(tmp_path: Path, stochastic: Any
                                                        ) -> None:
    twins = load_example("twin_teams")
    with symtrace.record(tmp_path / "b", adapters=["autogen_agentchat"]):
        asyncio.run(twins.run())
    events = symtrace.load_bundle(tmp_path / "b").events
    anchor = next(e.id for e in events if e.is_llm and e.lane == "writer@2")
    child = tmp_path / "child"
    with symtrace.replay(tmp_path / "b", adapters=["autogen_agentchat"], anchor=anchor,
                         guidance="Name one sight.", out=child):
        asyncio.run(twins.run())
    assert_diff_names_the_anchor(tmp_path / "b", child, anchor)
