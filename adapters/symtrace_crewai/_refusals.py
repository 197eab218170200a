"""CrewAI constructs that cannot be recorded faithfully, refused before anything runs.

Overlapping async tasks on one agent object: CrewAI 1.15 keeps one executor per agent and
refuses a second concurrent `invoke` ("Executor is already running"), which its error
handling then retries. Which attempt fails, and how often the task is retried, depends on
thread timing, not on any boundary value, so no bundle of such a run could replay it. The
crew is refused when it is kicked off, before its first task starts, with the tasks and the
fix named. Two agents with the same role are fine (each has its own executor and lane).
"""

from __future__ import annotations

import json
from typing import Any

from symtrace.frameworks.contract import refuse_construct


def check_crew(crew: Any) -> None:
    """Raise UnsupportedConstruct if two async tasks that overlap share an agent object."""
    from crewai.process import Process
    from crewai.tasks.conditional_task import ConditionalTask

    hierarchical = getattr(crew, "process", None) == Process.hierarchical
    in_flight: dict[int, Any] = {}  # id(executing agent) -> the async task running on it
    for task in getattr(crew, "tasks", None) or ():
        if isinstance(task, ConditionalTask) or not task.async_execution:
            in_flight.clear()  # CrewAI waits for every pending async task here
        if not task.async_execution:
            continue
        agent = crew.manager_agent if hierarchical else task.agent
        key = id(agent) if agent is not None else 0  # hierarchical: the manager, made later
        other = in_flight.get(key)
        if other is not None:
            who = "the hierarchical manager" if hierarchical else repr(task.agent.role)
            refuse_construct(
                f"tasks {_name(other)} and {_name(task)} are async_execution=True and run at "
                f"the same time on one agent object ({who}): CrewAI refuses a second "
                "concurrent run of an agent's executor and retries it, so the run depends on "
                "thread timing and cannot be replayed. Give each async task its own Agent "
                "(the same role is fine) or make one of them synchronous"
            )
        in_flight[key] = task


def _name(task: Any) -> str:
    return repr(task.name or task.description[:40])


DELEGATION_TOOLS = frozenset({"delegate_work_to_coworker", "ask_question_to_coworker"})


def check_parallel_handoffs(tool_calls: list[Any]) -> None:
    """Raise UnsupportedConstruct if one parallel batch hands work to a coworker twice.

    A hierarchical manager (or an agent with allow_delegation) may ask for several hand-offs in
    one response; CrewAI runs the batch on a thread pool. Two of them naming the same coworker
    run that coworker's one executor twice at once: CrewAI lets one win and fails the others
    ("Executor is already running"), by thread timing, so the run cannot be replayed. Refused
    when the response arrives, before any hand-off of the batch runs.
    """
    from crewai.utilities.agent_utils import extract_tool_call_info

    seen: dict[str, str] = {}
    for tool_call in tool_calls:
        info = extract_tool_call_info(tool_call)
        if not info or _tool_key(info[1]) not in DELEGATION_TOOLS:
            continue
        arguments = info[2]
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments)
            except ValueError:
                continue
        coworker = arguments.get("coworker") if isinstance(arguments, dict) else None
        if not isinstance(coworker, str):
            continue
        key = coworker.strip().strip('"').casefold()
        if key in seen:
            refuse_construct(
                f"one response hands work to coworker {coworker!r} twice at once ({seen[key]} "
                f"and {info[1]}): CrewAI runs them in parallel on that coworker's one executor, "
                "lets one win and fails the others ('Executor is already running') by thread "
                "timing, so the run cannot be replayed. Give the manager one hand-off per "
                "coworker per step (or one coworker per sub-task)"
            )
        seen[key] = str(info[1])


def _tool_key(name: Any) -> str:
    return str(name).strip().lower().replace(" ", "_")
