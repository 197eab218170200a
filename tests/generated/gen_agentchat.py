"""Generated AgentChat / Magentic-One programs: a `Program` becomes a real team and runs.

Topologies: one assistant with tools (optionally reflecting on tool use), round-robin and
selector group chats, a swarm with hand-offs, GraphFlow fan-out (concurrent reviewers) and a
conditional loop, and a Magentic-One orchestrator. `concurrent` runs two instances of the team
at once (`asyncio.gather`), each with its own agents.

``shared_agent`` ("one agent, concurrent turns"): one AssistantAgent object given two tasks at
once (two `run`s under `asyncio.gather`). That is what AgentChat allows for one agent: a team
refuses a second concurrent run ("The team is already running, it cannot run again until it is
stopped."), and an agent has no such guard but keeps one model context, so the two runs share
it (each run's requests carry what the other added before them, in the order the framework
ran them).
"""

from __future__ import annotations

import asyncio
import os
import warnings
from typing import Any

from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.base import TaskResult
from autogen_agentchat.conditions import MaxMessageTermination, TextMentionTermination
from autogen_agentchat.teams import (
    DiGraphBuilder,
    GraphFlow,
    MagenticOneGroupChat,
    RoundRobinGroupChat,
    SelectorGroupChat,
    Swarm,
)
from autogen_core.tools import FunctionTool
from autogen_ext.models.openai import OpenAIChatCompletionClient
from gen_spec import AgentSpec, Program, tool_body

warnings.filterwarnings("ignore", message="Pydantic serializer warnings")
ADAPTER = "autogen_agentchat"
MODEL = "gpt-4o-mini-2024-07-18"


def _client() -> OpenAIChatCompletionClient:
    return OpenAIChatCompletionClient(model=MODEL, max_retries=0,
                                      base_url=os.environ["OPENAI_BASE_URL"])


def _agent(program: Program, spec: AgentSpec, client: Any, **kwargs: Any) -> AssistantAgent:
    tools = [FunctionTool(tool_body(t), description=f"Look up {t.kind} facts.", name=t.name)
             for t in spec.tools]
    return AssistantAgent(
        spec.name, model_client=client, tools=tools or None,
        system_message=program.prompt(spec), description=f"The {spec.name}.",
        model_client_stream=program.streaming, **kwargs,
    )


def _stop(program: Program, extra: int = 0) -> Any:
    return TextMentionTermination("TERMINATE") | MaxMessageTermination(program.turns + 1 + extra)


async def _team_run(program: Program, instance: int) -> TaskResult:
    client = _client()
    task = f"Plan a day in {program.task_topic} (team {instance})."
    try:
        topology = program.topology
        if topology == "single":
            agent = _agent(program, program.agents[0], client,
                           reflect_on_tool_use=program.option == "reflect")
            return await agent.run(task=task)
        if topology == "swarm":
            names = [a.name for a in program.agents]
            agents = [_agent(program, a, client, handoffs=[n for n in names if n != a.name])
                      for a in program.agents]
            return await Swarm(agents, termination_condition=_stop(program, 2),
                               max_turns=program.turns + 2).run(task=task)
        agents = [_agent(program, a, client) for a in program.agents]
        if topology == "round_robin":
            team: Any = RoundRobinGroupChat(agents, termination_condition=_stop(program),
                                            max_turns=program.turns)
        elif topology == "selector":
            team = SelectorGroupChat(agents, model_client=client, max_turns=program.turns,
                                     termination_condition=_stop(program),
                                     allow_repeated_speaker=program.option != "no_repeat")
        elif topology == "magentic_one":
            team = MagenticOneGroupChat(agents, model_client=client, max_turns=program.turns + 2,
                                        max_stalls=1)
        elif topology == "graph_fanout":
            drafter, *reviewers, editor = agents
            builder = DiGraphBuilder()
            for agent in agents:
                builder.add_node(agent)
            for reviewer in reviewers:
                builder.add_edge(drafter, reviewer)
                builder.add_edge(reviewer, editor)
            team = GraphFlow(builder.get_participants(), graph=builder.build())
        elif topology == "graph_conditional":
            writer, critic, editor = agents
            builder = DiGraphBuilder()
            for agent in agents:
                builder.add_node(agent)
            builder.add_edge(writer, critic)
            builder.add_edge(critic, editor, condition=lambda m: "TERMINATE" in m.to_text())
            builder.add_edge(critic, writer, condition=lambda m: "TERMINATE" not in m.to_text())
            builder.set_entry_point(writer)
            team = GraphFlow(builder.get_participants(), graph=builder.build(),
                             termination_condition=MaxMessageTermination(program.turns * 2 + 1))
        else:
            raise ValueError(f"unknown AgentChat topology {topology!r}")
        return await team.run(task=task)
    finally:
        await client.close()


def render(message: Any) -> str:
    """One transcript line: source, kind and text; ids and timestamps (uuid4, clock) left out."""
    return f"{getattr(message, 'source', '?')} {type(message).__name__}: {message.to_text()}"


async def _shared_agent(program: Program) -> list[TaskResult]:
    client = _client()
    try:
        agent = _agent(program, program.agents[0], client)
        return list(await asyncio.gather(*(
            agent.run(task=f"Plan a day in {program.task_topic} (request {i}).")
            for i in range(2))))
    finally:
        await client.close()


async def _run(program: Program) -> list[str]:
    instances = 2 if program.concurrent else 1
    if program.topology == "shared_agent":
        results = await _shared_agent(program)
    else:
        results = await asyncio.gather(*(_team_run(program, i) for i in range(instances)))
    lines = []
    for i, result in enumerate(results):
        lines.append(f"== instance {i}: {result.stop_reason}")
        lines.extend(render(m) for m in result.messages)
    return lines


def run(program: Program) -> list[str]:
    return asyncio.run(_run(program))
