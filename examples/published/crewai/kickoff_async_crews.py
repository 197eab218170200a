"""CrewAI docs "Kickoff Crew Asynchronously", example "Multiple Asynchronous Crew
Executions": two crews kicked off concurrently with `kickoff_async` under `asyncio.gather`.

Source: repository crewAIInc/crewAI, path docs/en/learn/kickoff-async.mdx (the
`async_multiple_crews` example). Re-typed from memory of that example; commit: unknown.

Changes from the published example:
- the LLM is `LLM(model="gpt-4o-mini")` pointed at OPENAI_BASE_URL (the embedded stub);
- `allow_code_execution=True` is dropped (it needs Docker; the model answers directly);
- each crew has its own agent of the same role: the published example shares one `Agent`
  between the two crews, which CrewAI 1.15 itself rejects when they run at once
  ("RuntimeError: Executor is already running. Cannot invoke the same executor instance
  concurrently."); two same-role agents of concurrent crews are the case of interest
  anyway (each on its own lane, `crew@n/<role>`);
- the crews are `verbose=True` (their panels are printed by concurrent threads);
- CORPUS_EDIT=1 changes the second crew's inputs (edited prompt).
"""

import asyncio
import os

from crewai import LLM, Agent, Crew, Task

llm = LLM(model="gpt-4o-mini", max_retries=0)



# Create an agent (one per crew: see the header)
def coding_agent() -> Agent:
    return Agent(
        role="Python Data Analyst",
        goal="Analyze data and provide insights using Python",
        backstory="You are an experienced data analyst with strong Python skills.",
        llm=llm,
    )


agent_1, agent_2 = coding_agent(), coding_agent()

# Create tasks
task_1 = Task(
    description="Analyze the first dataset and calculate the average age of participants. Ages: {ages}",
    agent=agent_1,
    expected_output="The average age of the participants."
)

task_2 = Task(
    description="Analyze the second dataset and calculate the average age of participants. Ages: {ages}",
    agent=agent_2,
    expected_output="The average age of the participants."
)

# Create two crews and add tasks
crew_1 = Crew(agents=[agent_1], tasks=[task_1], verbose=True)
crew_2 = Crew(agents=[agent_2], tasks=[task_2], verbose=True)


# Async function to kickoff multiple crews asynchronously and wait for all to finish
async def async_multiple_crews():
    result_1 = crew_1.kickoff_async(inputs={"ages": [25, 30, 35, 40, 45]})
    result_2 = crew_2.kickoff_async(inputs={"ages": [20, 22, 24, 28, 30]
                                            if os.environ.get("CORPUS_EDIT") != "1"
                                            else [20, 22, 24, 28, 31]})

    # Wait for both crews to finish
    results = await asyncio.gather(result_1, result_2)

    for i, result in enumerate(results, 1):
        print(f"Crew {i} Result:", result)


asyncio.run(async_multiple_crews())
