"""A crew whose final output is a pydantic model (`Task(output_pydantic=...)`).

    python examples/crewai/structured_output.py   # with OPENAI_BASE_URL and OPENAI_API_KEY set
"""

from __future__ import annotations

from crewai import Agent, Crew, Process, Task
from crewai_common import llm, report
from pydantic import BaseModel


class DayPlan(BaseModel):
    day: int
    activities: list[str]


class TripPlan(BaseModel):
    city: str
    days: list[DayPlan]
    budget_eur: float


def build_crew() -> Crew:
    model = llm()
    scout = Agent(
        role="Scout", goal="Suggest sights", backstory="You know what is worth seeing.",
        llm=model,
    )
    planner = Agent(
        role="Planner", goal="Turn suggestions into a structured plan",
        backstory="You produce plans other programs can read.", llm=model,
    )
    ideas = Task(
        name="ideas", agent=scout, description="Suggest sights for two days in Porto.",
        expected_output="A list of sights.",
    )
    plan = Task(
        name="plan", agent=planner, description="Make a two-day Porto plan with a budget.",
        expected_output="The plan as structured data.", output_pydantic=TripPlan,
    )
    return Crew(agents=[scout, planner], tasks=[ideas, plan], process=Process.sequential)


def main() -> None:
    output = build_crew().kickoff()
    report(output)
    assert isinstance(output.pydantic, TripPlan)
    print(f"PLAN: {output.pydantic.model_dump_json()}")


if __name__ == "__main__":
    main()
