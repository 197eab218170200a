"""CrewAI quickstart crew "latest-ai-development" (verbose, YAML-configured agents and tasks).

Source: repository crewAIInc/crewAI, path docs/en/quickstart.mdx (the project that
`crewai create crew latest-ai-development` generates: src/latest_ai_development/crew.py,
main.py, config/agents.yaml, config/tasks.yaml). Re-typed from memory of that example;
commit: unknown.

Changes from the published example:
- the LLM is `LLM(model="gpt-4o-mini")` pointed at OPENAI_BASE_URL (the embedded stub);
- SerperDevTool (web search) is replaced by the local tool `search_the_internet` with the
  same one-argument signature; it prints what it searches for (as a search tool's log does);
- `current_year` is fixed to 2025 (the published main.py uses `datetime.now().year`);
- `reporting_task` has no `output_file` (the published one writes report.md);
- crew.py and main.py are one file; the YAML files are the published ones.
- CORPUS_EDIT=1 changes the topic (the corpus's "edited prompt" step).
"""

from __future__ import annotations

import os

from crewai import LLM, Agent, Crew, Process, Task
from crewai.project import CrewBase, agent, crew, task
from crewai.tools import tool

TOPIC = "AI LLMs" if os.environ.get("CORPUS_EDIT") != "1" else "AI agents"


@tool("Search the internet")
def search_the_internet(search_query: str) -> str:
    """Search the internet for a query and return the top results."""
    print(f"Searching the internet for: {search_query}")
    return (f"1. {search_query}: small open models rival large ones.\n"
            f"2. {search_query}: context windows passed one million tokens.")


@CrewBase
class LatestAiDevelopmentCrew:
    """LatestAiDevelopment crew"""

    agents_config = "config/agents.yaml"
    tasks_config = "config/tasks.yaml"

    @agent
    def researcher(self) -> Agent:
        return Agent(config=self.agents_config["researcher"], verbose=True,
                     tools=[search_the_internet], llm=LLM(model="gpt-4o-mini", max_retries=0))

    @agent
    def reporting_analyst(self) -> Agent:
        return Agent(config=self.agents_config["reporting_analyst"], verbose=True,
                     llm=LLM(model="gpt-4o-mini", max_retries=0))

    @task
    def research_task(self) -> Task:
        return Task(config=self.tasks_config["research_task"])

    @task
    def reporting_task(self) -> Task:
        return Task(config=self.tasks_config["reporting_task"])

    @crew
    def crew(self) -> Crew:
        """Creates the LatestAiDevelopment crew"""
        return Crew(agents=self.agents, tasks=self.tasks, process=Process.sequential,
                    verbose=True)


def run() -> None:
    inputs = {"topic": TOPIC, "current_year": "2025"}
    result = LatestAiDevelopmentCrew().crew().kickoff(inputs=inputs)
    print(f"FINAL: {result.raw}")


if __name__ == "__main__":
    run()
