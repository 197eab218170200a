"""Two crews kicked off at once, each with a `researcher` (issue 40 with the turn model):
their agents work on distinct lanes, numbered by kickoff order, and the run replays strictly
whichever crew's thread asks first."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import symtrace

from ._support import ADAPTER, common


def crews() -> list[Any]:
    from crewai import Agent, Crew, Task

    built = []
    for topic in ("Lisbon", "Porto"):
        researcher = Agent(role="researcher", goal=f"Know {topic}", backstory="Careful.",
                           llm=common().llm())
        task = Task(description=f"One fact about {topic}.", expected_output="One sentence.",
                    agent=researcher)
        built.append(Crew(agents=[researcher], tasks=[task]))
    return built


async def both() -> list[str]:
    outputs = await asyncio.gather(*(crew.kickoff_async() for crew in crews()))
    return [str(output) for output in outputs]


def test_concurrent_crews_with_one_role_run_on_distinct_lanes_and_replay(
        tmp_path: Path, use_stub: Any) -> None:
    stub = use_stub(mode="stochastic", seed=3)
    with symtrace.record(tmp_path / "b", adapters=ADAPTER):
        recorded = asyncio.run(both())
    served = stub.served
    lanes = {e.lane for e in symtrace.load_bundle(tmp_path / "b").events if e.is_llm}
    assert lanes == {"researcher", "crew@2/researcher"}
    for _ in range(3):
        with symtrace.replay(tmp_path / "b", adapters=ADAPTER):
            assert asyncio.run(both()) == recorded
    assert stub.served == served
