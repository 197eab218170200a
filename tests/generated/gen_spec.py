"""What a generated program is: a small value the strategies draw and Hypothesis shrinks.

A `Program` names its framework and topology and lists its agents (a prompt each, 0-3 tools
each), plus the knobs that change how the framework runs it: streaming, concurrency and the
turn budget. The per-framework builders (gen_agentchat.py, gen_ag2.py, gen_crewai.py) turn it
into a real program of that framework; nothing here imports a framework.

The strategies draw topology first, then the shape it allows, so a shrunk failure is the
simplest program of the same kind (fewer agents, fewer tools, no streaming, fewer turns).
Every agent prompt carries a distinctive sentence, so "the requests that carry agent X's
prompt" is a plain substring test (the perturbation property relies on it).
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from hypothesis import strategies as st

NAMES = ("planner", "researcher", "writer", "critic", "analyst", "editor")
TRAITS = (
    "You check every figure twice.",
    "You prefer short, concrete sentences.",
    "You always cite where a fact comes from.",
    "You look for what could go wrong.",
    "You summarise before you answer.",
    "You ask for the numbers first.",
)
PERTURBATION = " Answer in exactly one sentence."
TOOL_KINDS = ("ok", "raise", "slow")
TOPICS = ("Lisbon", "Porto", "Madeira", "Coimbra")


@dataclass(frozen=True)
class ToolSpec:
    name: str
    kind: str  # ok: returns a value; raise: raises ToolFailure; slow: sleeps, then returns


@dataclass(frozen=True)
class AgentSpec:
    name: str
    trait: int
    tools: tuple[ToolSpec, ...] = ()

    def prompt(self, perturbed: bool = False) -> str:
        text = f"You are the {self.name} of a travel team. {TRAITS[self.trait]}"
        return text + PERTURBATION if perturbed else text


@dataclass(frozen=True)
class Program:
    framework: str
    topology: str
    agents: tuple[AgentSpec, ...]
    streaming: bool = False
    concurrent: bool = False  # run two instances of the program at once (where meaningful)
    turns: int = 3
    option: str = ""  # topology-specific variant (a speaker-selection mode, a summary method)
    task_topic: str = TOPICS[0]
    perturbed: str | None = field(default=None, compare=False)  # agent whose prompt changed

    def prompt(self, agent: AgentSpec) -> str:
        return agent.prompt(perturbed=self.perturbed == agent.name)

    def with_perturbed(self, agent: str | None) -> Program:
        return replace(self, perturbed=agent)

    @property
    def label(self) -> str:
        tools = sum(len(a.tools) for a in self.agents)
        bits = [self.framework, self.topology, self.option, f"{len(self.agents)}ag", f"{tools}t",
                "stream" if self.streaming else "", "conc" if self.concurrent else "",
                f"{self.turns}turns"]
        return "-".join(b for b in bits if b)


class ToolFailure(RuntimeError):
    """What a generated tool of kind `raise` raises (recorded, re-raised as itself on replay)."""


TOOL_RUNS: list[str] = []  # tool bodies append here: replay must leave it empty


def tool_body(spec: ToolSpec) -> Callable[[str], str]:
    """The tool's function, named and documented like a hand-written one."""

    def body(topic: str) -> str:
        TOOL_RUNS.append(f"{spec.name}({topic})")
        if spec.kind == "slow":  # wall-clock jitter: finish order varies run to run
            time.sleep(0.005 + secrets.randbelow(60) / 1000)
        if spec.kind == "raise":
            raise ToolFailure(f"{spec.name} is unavailable for {topic}")
        return f"{spec.name} found {len(topic) * 7 + len(spec.name)} facts about {topic}"

    body.__name__ = spec.name
    body.__qualname__ = spec.name
    body.__doc__ = f"Look up {spec.name.split('_', 1)[-1]} facts about a topic."
    return body


# -- strategies ---------------------------------------------------------------------------------
# `shared_agent`, `gather`, `threads`: "one agent, concurrent turns" (issue 33), one agent
# object serving two requests at once where the framework allows it (AgentChat does not: its
# agents and teams run one `run` at a time; see gen_agentchat.py)
TOPOLOGIES: dict[str, dict[str, tuple[str, ...]]] = {
    "autogen_agentchat": {
        "single": ("", "reflect"),
        "round_robin": ("",),
        "selector": ("", "no_repeat"),
        "swarm": ("",),
        "graph_fanout": ("",),
        "graph_conditional": ("",),
        "magentic_one": ("",),
        "shared_agent": ("",),
    },
    "ag2": {
        "two_agent": ("sync", "async"),
        "groupchat": ("auto", "random", "round_robin"),
        "nested": ("last_msg", "reflection_with_llm"),
        "sequence": ("last_msg", "reflection_with_llm"),
        "chats_async": ("last_msg", "reflection_with_llm"),
        "shared_agent": ("",),
    },
    "crewai": {
        "sequential": ("",),
        "hierarchical": ("",),
        "async_tasks": ("",),
        "flow": ("",),
        "react": ("",),
        "shared_agent": ("akickoff", "for_each"),
    },
    "ag2v1": {  # AG2 1.x (module `ag2`): the second environment only
        "ask": ("once", "followup"),
        "delegation": ("star", "chain"),
        "subtasks": ("parallel", "bounded"),
        "hub_consulting": ("",),
        "hub_delegate": ("",),
        "shared_agent": ("ask", "run"),
    },
    "plain": {  # the openai SDK under `symtrace.agent` blocks, no framework (gen_plain.py)
        "gather": ("",),
        "threads": ("",),
    },
}
# (min, max) agents per topology; tools are drawn per agent within the framework's limits
AGENT_COUNTS = {
    "single": (1, 1), "two_agent": (1, 1), "round_robin": (2, 3), "selector": (2, 3),
    "swarm": (2, 3), "graph_fanout": (3, 4), "graph_conditional": (3, 3),
    "magentic_one": (2, 2), "groupchat": (2, 3), "nested": (2, 2), "sequence": (2, 3),
    "chats_async": (2, 3), "sequential": (1, 3), "hierarchical": (2, 2), "async_tasks": (3, 3),
    "flow": (3, 3), "react": (1, 2),
    "ask": (1, 1), "delegation": (2, 3), "subtasks": (1, 1), "hub_consulting": (2, 2),
    "hub_delegate": (2, 3),
    "shared_agent": (1, 1), "gather": (1, 2), "threads": (1, 2),
}
# topologies whose programs run concurrent parts by construction
CONCURRENT_BY_SHAPE = frozenset({"graph_fanout", "chats_async", "async_tasks", "flow",
                                 "subtasks", "shared_agent", "gather", "threads"})
# where running two instances at once is offered
CONCURRENT_OPTION = frozenset({"single", "round_robin", "two_agent", "ask", "delegation"})
# topologies whose tools are not drawn (the framework's own tools only, or none that fit)
NO_TOOLS = frozenset({"graph_conditional", "hierarchical"})


@st.composite
def tools_for(draw: st.DrawFn, agent: str, allowed: bool) -> tuple[ToolSpec, ...]:
    if not allowed:
        return ()
    count = draw(st.integers(0, 3))
    kinds = [draw(st.sampled_from(TOOL_KINDS)) for _ in range(count)]
    return tuple(ToolSpec(f"{agent}_{k}_{i}", k) for i, k in enumerate(kinds))


@st.composite
def programs(draw: st.DrawFn, framework: str,
             topologies: tuple[str, ...] | None = None) -> Program:
    table = TOPOLOGIES[framework]
    topology = draw(st.sampled_from(topologies or tuple(table)))
    option = draw(st.sampled_from(table[topology]))
    low, high = AGENT_COUNTS[topology]
    count = draw(st.integers(low, high))
    names = NAMES[:count]
    agents = tuple(
        AgentSpec(name, draw(st.integers(0, len(TRAITS) - 1)),
                  draw(tools_for(name, topology not in NO_TOOLS)))
        for name in names
    )
    return Program(
        framework=framework,
        topology=topology,
        agents=agents,
        streaming=draw(st.booleans()),
        concurrent=topology in CONCURRENT_OPTION and draw(st.booleans()),
        turns=draw(st.integers(2, 4)),
        option=option,
        task_topic=draw(st.sampled_from(TOPICS)),
    )
