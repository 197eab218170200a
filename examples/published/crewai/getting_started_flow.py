"""CrewAI docs "Flows" getting-started example: a flow that picks a city, then a fun fact.

Source: repository crewAIInc/crewAI, path docs/en/concepts/flows.mdx (section "Getting
Started": `ExampleFlow` with `@start() generate_city` and `@listen(generate_city)
generate_fun_fact`, each asking the model once). Re-typed from memory of that example;
commit: unknown.

Changes from the published example:
- the model is `crewai.LLM(model="gpt-4o-mini")` pointed at OPENAI_BASE_URL (the embedded
  stub) and called with `LLM.call`; the published example calls `litellm.completion`
  (litellm is not installed with CrewAI 1.15);
- CORPUS_EDIT=1 asks for a city in Asia (edited prompt).
"""

import os

from crewai import LLM
from crewai.flow.flow import Flow, listen, start


class ExampleFlow(Flow):
    model = "gpt-4o-mini"

    @start()
    def generate_city(self):
        print("Starting flow")
        # Each flow state automatically gets a unique ID
        print(f"Flow State ID: {self.state['id']}")

        region = "Asia" if os.environ.get("CORPUS_EDIT") == "1" else "the world"
        random_city = LLM(model=self.model, max_retries=0).call(
            [{"role": "user", "content": f"Return the name of a random city in {region}."}])
        print(f"Random City: {random_city}")

        # Store the city in our state
        self.state["city"] = random_city
        return random_city

    @listen(generate_city)
    def generate_fun_fact(self, random_city):
        fun_fact = LLM(model=self.model, max_retries=0).call(
            [{"role": "user", "content": f"Tell me a fun fact about {random_city}"}])

        # Store the fun fact in our state
        self.state["fun_fact"] = fun_fact
        return fun_fact


flow = ExampleFlow()
result = flow.kickoff()

print(f"Generated fun fact: {result}")
