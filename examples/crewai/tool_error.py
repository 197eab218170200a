"""A task whose tool raises: CrewAI turns the exception into an observation for the agent.

    python examples/crewai/tool_error.py   # with OPENAI_BASE_URL and OPENAI_API_KEY set
"""

from __future__ import annotations

from crewai import Agent, Crew, Task
from crewai.tools import tool
from crewai_common import TOOL_RUNS, llm, report

RATES = {"USD": 1.08, "GBP": 0.85}


class RateUnavailable(LookupError):
    """The exchange-rate source has no rate for a currency."""


@tool("exchange_rate")
def exchange_rate(currency: str) -> str:
    """The EUR exchange rate for a currency code."""
    TOOL_RUNS["exchange_rate"] += 1
    code = currency.strip().upper()
    if code not in RATES:
        raise RateUnavailable(f"no EUR rate for {code!r}")
    return f"1 EUR = {RATES[code]} {code}"


def build_crew() -> Crew:
    analyst = Agent(
        role="Analyst", goal="Quote exchange rates", backstory="You only quote what you find.",
        llm=llm(), tools=[exchange_rate],
    )
    quote = Task(
        name="quote", agent=analyst,
        description="Quote the EUR rate for JPY, and for USD if JPY is unavailable.",
        expected_output="The rates you found and which were unavailable.",
    )
    return Crew(agents=[analyst], tasks=[quote])


def main() -> None:
    report(build_crew().kickoff())


if __name__ == "__main__":
    main()
