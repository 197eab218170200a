"""Generated CrewAI programs: a `Program` becomes a real crew (or flow) and runs.

Topologies: sequential crews (each task's output is the next one's context), a hierarchical
crew (CrewAI's manager delegating to coworkers), overlapping `async_execution` tasks joined
by a final task, a Flow whose two listeners run crews at the same time, and the ReAct text
path (an `o1-…` model name: no function calling; `Thought/Action/Final Answer` text).

``shared_agent`` ("one agent, concurrent turns"): one crew's work for two requests at once.
CrewAI runs one task at a time per agent object (a second concurrent run of its executor is
"Executor is already running", refused at record time, exit 94), so the concurrent construct
is one crew *spec* run twice at once: ``akickoff``, two crews built from it under
`asyncio.gather(crew.akickoff(...))`; ``for_each``, `kickoff_for_each_async` on one crew
(CrewAI copies the crew, agents included, per input and runs the copies in threads). The
crews' agents are on lanes of their own (`crew@2/<role>` for the second crew kicked off).
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

for _name, _value in (("CREWAI_DISABLE_TELEMETRY", "true"), ("OTEL_SDK_DISABLED", "true"),
                      ("CREWAI_DISABLE_VERSION_CHECK", "true"),
                      ("CREWAI_TRACING_ENABLED", "false")):
    os.environ.setdefault(_name, _value)

from crewai import LLM, Agent, Crew, Process, Task  # noqa: E402
from crewai.flow.flow import Flow, and_, listen, start  # noqa: E402
from crewai.tools import tool  # noqa: E402
from gen_spec import AgentSpec, Program, tool_body  # noqa: E402

ADAPTER = "crewai"
MODEL = "gpt-4o-mini"
REACT_MODEL = "o1-mini"  # CrewAI: no function calling for o1 models -> the ReAct text path


def _llm(program: Program) -> LLM:
    model = REACT_MODEL if program.topology == "react" else MODEL
    return LLM(model=model, max_retries=0, stream=program.streaming)


def _agent(program: Program, spec: AgentSpec, **kwargs: Any) -> Agent:
    tools = [tool(t.name)(tool_body(t)) for t in spec.tools]
    return Agent(role=spec.name, goal=f"Help plan a day in {program.task_topic}",
                 backstory=program.prompt(spec), llm=_llm(program), tools=tools,
                 max_iter=program.turns + 1, **kwargs)


def _task(program: Program, agent: Agent | None, index: int, **kwargs: Any) -> Task:
    return Task(name=f"step_{index}", agent=agent,
                description=f"Step {index + 1} of planning a day in {program.task_topic}.",
                expected_output="A few sentences.", **kwargs)


def _lines(output: Any) -> list[str]:
    lines = []
    for task in getattr(output, "tasks_output", []):
        lines.append(f"== {task.name} by {task.agent}: {task.raw}")
        for message in task.messages or []:
            calls = [(c.get("function") or {}).get("name") for c in
                     message.get("tool_calls") or []]
            lines.append(f"  {message.get('role')}: {message.get('content')} {calls}")
    lines.append(f"FINAL: {getattr(output, 'raw', output)}")
    return lines


_FLOW_PROGRAM: list[Program] = []  # the program GenFlow runs (a Flow takes no extra fields)


class GenFlow(Flow):  # type: ignore[type-arg]
    """Two crews at once (the @listen steps), then one that reads both results."""

    @property
    def program(self) -> Program:
        return _FLOW_PROGRAM[-1]

    @start()
    def begin(self) -> str:
        return self.program.task_topic

    @listen(begin)
    def left(self, topic: str) -> str:
        self.state["left"] = self._crew(0).kickoff().raw
        return self.state["left"]

    @listen(begin)
    def right(self, topic: str) -> str:
        self.state["right"] = self._crew(1).kickoff().raw
        return self.state["right"]

    @listen(and_(left, right))
    def combine(self) -> Any:
        crew = self._crew(2, extra=" Combine: {left} / {right}")
        return crew.kickoff(inputs={"left": self.state["left"], "right": self.state["right"]})

    def _crew(self, index: int, extra: str = "") -> Crew:
        agent = _agent(self.program, self.program.agents[index])
        task = Task(name=f"part_{index}", agent=agent, expected_output="One sentence.",
                    description=f"Part {index + 1} for {self.program.task_topic}.{extra}")
        return Crew(agents=[agent], tasks=[task])


def _request_crew(program: Program) -> Crew:
    agents = [_agent(program, spec) for spec in program.agents]
    task = Task(name="request", agent=agents[0], expected_output="A few sentences.",
                description=f"Plan a day in {program.task_topic} (request {{request}}).")
    return Crew(agents=agents, tasks=[task])


def _shared_agent(program: Program) -> list[str]:
    inputs = [{"request": str(i)} for i in range(2)]
    if program.option == "for_each":
        outputs = asyncio.run(_request_crew(program).kickoff_for_each_async(inputs=inputs))
    else:
        crews = [_request_crew(program) for _ in inputs]  # built in order: crew, crew@2

        async def both() -> list[Any]:
            return list(await asyncio.gather(*(crew.akickoff(inputs=i)
                                               for crew, i in zip(crews, inputs, strict=True))))
        outputs = asyncio.run(both())
    return [line for output in outputs for line in _lines(output)]


def run(program: Program) -> list[str]:
    topology = program.topology
    if topology == "shared_agent":
        return _shared_agent(program)
    if topology == "flow":
        _FLOW_PROGRAM[:] = [program]
        return _lines(GenFlow().kickoff())
    if topology in ("sequential", "react"):
        agents = [_agent(program, spec) for spec in program.agents]
        tasks = [_task(program, agent, i) for i, agent in enumerate(agents)]
        crew = Crew(agents=agents, tasks=tasks)
    elif topology == "hierarchical":
        agents = [_agent(program, spec) for spec in program.agents]
        crew = Crew(agents=agents, tasks=[_task(program, None, 0)],
                    process=Process.hierarchical, manager_llm=_llm(program))
    elif topology == "async_tasks":
        agents = [_agent(program, spec) for spec in program.agents]
        first = [_task(program, agents[i], i, async_execution=True) for i in (0, 1)]
        tasks = [*first, _task(program, agents[2], 2, context=first)]
        crew = Crew(agents=agents, tasks=tasks)
    else:
        raise ValueError(f"unknown CrewAI topology {topology!r}")
    return _lines(crew.kickoff())
