"""A Flow: `@start` picks the cities, two `@listen` steps run a research crew each at the same
time, and `@listen(and_(...))` runs a writer crew on both results.

CrewAI runs the two listeners of one start concurrently (each sync step on a worker thread),
so the two research crews, whose researchers share a role, overlap; the Lisbon tool sleeps
(the tool of async_tasks.py), so they finish out of order. The flow's return value is the
writer crew's output.

    python examples/crewai/trip_flow.py   # with OPENAI_BASE_URL and OPENAI_API_KEY set
"""

from __future__ import annotations

from async_tasks import city_weather  # the same slow-for-Lisbon tool
from crewai import Agent, Crew, CrewOutput, Task
from crewai.flow.flow import Flow, and_, listen, start
from crewai_common import llm, report

WRITER_GOAL = "Compare two cities for a weekend"
CITIES = ("Lisbon", "Porto")


def research_crew(city: str) -> Crew:
    researcher = Agent(role="Researcher", goal="Look up the weather of a city",
                       backstory="You always use your tool.", llm=llm(), tools=[city_weather])
    task = Task(name=f"weather_{city.lower()}", agent=researcher,
                description=f"What is the weather in {city}?", expected_output="One line.")
    return Crew(agents=[researcher], tasks=[task])


class TripFlow(Flow):
    @start()
    def pick_cities(self) -> list[str]:
        self.state["cities"] = list(CITIES)
        return self.state["cities"]

    @listen(pick_cities)
    def research_lisbon(self, cities: list[str]) -> str:
        self.state["lisbon"] = research_crew(cities[0]).kickoff().raw
        return self.state["lisbon"]

    @listen(pick_cities)
    def research_porto(self, cities: list[str]) -> str:
        self.state["porto"] = research_crew(cities[1]).kickoff().raw
        return self.state["porto"]

    @listen(and_(research_lisbon, research_porto))
    def compare(self) -> CrewOutput:
        writer = Agent(role="Writer", goal=WRITER_GOAL, backstory="Terse.", llm=llm())
        task = Task(name="compare", agent=writer, expected_output="One sentence.",
                    description="Which city is warmer? Lisbon: {lisbon} Porto: {porto}")
        crew = Crew(agents=[writer], tasks=[task])
        return crew.kickoff(inputs={"lisbon": self.state["lisbon"],
                                    "porto": self.state["porto"]})


def build_flow() -> TripFlow:
    return TripFlow()


def main() -> None:
    report(build_flow().kickoff())


if __name__ == "__main__":
    main()
