"""A hierarchical crew: CrewAI's manager agent delegates the work to two coworkers.

The manager is created by CrewAI from `manager_llm`; its only tools are "Delegate work to
coworker" and "Ask question to coworker". When it hands out both in one response, CrewAI runs
the two coworkers in parallel.

    python examples/crewai/hierarchical.py   # with OPENAI_BASE_URL and OPENAI_API_KEY set
"""

from __future__ import annotations

from crewai import Agent, Crew, Process, Task
from crewai_common import llm, report


def build_crew() -> Crew:
    model = llm()
    researcher = Agent(
        role="Researcher", goal="Find facts about destinations",
        backstory="You know a lot about European cities.", llm=model,
    )
    writer = Agent(
        role="Writer", goal="Write short trip plans", backstory="You write concise plans.",
        llm=model,
    )
    trip = Task(
        name="trip", description="Plan a two-day trip to Lisbon for a traveller who loves food.",
        expected_output="A two-day plan with food stops.",
    )
    return Crew(
        agents=[researcher, writer], tasks=[trip], process=Process.hierarchical,
        manager_llm=model,
    )


def main() -> None:
    report(build_crew().kickoff())


if __name__ == "__main__":
    main()
