"""Two `async_execution=True` tasks run at the same time, then a writer waits for both.

CrewAI starts each async task on a thread of its own and collects their outputs in task
order when the next synchronous task needs them. Each async task has its own researcher,
built by the same factory (same role, two agents: CrewAI refuses to run one agent's executor
twice at once). The tool sleeps longer for the first city, so the two tasks interleave and
finish out of order.

    python examples/crewai/async_tasks.py   # with OPENAI_BASE_URL and OPENAI_API_KEY set
"""

from __future__ import annotations

import time

from crewai import LLM, Agent, Crew, Task
from crewai.tools import tool
from crewai_common import TOOL_RUNS, llm, report

DELAYS = {"Lisbon": 0.08, "Porto": 0.0}


@tool("city_weather")
def city_weather(city: str) -> str:
    """Typical weather for a city."""
    TOOL_RUNS["city_weather"] += 1
    time.sleep(DELAYS.get(city, 0.0))
    return f"{city}: {19 if city == 'Lisbon' else 16}°C"


def researcher(model: LLM) -> Agent:
    return Agent(role="Researcher", goal="Look up the weather of a city",
                 backstory="You always use your tool.", llm=model, tools=[city_weather])


def build_crew() -> Crew:
    model = llm()
    writer = Agent(role="Writer", goal="Compare two cities", backstory="Terse.", llm=model)
    lisbon, porto = (
        Task(name=city.lower(), agent=researcher(model), async_execution=True,
             description=f"What is the weather in {city}?", expected_output="One line.")
        for city in ("Lisbon", "Porto")
    )
    compare = Task(name="compare", agent=writer, context=[lisbon, porto],
                   description="Which city is warmer for a weekend?",
                   expected_output="One sentence.")
    return Crew(agents=[lisbon.agent, porto.agent, writer], tasks=[lisbon, porto, compare])


def main() -> None:
    report(build_crew().kickoff())


if __name__ == "__main__":
    main()
