"""`symtrace diff` on a selective replay's child of a crew with two overlapping
`async_execution` tasks (issue 33): the first difference is the anchor, not the position where
the concurrent tasks' calls happen to interleave differently."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import symtrace
from tests.diff_checks import assert_diff_names_the_anchor

from ._support import ADAPTER, common


def crew() -> str:
    from crewai import Agent, Crew, Task

    agents = [Agent(role=role, goal=f"Know {topic}", backstory="Careful.", llm=common().llm())
              for role, topic in (("researcher", "Lisbon"), ("scout", "Porto"),
                                  ("writer", "both"))]
    first = [Task(description=f"One fact about {topic}.", expected_output="One sentence.",
                  agent=agent, async_execution=True)
             for agent, topic in zip(agents[:2], ("Lisbon", "Porto"), strict=True)]
    final = Task(description="Combine the facts.", expected_output="Two sentences.",
                 agent=agents[2], context=first)
    return Crew(agents=agents, tasks=[*first, final]).kickoff().raw


def test_diff_names_the_anchor_of_a_child_of_async_tasks(tmp_path: Path, use_stub: Any
                                                         ) -> None:
    use_stub(mode="stochastic", seed=8)
    with symtrace.record(tmp_path / "b", adapters=ADAPTER):
        crew()
    events = symtrace.load_bundle(tmp_path / "b").events
    anchor = next(e.id for e in events if e.is_llm and e.lane.endswith("scout"))
    child = tmp_path / "child"
    with symtrace.replay(tmp_path / "b", adapters=ADAPTER, anchor=anchor,
                         guidance="Answer in one sentence.", out=child):
        crew()
    assert_diff_names_the_anchor(tmp_path / "b", child, anchor)
