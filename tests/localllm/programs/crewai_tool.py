"""CrewAI one-agent crew with one tool, at temperature 0."""

from __future__ import annotations

import os
import sys

for _name, _value in (("CREWAI_DISABLE_TELEMETRY", "true"), ("OTEL_SDK_DISABLED", "true"),
                      ("CREWAI_DISABLE_VERSION_CHECK", "true"),
                      ("CREWAI_TRACING_ENABLED", "false")):
    os.environ.setdefault(_name, _value)

from crewai import LLM, Agent, Crew, Task  # noqa: E402  (after the environment defaults)
from crewai.tools import tool  # noqa: E402
from local_common import MODEL, SYSTEM, TASK, api_key, base_url, summary, weather  # noqa: E402


@tool("get_weather")
def get_weather(city: str) -> str:
    """Current weather of a city."""
    return weather(city)


def main() -> int:
    llm = LLM(model=f"openai/{MODEL}", base_url=base_url(), api_key=api_key(), temperature=0,
              max_retries=0)
    agent = Agent(role="Weather reporter", goal=SYSTEM, backstory="You use tools.",
                  tools=[get_weather], llm=llm, max_iter=2, verbose=False)
    task = Task(description=TASK, expected_output="One sentence about the weather",
                agent=agent)
    output = Crew(agents=[agent], tasks=[task], verbose=False).kickoff()
    messages = [m for t in output.tasks_output for m in (t.messages or [])]
    calls = [(c["function"]["name"], c["function"]["arguments"])
             for m in messages for c in m.get("tool_calls") or []]
    results = sum(1 for m in messages if m.get("role") == "tool")
    summary("crewai", calls, results, output.raw)
    return 0


if __name__ == "__main__":
    sys.exit(main())
