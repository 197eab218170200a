"""CrewAI docs "Create Custom Tools": a `BaseTool` subclass with an args schema, used by a
verbose crew.

Source: repository crewAIInc/crewAI, path docs/en/learn/create-custom-tools.mdx (the
`MyCustomTool(BaseTool)` with `MyToolInput` example), used by one agent in a sequential
crew as in docs/en/concepts/tools.mdx. Re-typed from memory of those examples; commit:
unknown.

Changes from the published example:
- the LLM is `LLM(model="gpt-4o-mini")` pointed at OPENAI_BASE_URL (the embedded stub);
- `_run` returns a dict whose keys are not in sorted order (the docs' returns a string);
  CrewAI shows the model `str()` of it, so a replay must serve it in its own key order;
  it also prints what it does;
- CORPUS_EDIT=1 changes the task (edited prompt).
"""

import os

from crewai import LLM, Agent, Crew, Task
from crewai.tools import BaseTool
from pydantic import BaseModel, Field


class MyToolInput(BaseModel):
    """Input schema for MyCustomTool."""

    argument: str = Field(..., description="Description of the argument.")


class MyCustomTool(BaseTool):
    name: str = "Name of my tool"
    description: str = "What this tool does. It's vital for effective utilization."
    args_schema: type[BaseModel] = MyToolInput

    def _run(self, argument: str) -> dict:
        # Your tool's logic here
        print(f"MyCustomTool: looking up {argument!r}")
        return {"query": argument, "score": 1.0, "matches": ["Belem Tower", "Alfama"],
                "best": {"name": "Belem Tower", "open": True}}


llm = LLM(model="gpt-4o-mini", max_retries=0)
researcher = Agent(role="Researcher", goal="Find landmarks", backstory="You use your tool.",
                   tools=[MyCustomTool()], llm=llm, verbose=True)
task = Task(
    description=("Find two landmarks in Lisbon." if os.environ.get("CORPUS_EDIT") != "1"
                 else "Find two landmarks in Porto."),
    expected_output="Two landmark names.", agent=researcher)
result = Crew(agents=[researcher], tasks=[task], verbose=True).kickoff()
print(f"FINAL: {result.raw}")
