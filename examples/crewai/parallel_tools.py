"""One task whose LLM response asks for several tools at once.

CrewAI runs the native tool calls of one response in parallel on a thread pool (up to 8
workers) and feeds the results back in call order. The tools sleep a little, with the
first-called tool slowest, so they really overlap and finish out of order.

    python examples/crewai/parallel_tools.py   # with OPENAI_BASE_URL and OPENAI_API_KEY set
"""

from __future__ import annotations

import time

from crewai import Agent, Crew, Task
from crewai.tools import tool
from crewai_common import TOOL_RUNS, llm, report

PRICES = {"hotel": 120, "dinner": 45, "museum": 15, "tram": 3}


@tool("city_weather")
def city_weather(city: str) -> str:
    """Typical weather for a city."""
    TOOL_RUNS["city_weather"] += 1
    time.sleep(0.03)
    return f"{city}: 19°C and sunny"


@tool("price_of")
def price_of(item: str) -> str:
    """Typical price in EUR of a travel item (hotel, dinner, museum, tram)."""
    TOOL_RUNS["price_of"] += 1
    time.sleep(0.01)
    return f"{item}: {PRICES.get(item.lower(), 10)} EUR"


@tool("opening_hours")
def opening_hours(place: str) -> str:
    """Opening hours of a place."""
    TOOL_RUNS["opening_hours"] += 1
    return f"{place}: 10:00-18:00"


def build_crew() -> Crew:
    planner = Agent(
        role="Planner", goal="Plan a day out with facts from your tools",
        backstory="You look everything up before you answer.", llm=llm(),
        tools=[city_weather, price_of, opening_hours],
    )
    day = Task(
        name="day", agent=planner,
        description="Plan one day in Lisbon: weather, a hotel and dinner budget, museum hours.",
        expected_output="A one-day plan with the facts you looked up.",
    )
    return Crew(agents=[planner], tasks=[day])


def main() -> None:
    report(build_crew().kickoff())


if __name__ == "__main__":
    main()
