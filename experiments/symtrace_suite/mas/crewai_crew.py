"""CrewAI crew: a researcher with the tools, then a reporter that states the final answer.

The paper's CrewAI shape (workflow-based): two role agents and two sequential tasks; the
report task takes the research task's output as context. Tools are the suite's functions
wrapped with CrewAI's `@tool`.

    python -m symtrace_suite.mas.crewai_crew --task shop-007
"""

from __future__ import annotations

import os
import sys

for _name, _value in (
    ("CREWAI_DISABLE_TELEMETRY", "true"),
    ("OTEL_SDK_DISABLED", "true"),
    ("CREWAI_DISABLE_VERSION_CHECK", "true"),
    ("CREWAI_TRACING_ENABLED", "false"),
):
    os.environ.setdefault(_name, _value)  # no network side channels from a local suite

from crewai import LLM, Agent, Crew, Process, Task  # noqa: E402  (after the defaults above)
from crewai.tools import tool  # noqa: E402

from symtrace_suite.mas.common import ANSWER_INSTRUCTION, Run, main  # noqa: E402
from symtrace_suite.mas.tools import TOOLS  # noqa: E402

MAX_ITER = 12


def build(run: Run) -> Crew:
    # the SDK's own retries of 429/5xx/timeouts stay on, as in a user's program
    llm = LLM(model=run.model, temperature=0, seed=0)
    researcher = Agent(
        role="Researcher",
        goal="Find the data the request needs with the shop, wiki and routing tools",
        backstory="You query the services step by step and never guess.",
        tools=[tool(fn.__name__)(fn) for fn in TOOLS],
        llm=llm,
        max_iter=MAX_ITER,
        allow_delegation=False,
    )
    reporter = Agent(
        role="Reporter",
        goal="State the final answer exactly in the requested format",
        backstory="You turn research notes into the requested structured answer.",
        llm=llm,
        allow_delegation=False,
    )
    research = Task(
        name="research",
        description=f"{run.prompt}\n\n{ANSWER_INSTRUCTION}",
        expected_output="The FINAL ANSWER line with the JSON answer.",
        agent=researcher,
    )
    report = Task(
        name="report",
        description=f"Report the final answer to this request: {run.prompt}\n"
        "Reply with the JSON answer only.",
        expected_output="The JSON answer.",
        agent=reporter,
        context=[research],
    )
    return Crew(agents=[researcher, reporter], tasks=[research, report], process=Process.sequential)


def solve(run: Run) -> str:
    return str(build(run).kickoff().raw)


if __name__ == "__main__":
    sys.exit(main("symtrace_suite.mas.crewai_crew", solve))
