"""crewAI-examples "self_evaluation_loop_flow": a verbose crew writes a Shakespearean X post,
a verbose review crew judges it, and a router loops until it is valid.

Source: repository crewAIInc/crewAI-examples, path flows/self_evaluation_loop_flow
(src/self_evaluation_loop_flow/main.py, crews/shakespeare_crew, crews/x_post_review_crew).
Re-typed from memory of that example; commit: unknown.

Changes from the published example:
- the LLM is `LLM(model="gpt-4o-mini")` pointed at OPENAI_BASE_URL (the embedded stub);
- the two crews are built in this file (the published ones are `@CrewBase` classes with
  YAML configs); the review's `CharacterCounterTool` is left out; roles, goals and task
  texts are shortened;
- the valid post is printed, not saved to `x_post.txt`;
- CORPUS_EDIT=1 changes the topic (edited prompt).
"""

import os

from crewai import LLM, Agent, Crew, Process, Task
from crewai.flow.flow import Flow, listen, router, start
from pydantic import BaseModel

TOPIC = "Flying cars" if os.environ.get("CORPUS_EDIT") != "1" else "Electric boats"


class XPostVerification(BaseModel):
    valid: bool
    feedback: str | None


class ShakespeareXPostFlowState(BaseModel):
    x_post: str = ""
    feedback: str | None = None
    valid: bool = False
    retry_count: int = 0


def shakespearean_crew() -> Crew:
    bard = Agent(role="Shakespearean Bard", goal="Write witty X posts in Shakespeare's style",
                 backstory="A bard of the digital age.", llm=LLM(model="gpt-4o-mini",
                                                                  max_retries=0))
    write = Task(description="Write an X post about {topic} in Shakespeare's style. "
                 "Address this feedback if any: {feedback}",
                 expected_output="One X post under 280 characters.", agent=bard)
    return Crew(agents=[bard], tasks=[write], process=Process.sequential, verbose=True)


def x_post_review_crew() -> Crew:
    reviewer = Agent(role="X Post Reviewer", goal="Check that X posts are valid",
                     backstory="An exacting editor.", llm=LLM(model="gpt-4o-mini",
                                                              max_retries=0))
    review = Task(description="Review this X post: {x_post}. It is valid if it uses 'thee' "
                  "or 'thou'.", expected_output="Whether the post is valid, and feedback.",
                  agent=reviewer, output_pydantic=XPostVerification)
    return Crew(agents=[reviewer], tasks=[review], process=Process.sequential, verbose=True)


class ShakespeareXPostFlow(Flow[ShakespeareXPostFlowState]):

    @start("retry")
    def generate_shakespeare_x_post(self):
        print("Generating Shakespearean X post")
        result = shakespearean_crew().kickoff(
            inputs={"topic": TOPIC, "feedback": self.state.feedback})
        print("X post generated", result.raw)
        self.state.x_post = result.raw

    @router(generate_shakespeare_x_post)
    def evaluate_x_post(self):
        if self.state.retry_count > 3:
            return "max_retry_exceeded"
        result = x_post_review_crew().kickoff(inputs={"x_post": self.state.x_post})
        self.state.valid = result["valid"]
        self.state.feedback = result["feedback"]
        print("valid", self.state.valid)
        print("feedback", self.state.feedback)
        self.state.retry_count += 1
        if self.state.valid:
            return "complete"
        return "retry"

    @listen("complete")
    def save_result(self):
        print("X post is valid")
        print("X post:", self.state.x_post)

    @listen("max_retry_exceeded")
    def max_retry_exceeded_exit(self):
        print("Max retry count exceeded")
        print("X post:", self.state.x_post)
        print("Feedback:", self.state.feedback)


def kickoff():
    shakespeare_flow = ShakespeareXPostFlow()
    shakespeare_flow.kickoff()


if __name__ == "__main__":
    kickoff()
