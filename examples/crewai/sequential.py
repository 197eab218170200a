"""A sequential crew: a researcher with two tools, then a writer working from its notes.

The researcher has a `@tool` function and a `BaseTool` subclass (CrewAI runs them through
different `run` methods) and `inject_date=True` (today's date goes into its system prompt).

    python examples/crewai/sequential.py   # with OPENAI_BASE_URL and OPENAI_API_KEY set
"""

from __future__ import annotations

import hashlib

from crewai import Agent, Crew, Process, Task
from crewai.tools import BaseTool, tool
from crewai_common import TOOL_RUNS, llm, report

WRITER_GOAL = "Write short trip plans"


def stable_number(text: str, low: int, high: int) -> int:
    digest = hashlib.sha256(text.encode()).digest()
    return low + int.from_bytes(digest[:4], "big") % (high - low + 1)


@tool("lookup_weather")
def lookup_weather(city: str) -> str:
    """Typical weather for a city."""
    TOOL_RUNS["lookup_weather"] += 1
    return f"{city}: {stable_number(city, 8, 31)}°C, {stable_number(city + 'r', 0, 90)}% rain"


class CurrencyTool(BaseTool):
    name: str = "convert_currency"
    description: str = "Convert an amount of EUR into another currency."

    def _run(self, amount: float, currency: str) -> str:
        TOOL_RUNS["convert_currency"] += 1
        rate = stable_number(currency, 50, 200) / 100
        return f"{amount} EUR = {round(float(amount) * rate, 2)} {currency}"


def build_crew() -> Crew:
    model = llm()
    researcher = Agent(
        role="Researcher", goal="Gather weather and prices for a trip",
        backstory="You check facts with your tools.", llm=model,
        tools=[lookup_weather, CurrencyTool()], inject_date=True,
    )
    writer = Agent(
        role="Writer", goal=WRITER_GOAL, backstory="You write concise plans.", llm=model,
    )
    research = Task(
        name="research", agent=researcher,
        description="Find the weather in Lisbon and what 100 EUR is in USD.",
        expected_output="The weather and the converted amount.",
    )
    plan = Task(
        name="plan", agent=writer, description="Write a two-day Lisbon plan from the research.",
        expected_output="A two-day plan.",
    )
    return Crew(agents=[researcher, writer], tasks=[research, plan], process=Process.sequential)


def main() -> None:
    report(build_crew().kickoff())


if __name__ == "__main__":
    main()
