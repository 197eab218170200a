"""CrewAI: of crews kicked off at once, the final result is the crew kicked off later,
whichever ended last (issue 33: R107 blamed the program for the end order, which is timing).

Each task's callback (run in both the recording and the replay) delays its crew after its
model call, so the test decides which crew ends last; the recording and the replay end them in
opposite orders.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import symtrace

from ._support import ADAPTER, common


def outputs(last_to_end: int) -> list[str]:
    from crewai import Agent, Crew, Task

    crews = []
    for index, topic in enumerate(("Lisbon", "Porto")):
        delay = 0.5 if index == last_to_end else 0.0
        researcher = Agent(role="researcher", goal=f"Know {topic}", backstory="Careful.",
                           llm=common().llm())
        task = Task(description=f"One fact about {topic}.", expected_output="One sentence.",
                    agent=researcher, callback=lambda _output, d=delay: time.sleep(d))
        crews.append(Crew(agents=[researcher], tasks=[task]))

    async def both() -> list[str]:
        return [o.raw for o in await asyncio.gather(*(c.kickoff_async() for c in crews))]

    return asyncio.run(both())


def test_the_final_result_of_concurrent_crews_does_not_depend_on_which_ended_last(
        tmp_path: Path, use_stub: Any) -> None:
    use_stub(mode="stochastic", seed=4)
    with symtrace.record(tmp_path / "b", adapters=ADAPTER) as recording:
        raws = outputs(last_to_end=0)
    assert recording.session.final_value == raws[1]  # the crew kicked off later
    with symtrace.replay(tmp_path / "b", adapters=ADAPTER) as replay:
        assert outputs(last_to_end=1) == raws
    assert replay.session.final_value == raws[1]
