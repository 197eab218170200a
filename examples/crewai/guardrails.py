"""Task guardrails: a guardrail function and an LLM guardrail, each rejecting once.

The plan task's guardrail is a function: a plan that does not mention the budget in EUR is
sent back with feedback, and the writer tries again. The pick task's guardrail is a
sentence, so CrewAI asks a "Guardrail Agent" (an LLM call with a structured
`LLMGuardrailResult`) whether the answer complies; the first answer names no city, is
rejected with the guardrail's feedback, and the retry passes.

    python examples/crewai/guardrails.py   # with OPENAI_BASE_URL and OPENAI_API_KEY set
"""

# No `from __future__ import annotations`: CrewAI inspects the guardrail's return annotation
# and accepts only a real `tuple[bool, Any]`, not its string form.
from typing import Any

from crewai import Agent, Crew, Task
from crewai_common import llm, report

BUDGET_FEEDBACK = "Mention the budget in EUR."


def mentions_budget(output: Any) -> tuple[bool, Any]:
    """A plan must state its budget in EUR."""
    if "EUR" in output.raw:
        return True, output.raw
    return False, BUDGET_FEEDBACK


def build_crew() -> Crew:
    model = llm()
    scout = Agent(role="Scout", goal="Pick a destination", backstory="Decisive.", llm=model)
    writer = Agent(role="Writer", goal="Write short trip plans", backstory="Terse.", llm=model)
    pick = Task(name="pick", agent=scout, description="Pick a sunny city for a weekend.",
                expected_output="The city and why.", guardrail="The answer names a city.",
                guardrail_max_retries=2)
    plan = Task(name="plan", agent=writer, description="Write a one-day plan for the pick.",
                expected_output="A one-day plan.", guardrail=mentions_budget,
                guardrail_max_retries=2)
    return Crew(agents=[scout, writer], tasks=[pick, plan])


def main() -> None:
    report(build_crew().kickoff())


if __name__ == "__main__":
    main()
