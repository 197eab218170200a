"""CrewAI: two overlapping `async_execution=True` tasks on one agent object, which symtrace
refuses (UnsupportedConstruct) at kickoff. The program catches every exception and exits 0,
as a framework or a careless program might: the refusal must still end the recording."""

import os
import sys

os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")
os.environ.setdefault("CREWAI_TRACING_ENABLED", "false")

from crewai import LLM, Agent, Crew, Task


def main() -> int:
    agent = Agent(role="Researcher", goal="Look up weather", backstory="Terse.",
                  llm=LLM(model="gpt-4o-mini", max_retries=0))
    tasks = [Task(name=city, agent=agent, async_execution=True,
                  description=f"Weather in {city}?", expected_output="One line.")
             for city in ("lisbon", "porto")]
    tasks.append(Task(name="compare", agent=agent, description="Which is warmer?",
                      expected_output="One line."))  # a crew may not end on an async task
    try:
        Crew(agents=[agent], tasks=tasks).kickoff()
    except Exception as exc:  # the point: the program swallows the refusal
        print(f"caught {type(exc).__name__}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
