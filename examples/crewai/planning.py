"""Crew planning: `Crew(planning=True)` asks a planner for a step-by-step plan per task first.

CrewAI's "Task Execution Planner" gets every task and agent in one request and answers with a
structured `PlannerTaskPydanticOutput`; each task's description is extended with its plan
before the agents start, so the plan is in every later prompt.

    python examples/crewai/planning.py   # with OPENAI_BASE_URL and OPENAI_API_KEY set
"""

from __future__ import annotations

from crewai import Agent, Crew, Task
from crewai.tools import tool
from crewai_common import TOOL_RUNS, llm, report

RESEARCH = "Find the weather in Lisbon."


@tool("city_weather")
def city_weather(city: str) -> str:
    """Typical weather for a city."""
    TOOL_RUNS["city_weather"] += 1
    return f"{city}: 19°C, light wind"


def build_crew() -> Crew:
    model = llm()
    researcher = Agent(role="Researcher", goal="Gather weather facts", backstory="Precise.",
                       llm=model, tools=[city_weather])
    writer = Agent(role="Writer", goal="Write short trip notes", backstory="Terse.", llm=model)
    research = Task(name="research", agent=researcher, description=RESEARCH,
                    expected_output="The weather.")
    note = Task(name="note", agent=writer, description="Write a one-line packing note.",
                expected_output="One line.")
    return Crew(agents=[researcher, writer], tasks=[research, note], planning=True,
                planning_llm=model)


def main() -> None:
    report(build_crew().kickoff())


if __name__ == "__main__":
    main()
