"""CrewAI: a hierarchical manager hands work to one coworker twice in one response (the stub
script `crewai_double_handoff.json` answers so), which symtrace refuses (UnsupportedConstruct)
before any hand-off runs."""

import os
import sys

os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")
os.environ.setdefault("CREWAI_TRACING_ENABLED", "false")

from crewai import LLM, Agent, Crew, Process, Task


def main() -> int:
    model = LLM(model="gpt-4o-mini", max_retries=0)
    planner = Agent(role="planner", goal="Plan trips", backstory="Terse.", llm=model)
    writer = Agent(role="writer", goal="Write plans", backstory="Terse.", llm=model)
    trip = Task(description="Plan a day in Lisbon.", expected_output="A plan.")
    output = Crew(agents=[planner, writer], tasks=[trip], process=Process.hierarchical,
                  manager_llm=model).kickoff()
    print(f"FINAL: {output.raw}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
